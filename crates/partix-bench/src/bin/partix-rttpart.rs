//! `partix-rttpart`: one end of a `partix bench rtt` ping-pong: a partition program using only
//! the partix partition services (kind `apex`), or a raw baseline peer. See
//! [`partix_bench::rttpeer`].
#![deny(unsafe_code)]

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(partix_bench::rttpeer::main(&args));
}
