//! build.rs's search for the site's dmapp.h, through the file build.rs includes (a build
//! script's own tests are never run).

#[path = "../src/build/dmapp_header.rs"]
mod dmapp_header;

use aar_abi::dmapp::RoutingTable;
use dmapp_header::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const ARIES_HEADER: &str = "typedef enum dmapp_routing_type {\n\
    DMAPP_ROUTING_DETERMINISTIC = 0,\n    DMAPP_ROUTING_DETERMINISTIC_1 = 1,\n    DMAPP_ROUTING_IN_ORDER = 3,\n\
    DMAPP_ROUTING_ADAPTIVE = 4,\n    DMAPP_ROUTING_ADAPTIVE_1,\n    DMAPP_ROUTING_ADAPTIVE_2,\n    DMAPP_ROUTING_ADAPTIVE_3\n\
} dmapp_routing_type_t;\n";

/// A file system of a few files, and an environment.
struct Site {
    env: HashMap<&'static str, String>,
    files: HashMap<PathBuf, String>,
}

impl Site {
    fn discover(&self) -> Discovery {
        let var = |k: &str| self.env.get(k).cloned();
        let is_file = |p: &Path| self.files.contains_key(p);
        let read = |p: &Path| self.files.get(p).cloned().ok_or_else(|| std::io::Error::other("No such file"));
        discover(&var, &is_file, &read)
    }
}

fn site(env: &[(&'static str, &str)], files: &[(&str, &str)]) -> Site {
    Site {
        env: env.iter().map(|(k, v)| (*k, v.to_string())).collect(),
        files: files.iter().map(|(p, t)| (PathBuf::from(p), t.to_string())).collect(),
    }
}

#[test]
fn include_options_name_folders_in_order() {
    let dirs = include_dirs("-O2 -I/opt/cray/dmapp/include -I /opt/cray/ugni/include -isystem /x -DIN=1 -I");
    assert_eq!(dirs, [PathBuf::from("/opt/cray/dmapp/include"), PathBuf::from("/opt/cray/ugni/include")]);
    assert!(include_dirs("").is_empty());
}

#[test]
fn the_cray_module_variables_lead_to_the_header() {
    let opts = "-I/opt/cray/pmi/include -I/opt/cray/dmapp/default/include";
    let s = site(&[("CRAY_DMAPP_INCLUDE_OPTS", opts)], &[("/opt/cray/dmapp/default/include/dmapp.h", ARIES_HEADER)]);
    let d = s.discover();
    let (table, path) = d.table.expect("a table");
    assert_eq!(path, PathBuf::from("/opt/cray/dmapp/default/include/dmapp.h"));
    assert_eq!(
        table,
        "IN_ORDER=3,DETERMINISTIC=0,ADAPTIVE=4,DETERMINISTIC_1=1,ADAPTIVE_1=5,ADAPTIVE_2=6,ADAPTIVE_3=7"
            .parse::<RoutingTable>()
            .unwrap()
    );
    assert!(
        d.message.contains("/opt/cray/dmapp/default/include/dmapp.h") && d.message.contains("CRAY_DMAPP_INCLUDE_OPTS"),
        "{}",
        d.message
    );
    // The second variable when the first names no header.
    let s = site(
        &[("CRAY_DMAPP_INCLUDE_OPTS", "-I/nowhere"), ("CRAY_DMAPP_POST_COMPILE_OPTS", "-I /site/inc")],
        &[("/site/inc/dmapp.h", ARIES_HEADER)],
    );
    assert_eq!(s.discover().table.unwrap().1, PathBuf::from("/site/inc/dmapp.h"));
}

#[test]
fn aar_dmapp_h_comes_first_and_a_bad_header_falls_back_to_the_assumed_table() {
    let files = [("/mine/dmapp.h", ARIES_HEADER), ("/cray/dmapp.h", "enum { DMAPP_ROUTING_ADAPTIVE = 9 };")];
    let s = site(&[("AAR_DMAPP_H", "/mine/dmapp.h"), ("CRAY_DMAPP_INCLUDE_OPTS", "-I/cray")], &files);
    assert_eq!(s.discover().table.unwrap().1, PathBuf::from("/mine/dmapp.h"));
    // A header without the four adaptive names: no table, and the message says why and what is used.
    let s = site(&[("CRAY_DMAPP_INCLUDE_OPTS", "-I/cray")], &files);
    let d = s.discover();
    assert!(d.table.is_none());
    assert!(d.message.contains("/cray/dmapp.h") && d.message.contains("ADAPTIVE_1"), "{}", d.message);
    assert!(d.message.contains(&RoutingTable::ASSUMED.to_string()), "{}", d.message);
    // AAR_DMAPP_H naming nothing: said so.
    let d = site(&[("AAR_DMAPP_H", "/typo/dmapp.h")], &files).discover();
    assert!(
        d.table.is_none() && d.message.contains("/typo/dmapp.h") && d.message.contains("cannot be read"),
        "{}",
        d.message
    );
    // Nothing anywhere.
    let d = site(&[], &[]).discover();
    assert!(d.table.is_none() && d.message.starts_with("no site dmapp.h found"), "{}", d.message);
    // An empty AAR_DMAPP_ROUTING counts as unset: the message does not promise that any value is taken.
    assert!(d.message.contains("unless AAR_DMAPP_ROUTING gives one when it runs"), "{}", d.message);
}

#[test]
fn the_repositorys_own_header_gives_the_assumed_table() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/cabi");
    let var = |k: &str| (k == "CRAY_DMAPP_INCLUDE_OPTS").then(|| format!("-I{dir}"));
    let d = discover(&var, &|p| p.is_file(), &|p| std::fs::read_to_string(p));
    assert_eq!(d.table.map(|t| t.0), Some(RoutingTable::ASSUMED));
}

#[test]
fn an_enumerator_the_build_cannot_use_is_named_with_its_line_and_the_ways_around_it() {
    let refused = |header: String| {
        let d = site(&[("AAR_DMAPP_H", "/site/dmapp.h")], &[("/site/dmapp.h", &header)]).discover();
        assert!(d.table.is_none(), "{}", d.message);
        assert!(!d.message.contains('\n'), "a build warning is one line: {}", d.message);
        for part in ["/site/dmapp.h", "AAR_DMAPP_ROUTING when libaar.so runs", "point AAR_DMAPP_H at another dmapp.h"] {
            assert!(d.message.contains(part), "{part:?} in {}", d.message);
        }
        d.message
    };
    // A shift: line 5 of the header, with a comma inside a comment before it.
    let header = ARIES_HEADER
        .replace("DMAPP_ROUTING_ADAPTIVE = 4,", "/* shifted, as a site might */ DMAPP_ROUTING_ADAPTIVE = 1 << 2,");
    let m = refused(header);
    assert!(m.contains("at line 5, `DMAPP_ROUTING_ADAPTIVE = 1 << 2`: "), "{m}");
    assert!(m.contains("not a number or an earlier enumerator"), "{m}");
    // The last enumerator, above 255, without a comma after it.
    let m = refused(ARIES_HEADER.replace("DMAPP_ROUTING_ADAPTIVE_3\n", "DMAPP_ROUTING_ADAPTIVE_3 = 0x100\n"));
    assert!(m.contains("at line 8, `DMAPP_ROUTING_ADAPTIVE_3 = 0x100`: a routing value is above 255"), "{m}");
    // An implicit value above 255, its entry spread over two lines.
    let m = refused(ARIES_HEADER.replace("DMAPP_ROUTING_ADAPTIVE = 4,", "DMAPP_ROUTING_ADAPTIVE =\n        255,"));
    assert!(m.contains("at line 7, `DMAPP_ROUTING_ADAPTIVE_1`: a routing value is above 255"), "{m}");
    // An error about no one enumerator names none, and still says what to do.
    let m = refused("enum { DMAPP_ROUTING_ADAPTIVE = 9 };".to_string());
    assert!(m.contains("ADAPTIVE_1") && !m.contains("at line"), "{m}");
}
