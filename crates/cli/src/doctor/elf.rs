//! What `aar doctor` needs to know about an ELF file, read with the `object` crate: class and
//! machine, whether it has an interpreter (dynamically linked), and its dynamic section (needed
//! libraries, RPATH/RUNPATH, soname); and the libraries the loader would find for a program,
//! followed transitively the way glibc's ld.so searches (a reasonable subset of it: DT_RPATH,
//! LD_LIBRARY_PATH, DT_RUNPATH, /etc/ld.so.cache through `ldconfig -p`, the default folders;
//! `$ORIGIN` and `$LIB` expanded; candidates of another class or machine skipped).

use object::elf;
use object::read::elf::{Dyn, FileHeader, ProgramHeader, Sym};
use object::read::ReadCache;
use object::{Endianness, FileKind, ReadRef};
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};

/// One ELF file, as far as the doctor cares.
#[derive(Clone, Debug)]
pub struct Elf {
    pub is_64: bool,
    pub machine: u16,
    pub e_type: u16,
    /// PT_INTERP: the dynamic loader this program asks for.
    pub interpreter: Option<String>,
    /// Has a dynamic section (a static PIE has one, without an interpreter).
    pub dynamic: bool,
    pub needed: Vec<String>,
    pub rpath: Vec<String>,
    pub runpath: Vec<String>,
    pub soname: Option<String>,
    /// DT_FLAGS_1 has DF_1_PIE: a position-independent executable, not a library.
    pub pie: bool,
}

impl Elf {
    /// "ELF 64-bit executable, x86-64" and the like.
    pub fn describe(&self) -> String {
        let kind = match (self.e_type, self.interpreter.is_some(), self.pie) {
            (elf::ET_EXEC, _, _) => "executable",
            (elf::ET_DYN, true, _) | (elf::ET_DYN, false, true) => "position-independent executable",
            (elf::ET_DYN, false, false) => "shared library",
            (elf::ET_REL, _, _) => "relocatable object (.o)",
            (elf::ET_CORE, _, _) => "core dump",
            _ => "file of unknown type",
        };
        format!("ELF {}-bit {kind}, {}", if self.is_64 { 64 } else { 32 }, machine_name(self.machine))
    }

    /// An executable the kernel can start (not a library, object or core file).
    pub fn is_program(&self) -> bool {
        self.e_type == elf::ET_EXEC || (self.e_type == elf::ET_DYN && (self.interpreter.is_some() || self.pie))
    }

    /// Whether the loader would accept `other` as a dependency of this file.
    pub fn compatible(&self, other: &Elf) -> bool {
        self.is_64 == other.is_64 && self.machine == other.machine
    }
}

pub fn machine_name(machine: u16) -> String {
    match machine {
        elf::EM_X86_64 => "x86-64".into(),
        elf::EM_386 => "i386".into(),
        elf::EM_AARCH64 => "AArch64".into(),
        elf::EM_PPC64 => "PowerPC64".into(),
        elf::EM_RISCV => "RISC-V".into(),
        other => format!("machine {other}"),
    }
}

/// Why a file is not one we can read; the text of the last three completes `PROGRAM is ...`.
#[derive(Debug, thiserror::Error)]
pub enum NotElf {
    #[error("unreadable ({0})")]
    Unreadable(std::io::Error),
    /// A `#!` script, with its interpreter line.
    #[error("a script ({0})")]
    Script(String),
    #[error("not ELF but {0:?}")]
    OtherFormat(FileKind),
    #[error("not an ELF file (unknown format)")]
    UnknownFormat,
    #[error("a damaged ELF file ({0})")]
    Damaged(object::Error),
    #[error("not a regular file (a FIFO, a device or a socket)")]
    NotRegular,
}

/// The file at `path`, read only where the headers point (a library of a program's closure can
/// be hundreds of megabytes; the doctor needs its headers, dynamic section and symbols). Opened
/// without blocking and read only if it is a regular file: a FIFO would block the doctor at its
/// opening (until a writer comes), a device never end.
fn open(path: &Path) -> Result<ReadCache<std::fs::File>, NotElf> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(NotElf::Unreadable)?;
    match file.metadata() {
        Ok(m) if m.is_file() => Ok(ReadCache::new(file)),
        Ok(_) => Err(NotElf::NotRegular),
        Err(e) => Err(NotElf::Unreadable(e)),
    }
}

pub fn read(path: &Path) -> Result<Elf, NotElf> {
    let cache = open(path)?;
    let data = &cache;
    if data.read_bytes_at(0, 2) == Ok(b"#!") {
        // The interpreter line: at most a page of it.
        let size = data.len().map_or(0, |n| n.min(4096));
        let head = data.read_bytes_at(0, size).unwrap_or_default();
        let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
        return Err(NotElf::Script(String::from_utf8_lossy(line).trim().to_string()));
    }
    match FileKind::parse(data) {
        Ok(FileKind::Elf32) => parse::<elf::FileHeader32<Endianness>, _>(data),
        Ok(FileKind::Elf64) => parse::<elf::FileHeader64<Endianness>, _>(data),
        Ok(kind) => Err(NotElf::OtherFormat(kind)),
        Err(_) => Err(NotElf::UnknownFormat),
    }
}

fn parse<'data, H: FileHeader<Endian = Endianness>, R: ReadRef<'data>>(data: R) -> Result<Elf, NotElf> {
    let bad = NotElf::Damaged;
    let header = H::parse(data).map_err(bad)?;
    let endian = header.endian().map_err(bad)?;
    let mut info = Elf {
        is_64: header.is_type_64(),
        machine: header.e_machine(endian),
        e_type: header.e_type(endian),
        interpreter: None,
        dynamic: false,
        needed: Vec::new(),
        rpath: Vec::new(),
        runpath: Vec::new(),
        soname: None,
        pie: false,
    };
    for ph in header.program_headers(endian, data).map_err(bad)? {
        if let Some(interp) = ph.interpreter(endian, data).map_err(bad)? {
            info.interpreter = Some(String::from_utf8_lossy(interp).into_owned());
        }
        if ph.p_type(endian) == elf::PT_DYNAMIC {
            info.dynamic = true;
        }
    }
    let sections = header.sections(endian, data).map_err(bad)?;
    // The dynamic section and the index of its string table (its sh_link).
    if let Some((dyns, strtab)) = sections.dynamic(endian, data).map_err(bad)? {
        info.dynamic = true;
        let strings = sections.strings(endian, data, strtab).map_err(bad)?;
        for d in dyns {
            let Some(tag) = d.tag32(endian) else { continue };
            // `Dyn::string` takes a table of an in-memory file; this one reads from the cache.
            let text = || {
                let offset = u32::try_from(d.d_val(endian).into()).ok()?;
                strings.get(offset).map(|s| String::from_utf8_lossy(s).into_owned()).ok()
            };
            match tag {
                elf::DT_NEEDED => info.needed.extend(text()),
                elf::DT_SONAME => info.soname = text(),
                elf::DT_RPATH => info.rpath.extend(text().iter().flat_map(|t| split_path(t))),
                elf::DT_RUNPATH => info.runpath.extend(text().iter().flat_map(|t| split_path(t))),
                elf::DT_FLAGS_1 => info.pie |= d.val32(endian).is_some_and(|v| v & elf::DF_1_PIE != 0),
                _ => {}
            }
        }
    }
    Ok(info)
}

/// The undefined dynamic symbols of the ELF file at `path` (what it takes from other libraries at
/// run time) whose names are in `names`.
pub fn imports(path: &Path, names: &HashSet<String>) -> Result<HashSet<String>, NotElf> {
    symbols(path, names, false, &[elf::SHT_DYNSYM])
}

/// The dynamic symbols the ELF file at `path` defines (what it gives other objects at run time,
/// and takes from those after it in the loader's search) whose names are in `names`.
pub fn definitions(path: &Path, names: &HashSet<String>) -> Result<HashSet<String>, NotElf> {
    symbols(path, names, true, &[elf::SHT_DYNSYM])
}

/// The functions whose code is in the ELF file at `path` (linked in from an archive, exported or
/// not: its symbol table too, unless stripped) whose names are in `names`.
pub fn linked_in(path: &Path, names: &HashSet<String>) -> Result<HashSet<String>, NotElf> {
    symbols(path, names, true, &[elf::SHT_DYNSYM, elf::SHT_SYMTAB])
}

fn symbols(path: &Path, names: &HashSet<String>, defined: bool, tables: &[u32]) -> Result<HashSet<String>, NotElf> {
    let cache = open(path)?;
    let data = &cache;
    match FileKind::parse(data) {
        Ok(FileKind::Elf32) => symbols_of::<elf::FileHeader32<Endianness>, _>(data, names, defined, tables),
        Ok(FileKind::Elf64) => symbols_of::<elf::FileHeader64<Endianness>, _>(data, names, defined, tables),
        Ok(kind) => Err(NotElf::OtherFormat(kind)),
        Err(_) => Err(NotElf::UnknownFormat),
    }
}

fn symbols_of<'data, H: FileHeader<Endian = Endianness>, R: ReadRef<'data>>(
    data: R,
    names: &HashSet<String>,
    defined: bool,
    tables: &[u32],
) -> Result<HashSet<String>, NotElf> {
    let bad = NotElf::Damaged;
    let header = H::parse(data).map_err(bad)?;
    let endian = header.endian().map_err(bad)?;
    let sections = header.sections(endian, data).map_err(bad)?;
    let mut found = HashSet::new();
    for &table in tables {
        let symbols = sections.symbols(endian, data, table).map_err(bad)?;
        for sym in symbols.iter().filter(|s| s.is_undefined(endian) != defined) {
            let name = String::from_utf8_lossy(sym.name(endian, symbols.strings()).map_err(bad)?);
            if names.contains(name.as_ref()) {
                found.insert(name.into_owned());
            }
        }
    }
    Ok(found)
}

fn split_path(list: &str) -> Vec<String> {
    list.split([':', ';']).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

/// One library of a program's dependency tree.
#[derive(Clone, Debug)]
pub struct Library {
    /// The DT_NEEDED name.
    pub name: String,
    /// Where the loader would find it; `None`: nowhere in this environment.
    pub path: Option<PathBuf>,
    /// The file that needs it (the program, or another library).
    pub needed_by: String,
}

/// The libraries a program needs, transitively, as the loader would find them here.
pub struct Closure {
    pub libraries: Vec<Library>,
    /// The search went no further (a pathological tree).
    pub truncated: bool,
}

impl Closure {
    /// The first library whose file name starts with one of `prefixes` (e.g. `libugni.so`).
    pub fn find(&self, prefixes: &[&str]) -> Vec<&Library> {
        self.libraries.iter().filter(|l| prefixes.iter().any(|p| base_name(&l.name).starts_with(p))).collect()
    }

    pub fn missing(&self) -> Vec<&Library> {
        self.libraries.iter().filter(|l| l.path.is_none()).collect()
    }
}

pub fn base_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// At most this many libraries are followed.
const MAX_LIBRARIES: usize = 1000;

/// The dependency tree of `program` (already read as `exe`), breadth first as ld.so loads it.
pub fn closure(program: &Path, exe: &Elf, env_library_path: Option<&str>) -> Closure {
    let search = Search::new(env_library_path);
    let mut libraries = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut queue: VecDeque<(PathBuf, Elf)> = VecDeque::from([(program.to_path_buf(), exe.clone())]);
    let mut truncated = false;
    while let Some((path, file)) = queue.pop_front() {
        for name in &file.needed {
            if !seen.insert(name.clone()) {
                continue;
            }
            if libraries.len() >= MAX_LIBRARIES {
                truncated = true;
                break;
            }
            let found = search.find(name, &path, &file, exe);
            let needed_by = path.display().to_string();
            if let Some((lib_path, lib)) = found {
                if let Some(soname) = &lib.soname {
                    seen.insert(soname.clone());
                }
                libraries.push(Library { name: name.clone(), path: Some(lib_path.clone()), needed_by });
                queue.push_back((lib_path, lib));
            } else {
                libraries.push(Library { name: name.clone(), path: None, needed_by });
            }
        }
    }
    Closure { libraries, truncated }
}

struct Search {
    ld_library_path: Vec<String>,
    /// soname → paths, from `ldconfig -p` (the loader's cache).
    cache: HashMap<String, Vec<PathBuf>>,
}

impl Search {
    fn new(env_library_path: Option<&str>) -> Search {
        Search { ld_library_path: env_library_path.map(split_path).unwrap_or_default(), cache: ld_so_cache() }
    }

    /// Where ld.so would find `name`, needed by `from` (at `from_path`), for the program `exe`.
    fn find(&self, name: &str, from_path: &Path, from: &Elf, exe: &Elf) -> Option<(PathBuf, Elf)> {
        let accept = |p: PathBuf| -> Option<(PathBuf, Elf)> {
            let elf = read(&p).ok()?;
            exe.compatible(&elf).then_some((p, elf))
        };
        if name.contains('/') {
            return accept(PathBuf::from(name));
        }
        let origin = from_path.parent().map(|p| p.display().to_string()).unwrap_or_else(|| ".".into());
        let lib = if exe.is_64 { "lib64" } else { "lib" };
        let expand = |dir: &str| {
            dir.replace("${ORIGIN}", &origin).replace("$ORIGIN", &origin).replace("${LIB}", lib).replace("$LIB", lib)
        };
        let in_dirs = |dirs: &[String]| dirs.iter().find_map(|d| accept(Path::new(&expand(d)).join(name)));
        // DT_RPATH counts only when there is no DT_RUNPATH (glibc also walks the loaders' RPATHs;
        // the program's is the one that matters in practice).
        if from.runpath.is_empty() {
            if let Some(found) = in_dirs(&from.rpath) {
                return Some(found);
            }
            if exe.runpath.is_empty() {
                if let Some(found) = in_dirs(&exe.rpath) {
                    return Some(found);
                }
            }
        }
        in_dirs(&self.ld_library_path)
            .or_else(|| in_dirs(&from.runpath))
            .or_else(|| self.cache.get(name).and_then(|paths| paths.iter().find_map(|p| accept(p.clone()))))
            .or_else(|| {
                let defaults: Vec<String> = default_dirs(exe).iter().map(|s| s.to_string()).collect();
                in_dirs(&defaults)
            })
    }
}

fn default_dirs(exe: &Elf) -> &'static [&'static str] {
    match (exe.is_64, exe.machine) {
        (true, elf::EM_X86_64) => &["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"],
        (true, elf::EM_AARCH64) => &["/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64"],
        (true, _) => &["/lib64", "/usr/lib64", "/lib", "/usr/lib"],
        (false, _) => &["/lib/i386-linux-gnu", "/usr/lib/i386-linux-gnu", "/lib", "/usr/lib"],
    }
}

/// The loader's cache as `ldconfig -p` prints it: `\tlibpapi.so.7.0 (libc6,x86-64) => /path`.
fn ld_so_cache() -> HashMap<String, Vec<PathBuf>> {
    let mut cache: HashMap<String, Vec<PathBuf>> = HashMap::new();
    let output = ["/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"]
        .iter()
        .find_map(|cmd| std::process::Command::new(cmd).arg("-p").output().ok().filter(|o| o.status.success()));
    let Some(output) = output else { return cache };
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Some((left, path)) = line.split_once(" => ") else { continue };
        let Some(name) = left.split_whitespace().next() else { continue };
        cache.entry(name.to_string()).or_default().push(PathBuf::from(path.trim()));
    }
    cache
}
