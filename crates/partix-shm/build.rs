//! Declare the `loom` cfg so `--cfg loom` builds (scripts/loom.sh) pass `unexpected_cfgs`.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(loom)");
}
