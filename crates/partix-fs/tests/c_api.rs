//! The C example (`examples/c/fscopy.c`) built with gcc against the static library and run in
//! the client namespace against a real server across the veth pair.

mod common;

use common::*;
use std::path::PathBuf;
use std::process::Command;

fn target_dir() -> PathBuf {
    // .../target/debug/partix-fs-tool -> .../target/debug
    PathBuf::from(tool()).parent().unwrap().to_path_buf()
}

#[test]
fn c_example_copies_a_file_over_the_wire() {
    // Cargo puts the static library beside the binaries when partix-fs is built for itself, and
    // only in deps/ when it is built as a dependency of another crate: take the newer one.
    let lib = [
        target_dir().join("libpartix_fs.a"),
        target_dir().join("deps/libpartix_fs.a"),
    ]
    .into_iter()
    .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
    .max()
    .map(|(_, p)| p)
    .unwrap_or_else(|| {
        panic!(
            "libpartix_fs.a missing in {} (cargo builds it with the crate)",
            target_dir().display()
        )
    });
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let exe = std::env::temp_dir().join(format!("pfs-fscopy-{}", std::process::id()));
    let out = Command::new("gcc")
        .args(["-Wall", "-Wextra", "-Werror", "-std=c11", "-o"])
        .arg(&exe)
        .arg(crate_dir.join("examples/c/fscopy.c"))
        .arg("-I")
        .arg(crate_dir.join("include"))
        .arg(&lib)
        .args(["-lpthread", "-ldl", "-lm"])
        .output()
        .expect("run gcc");
    assert!(
        out.status.success(),
        "gcc: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let net = Net::new();
    let data = pattern(200_000, 4);
    std::fs::write(net.root.join("src.bin"), &data).unwrap();
    let _server = net.serve(&[]);
    let run = Command::new("nsenter")
        .arg(format!("--net=/run/netns/{}", net.pair.ns_a))
        .arg(&exe)
        .arg(&net.pair.if_a)
        .arg(net.pair.mac_b.to_string())
        .arg("src.bin")
        .arg("dst.bin")
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&exe);
    assert!(
        run.status.success(),
        "fscopy: {}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&run.stdout).trim(),
        "copied 200000 bytes"
    );
    assert_eq!(std::fs::read(net.root.join("dst.bin")).unwrap(), data);
}
