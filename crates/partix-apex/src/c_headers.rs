//! The APEX C headers, embedded so that C partitions can be compiled without the source tree.
//!
//! `partix run` writes [`FILES`] below a directory `D` and compiles a C partition with `-I D`
//! (see [`write_below`]), so `#include <arinc653/process.h>` resolves to these headers.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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

/// A hash of [`FILES`] (every path and its contents): FNV-1a, 64 bits, the same in every build
/// and Rust version (unlike `DefaultHasher`).
pub fn digest() -> u64 {
    digest_of(FILES)
}

fn digest_of(files: &[(&str, &str)]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (path, contents) in files {
        for b in path.bytes().chain([0]).chain(contents.bytes()).chain([0]) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The include directory for [`FILES`] below a cache directory: `cache/include-<digest>`.
///
/// Named by the headers' contents, so two `partix` builds with different headers (two worktrees,
/// CI jobs sharing a HOME) never write into one directory: a compile reads one version's
/// headers only, and the binary cached under that version's hash was built from them. A shared
/// `cache/include` let one `partix run` compile against a mix of two versions while another
/// rewrote it (review 27, finding 6).
pub fn include_dir(cache: &Path) -> PathBuf {
    include_dir_of(cache, FILES)
}

fn include_dir_of(cache: &Path, files: &[(&str, &str)]) -> PathBuf {
    cache.join(format!("include-{:016x}", digest_of(files)))
}

/// Write [`FILES`] into [`include_dir`]`(cache)` (see [`write_to`]) and return that directory,
/// for use as `-I`.
///
/// # Errors
/// The I/O error of the first directory or file that cannot be written.
pub fn write_below(cache: &Path) -> std::io::Result<PathBuf> {
    write_files_below(cache, FILES)
}

fn write_files_below(cache: &Path, files: &[(&str, &str)]) -> std::io::Result<PathBuf> {
    let dir = include_dir_of(cache, files);
    write_files(&dir, files)?;
    Ok(dir)
}

/// Write every header of [`FILES`] below `dir` (creating `dir/arinc653/`), for use as `-I dir`.
///
/// Files whose contents are already identical are left untouched (so their timestamps do not
/// change and make-style rebuilds are not triggered). Each file is replaced atomically, but not
/// the set: a directory shared with another version of the headers can be read as a mix of
/// both, which [`write_below`] avoids.
///
/// # Errors
/// The I/O error of the first directory or file that cannot be written.
pub fn write_to(dir: &Path) -> std::io::Result<()> {
    write_files(dir, FILES)
}

fn write_files(dir: &Path, files: &[(&str, &str)]) -> std::io::Result<()> {
    // Temporary names unique per process *and* call: two threads of one process writing the same
    // directory shared `*.tmp.<pid>`, and one's rename could take the other's file or fail.
    static NEXT: AtomicU64 = AtomicU64::new(0);
    for (rel, contents) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        if std::fs::read(&path).ok().as_deref() == Some(contents.as_bytes()) {
            continue;
        }
        // Written aside and renamed into place: another `partix run` compiling against the
        // same directory never reads a header half written (found by review).
        let tmp = path.with_extension(format!(
            "h.tmp.{}.{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
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

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("apexc-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// Two versions of the headers get two include directories below one cache, and writing one
    /// leaves the other as it was (review 27, finding 6).
    #[test]
    fn two_header_versions_get_two_include_directories() {
        let cache = scratch("hdr-versions");
        let a: &[(&str, &str)] = &[("arinc653/types.h", "/* A */\n"), ("x.h", "a\n")];
        let b: &[(&str, &str)] = &[("arinc653/types.h", "/* B */\n"), ("x.h", "a\n")];
        let dir_a = write_files_below(&cache, a).unwrap();
        let dir_b = write_files_below(&cache, b).unwrap();
        assert_ne!(dir_a, dir_b);
        assert!(dir_a.starts_with(&cache) && dir_b.starts_with(&cache));
        for (dir, files) in [(&dir_a, a), (&dir_b, b), (&dir_a, a)] {
            for (rel, contents) in files {
                assert_eq!(std::fs::read_to_string(dir.join(rel)).unwrap(), *contents);
            }
        }
        // Writing A again finds its files in place; B is still B.
        assert_eq!(write_files_below(&cache, a).unwrap(), dir_a);
        assert_eq!(
            std::fs::read_to_string(dir_b.join("arinc653/types.h")).unwrap(),
            "/* B */\n"
        );
        // The name depends on the contents only, and stays the same across builds.
        assert_eq!(include_dir_of(&cache, a), dir_a);
        assert_eq!(digest_of(&[]), 0xcbf2_9ce4_8422_2325);
        assert_ne!(digest_of(&[("ab", "")]), digest_of(&[("a", "b")]));
        assert_eq!(
            include_dir(&cache),
            cache.join(format!("include-{:016x}", digest()))
        );
        std::fs::remove_dir_all(&cache).unwrap();
    }

    /// Threads of one process writing the same directory at once all succeed: their temporary
    /// files have distinct names (they shared `*.tmp.<pid>`).
    #[test]
    fn threads_writing_one_directory_do_not_collide() {
        let cache = scratch("hdr-threads");
        for round in 0..20 {
            let dir = cache.join(round.to_string());
            let barrier = std::sync::Barrier::new(4);
            std::thread::scope(|s| {
                for _ in 0..4 {
                    s.spawn(|| {
                        barrier.wait();
                        write_to(&dir).unwrap();
                    });
                }
            });
            for (rel, contents) in FILES {
                assert_eq!(std::fs::read_to_string(dir.join(rel)).unwrap(), *contents);
            }
        }
        std::fs::remove_dir_all(&cache).unwrap();
    }
}
