//! The APEX C headers, embedded so that C partitions can be compiled without the source tree.
//!
//! `partix run` writes [`FILES`] below a directory `D` and compiles a C partition with `-I D`
//! (see [`write_to`]), so `#include <arinc653/process.h>` resolves to these headers.

/// Every C header as (path relative to the include directory, contents).
pub const FILES: &[(&str, &str)] = &[
    (
        "arinc653/types.h",
        include_str!("../include/arinc653/types.h"),
    ),
    (
        "arinc653/partition.h",
        include_str!("../include/arinc653/partition.h"),
    ),
    (
        "arinc653/process.h",
        include_str!("../include/arinc653/process.h"),
    ),
    (
        "arinc653/time.h",
        include_str!("../include/arinc653/time.h"),
    ),
    (
        "arinc653/error.h",
        include_str!("../include/arinc653/error.h"),
    ),
    (
        "arinc653/schedules.h",
        include_str!("../include/arinc653/schedules.h"),
    ),
    (
        "arinc653/sampling.h",
        include_str!("../include/arinc653/sampling.h"),
    ),
    (
        "arinc653/queueing.h",
        include_str!("../include/arinc653/queueing.h"),
    ),
    (
        "arinc653/partix_ports.h",
        include_str!("../include/arinc653/partix_ports.h"),
    ),
    (
        "arinc653/blackboard.h",
        include_str!("../include/arinc653/blackboard.h"),
    ),
    (
        "arinc653/buffer.h",
        include_str!("../include/arinc653/buffer.h"),
    ),
    (
        "arinc653/semaphore.h",
        include_str!("../include/arinc653/semaphore.h"),
    ),
    (
        "arinc653/event.h",
        include_str!("../include/arinc653/event.h"),
    ),
    (
        "arinc653/apex.h",
        include_str!("../include/arinc653/apex.h"),
    ),
    ("arinc653.h", include_str!("../include/arinc653.h")),
];

/// Write every header of [`FILES`] below `dir` (creating `dir/arinc653/`), for use as `-I dir`.
///
/// Files whose contents are already identical are left untouched (so their timestamps do not
/// change and make-style rebuilds are not triggered).
///
/// # Errors
/// The I/O error of the first directory or file that cannot be written.
pub fn write_to(dir: &std::path::Path) -> std::io::Result<()> {
    for (rel, contents) in FILES {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        if std::fs::read(&path).ok().as_deref() == Some(contents.as_bytes()) {
            continue;
        }
        // Written aside and renamed into place: another `partix run` compiling against the
        // same directory never reads a header half written (found by review).
        let tmp = path.with_extension(format!("h.tmp.{}", std::process::id()));
        std::fs::write(&tmp, contents)?;
        if let Err(e) = std::fs::rename(&tmp, &path) {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_match_the_include_directory() {
        let include = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
        let mut on_disk = Vec::new();
        for entry in std::fs::read_dir(include.join("arinc653")).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            on_disk.push(format!("arinc653/{name}"));
        }
        on_disk.push("arinc653.h".to_string());
        on_disk.sort();
        let mut listed: Vec<String> = FILES.iter().map(|(p, _)| p.to_string()).collect();
        listed.sort();
        assert_eq!(listed, on_disk, "c_headers::FILES must list every header");
        for (rel, contents) in FILES {
            assert_eq!(
                std::fs::read_to_string(include.join(rel)).unwrap(),
                *contents
            );
        }
    }

    #[test]
    fn write_to_creates_an_include_tree() {
        let dir = std::env::temp_dir().join(format!("apexc-hdr-{}", std::process::id()));
        write_to(&dir).unwrap();
        write_to(&dir).unwrap();
        for (rel, contents) in FILES {
            assert_eq!(std::fs::read_to_string(dir.join(rel)).unwrap(), *contents);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
