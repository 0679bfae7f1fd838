//! The video streaming partition (VSP) of the UAV demo, written in Rust (being written, issue 2).
fn main() {
    eprintln!("uav-vsp: the Rust VSP partition is being written");
    std::process::exit(1);
}
