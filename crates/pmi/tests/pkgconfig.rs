//! The build tree's pkg-config files carry the folders they name to the compiler as one word each,
//! through pkg-config and a Makefile's recipe, as a user's Makefile reads them: build.rs's escape,
//! through the file it includes (a build script's own tests are never run).

#[path = "../build/pc_value.rs"]
mod pc_value;

use pc_value::pc_value;
use std::path::Path;
use std::process::Command;

/// The words `make` hands to a recipe's command for `$(shell pkg-config --libs t)`, where the
/// file t.pc names `dir` by its escaped value.
fn words_make_passes(dir: &str, name: &str) -> Vec<String> {
    let scratch = aar_testkit::scratch(name);
    let value = pc_value(Path::new(dir)).expect("a path pkg-config can carry");
    std::fs::write(
        scratch.join("t.pc"),
        format!(
            "libdir={value}\nName: t\nDescription: t\nVersion: 1\nLibs: -L${{libdir}} -Wl,-rpath,${{libdir}} -lt\n"
        ),
    )
    .unwrap();
    std::fs::write(scratch.join("Makefile"), "LIBS := $(shell pkg-config --libs t)\nall:\n\t@printf '%s\\n' $(LIBS)\n")
        .unwrap();
    let out = Command::new("make").arg("-s").arg("-C").arg(&scratch).env("PKG_CONFIG_PATH", &scratch).output().unwrap();
    assert!(out.status.success(), "make: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect()
}

#[test]
fn a_folder_with_blanks_quotes_hashes_or_shell_characters_reaches_the_compiler_as_one_word() {
    for (i, dir) in [
        "/plain/target/release",
        "/home/me/my code/target/release",
        "/home/o'brien/aar",
        "/x/say \"hi\"/aar",
        "/x/no#comment/aar",
        "/x/back\\slash/aar",
        "/x/R&D;a|b*c?/aar",
        "/x/~me/a=b+c@d/aar",
    ]
    .into_iter()
    .enumerate()
    {
        let words = words_make_passes(dir, &format!("pc-value-{i}"));
        assert_eq!(words, [format!("-L{dir}"), format!("-Wl,-rpath,{dir}"), "-lt".to_string()], "{dir}");
    }
}

#[test]
fn a_folder_no_escape_carries_is_refused_with_the_character_named() {
    for (dir, named) in [
        ("/home/me/$HOME/aar", "'$'"),
        ("/x/copy (1)/aar", "'('"),
        ("/x/a,b/aar", "','"),
        ("/x/line\nbreak", "a control character ('\\n')"),
    ] {
        assert_eq!(pc_value(Path::new(dir)), Err(named.to_string()), "{dir:?}");
    }
    use std::os::unix::ffi::OsStrExt;
    let latin1 = Path::new(std::ffi::OsStr::from_bytes(b"/x/caf\xe9"));
    assert_eq!(pc_value(latin1), Err("a byte that is not UTF-8".to_string()));
}
