//! A job's identity and what it owns: the job id, the uGNI protection tag and cookie, the job
//! folder the emulator keeps its shared state in, and each rank's environment, as on a Cray.

use aar_abi::FIRST_NIC_ADDR;
use pmi::mapping::ProcessMapping;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// Where job folders go: shared memory, so the emulator's shared state never touches a disk.
const SHM: &str = "/dev/shm";

/// Process ids stay below 2^22 (Linux's largest pid_max): job ids of one launcher pid, pid + k *
/// 2^22, never collide with another launcher's.
const PID_SPAN: u64 = 1 << 22;

/// The job ids one launcher pid may take (pid + k * [`PID_SPAN`]), and so job folders it tries.
const JOB_IDS: u64 = 64;

/// The job folder `AAR_EMU_JOB_DIR` (mode 0700), removed with everything in it when dropped.
pub struct JobDir {
    pub path: PathBuf,
}

impl Drop for JobDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                say!("aar run: cannot remove the job folder {}: {e}; remove it by hand.", self.path.display());
            }
        }
    }
}

/// Remove the job folders of launchers that no longer run (killed by SIGKILL, say, they could
/// not clean up): the pid in a folder's job id is gone, or is another process's, one that started
/// after the folder last changed. Nothing is removed when /proc cannot tell.
fn remove_stale() {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(SHM) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(id) = name.to_str().and_then(|n| n.strip_prefix("aar-job-")).and_then(|i| i.parse::<u64>().ok())
        else {
            continue;
        };
        let pid = id % PID_SPAN;
        if may_be_its_launcher(pid, &entry.path()) {
            continue;
        }
        if std::fs::remove_dir_all(entry.path()).is_ok() {
            say!(
                "aar run: removed {}, left behind by an aar run (pid {pid}) that no longer runs.",
                entry.path().display()
            );
        }
    }
}

/// Whether process `pid` runs and may be the launcher that made `folder`: a process that started
/// well after the folder last changed got the pid of a launcher gone since. (The slack covers a
/// wall clock set since: a live launcher's folder must never be taken for a stale one.)
fn may_be_its_launcher(pid: u64, folder: &Path) -> bool {
    let runs = Path::new("/proc").join(pid.to_string()).exists();
    let (Some(started), Ok(changed)) = (start_time(pid), std::fs::metadata(folder).and_then(|m| m.modified())) else {
        return runs;
    };
    runs && started <= changed + std::time::Duration::from_secs(60)
}

/// When process `pid` started (wall clock), from /proc: its start in clock ticks after boot (the
/// 22nd field of its stat) and the boot time.
fn start_time(pid: u64) -> Option<std::time::SystemTime> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let ticks: u64 = stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()?;
    let boot: u64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // SAFETY: sysconf only reads a system setting.
    let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).ok().filter(|&hz| hz > 0)?;
    let since_epoch = std::time::Duration::from_secs(boot) + std::time::Duration::from_millis(ticks * 1000 / hz);
    Some(std::time::UNIX_EPOCH + since_epoch)
}

/// The node table of the job's nodes (`topology` in the job folder, which libaar.so reads when
/// `AAR_TOPOLOGY` is unset): node n, NIC address `FIRST_NIC_ADDR + n`, is placed as on an Aries
/// machine filled in order, 4 nodes per router and 96 routers per group. Lines: `NIC GROUP ROUTER`.
fn write_topology(dir: &Path, mapping: &ProcessMapping, size: usize) -> Result<(), String> {
    use aar_sim::topology::{ARIES_COLS, ARIES_NODES_PER_ROUTER, ARIES_ROWS};
    let nodes = mapping.nodes(size).into_iter().max().map_or(0, |n| n + 1) as u32;
    let mut text = String::from("# NIC GROUP ROUTER, written by aar run\n");
    for n in 0..nodes {
        let router = n / ARIES_NODES_PER_ROUTER;
        text += &format!("{:#x} {} {router}\n", FIRST_NIC_ADDR + n, router / (ARIES_ROWS * ARIES_COLS));
    }
    let path = dir.join("topology");
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}; no rank was started.", path.display()))
}

/// One job: its id, its folder, its uGNI credentials and where its ranks run.
pub struct Job {
    pub id: u64,
    pub dir: JobDir,
    pub ptag: u8,
    pub cookie: u32,
    pub size: usize,
    pub mapping: ProcessMapping,
}

impl Job {
    /// A new job of `size` ranks, `ranks_per_node` per node: a fresh id and its folder.
    pub fn create(size: usize, ranks_per_node: usize) -> Result<Job, String> {
        let mapping =
            ProcessMapping::block(size, ranks_per_node).ok_or("a job needs at least one rank and one rank per node")?;
        remove_stale();
        let nodes = mapping.nodes(size).into_iter().max().map_or(0, |n| n + 1);
        super::capacity::check_shm(Path::new(SHM), size as u64, nodes as u64)?;
        let pid = u64::from(std::process::id());
        for k in 0..JOB_IDS {
            let id = pid + k * PID_SPAN;
            let path = Path::new(SHM).join(format!("aar-job-{id}"));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    let dir = JobDir { path };
                    write_topology(&dir.path, &mapping, size)?;
                    return Ok(Job {
                        id,
                        dir,
                        // User protection tags stay clear of 0..=9 and of GNI_FIND_ALLOC_PTAG (255).
                        ptag: (10 + id % 240) as u8,
                        // As ALPS hands them out: the job in the upper 16 bits.
                        cookie: (((id % 0xffff) as u32) + 1) << 16,
                        size,
                        mapping,
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(format!(
                        "cannot make the job folder {}: {e}; no rank was started. aar run needs a writable {SHM}.",
                        path.display()
                    ))
                }
            }
        }
        // Folders stale ones are not: another user's (the sticky /dev/shm keeps them), or those of
        // launchers in another pid namespace (a container) that shares /dev/shm.
        let folder = |k: u64| Path::new(SHM).join(format!("aar-job-{}", pid + k * PID_SPAN)).display().to_string();
        Err(format!(
            "cannot make a job folder: the {JOB_IDS} job folders this launcher (pid {pid}) may make, {} to {} (job ids \
             {pid} plus a multiple of {PID_SPAN}), all exist, and none was left by an aar run that no longer runs on this \
             machine (of another user, or of a launcher in another pid namespace sharing {SHM}); no rank was \
             started. Remove those no job uses (rm -r {}), or start aar run again: it gets another pid.",
            folder(0),
            folder(JOB_IDS - 1),
            folder(0)
        ))
    }

    /// The job's KVS name.
    pub fn kvsname(&self) -> String {
        format!("aar-{}", self.id)
    }

    /// The environment of `rank`, besides PMI_FD: as a Cray job gets it from ALPS, and the job
    /// folder for the emulator; and the rank's place as srun (`SLURM_*`) and hydra give it, which
    /// programs and their wrapper scripts read (`SLURM_LOCALID` to pick a device, say). Values a
    /// batch script's environment holds for itself (`SLURM_PROCID=0` in every rank) are replaced.
    pub fn env(&self, rank: usize, node: usize) -> Vec<(&'static str, String)> {
        let clique = self.mapping.clique(rank, self.size);
        let local = clique.iter().position(|&r| r == rank).unwrap_or(0);
        let nodes = self.mapping.nodes(self.size).into_iter().max().map_or(0, |n| n + 1);
        vec![
            ("SLURM_PROCID", rank.to_string()),
            ("SLURM_LOCALID", local.to_string()),
            ("SLURM_NODEID", node.to_string()),
            ("SLURM_NTASKS", self.size.to_string()),
            ("SLURM_NPROCS", self.size.to_string()),
            ("SLURM_NNODES", nodes.to_string()),
            ("ALPS_APP_PE", rank.to_string()),
            ("MPI_LOCALRANKID", local.to_string()),
            ("PMI_RANK", rank.to_string()),
            ("PMI_SIZE", self.size.to_string()),
            ("PMI_JOBID", self.id.to_string()),
            ("PMI_GNI_PTAG", self.ptag.to_string()),
            ("PMI_GNI_COOKIE", self.cookie.to_string()),
            ("PMI_GNI_DEV_ID", "0".into()),
            ("PMI_GNI_LOC_ADDR", (FIRST_NIC_ADDR + node as u32).to_string()),
            ("AAR_EMU_JOB_DIR", self.dir.path.display().to_string()),
            // As MPICH's hydra tells each rank: how many ranks share its node.
            ("MPI_LOCALNRANKS", clique.len().to_string()),
        ]
    }
}
