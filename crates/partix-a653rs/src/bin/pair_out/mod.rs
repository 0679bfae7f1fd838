//! What the two test programs (`partix-a653rs-pair`, `partix-a653rs-hello`) share: their
//! command line (`send|recv OUT`) and their `PASS`/`FAIL`/`END` lines to OUT (`-`: standard
//! output).

use std::io::Write;
use std::sync::OnceLock;

static OUT: OnceLock<String> = OnceLock::new();

/// Read `ROLE OUT` from the command line of `program`, keep OUT for [`say`]; return ROLE
/// (`send` or `recv`), or exit with a usage message.
pub fn role(program: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    let (Some(role), Some(out)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: {program} send|recv OUT");
        std::process::exit(2);
    };
    if role != "send" && role != "recv" {
        eprintln!("{program}: unknown role {role}");
        std::process::exit(2);
    }
    OUT.set(out.clone()).expect("once");
    role.clone()
}

/// Append `line` to the output file (`-`: print it).
pub fn say(line: &str) {
    let path = OUT.get().expect("output path");
    if path == "-" {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
        return;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("output file");
    writeln!(f, "{line}").expect("output write");
}

/// `PASS what` or `FAIL what`.
pub fn check(ok: bool, what: &str) {
    say(&format!("{} {what}", if ok { "PASS" } else { "FAIL" }));
}
