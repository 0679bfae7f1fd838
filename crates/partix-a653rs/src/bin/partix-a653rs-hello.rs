//! The pair of `partix-a653rs-pair` written the way most a653rs partitions are: with the
//! `#[partition]` macro of `a653rs_macros`, its channel and process attributes, and its
//! generated contexts, over [`partix_a653rs::Partix`]. `send OUT` / `recv OUT`, lines as in
//! `partix-a653rs-pair` (OUT `-`: standard output), for the module `examples/a653rs/module.xml`
//! (`STATUS` sampling, `CMDS` queuing of 4 messages of 16 bytes).

mod pair_out;

use a653rs::partition;
use a653rs::prelude::PartitionExt;
use pair_out::{check, say};

const COUNT: u32 = 24;

#[partition(partix_a653rs::Partix)]
mod sender {
    use a653rs::prelude::*;

    #[sampling_out(name = "STATUS", msg_size = "16B")]
    struct Status;

    #[queuing_out(name = "CMDS", msg_count = 4, msg_size = "16B", discipline = "FIFO")]
    struct Cmds;

    #[start(cold)]
    fn cold_start(mut ctx: start::Context) {
        let ok = ctx.create_status().is_ok()
            && ctx.create_cmds().is_ok()
            && ctx.create_send().is_ok_and(|p| p.start().is_ok());
        crate::check(ok, "channels and process created, process started");
    }

    #[start(warm)]
    fn warm_start(ctx: start::Context) {
        cold_start(ctx);
    }

    #[aperiodic(
        name = "send",
        time_capacity = "Infinite",
        stack_size = "256KB",
        base_priority = 10,
        deadline = "Soft"
    )]
    fn send(ctx: send::Context) {
        let (status, cmds) = (ctx.status.unwrap(), ctx.cmds.unwrap());
        let mut ok = true;
        for i in 0..crate::COUNT {
            ok &= status.send(format!("status {i}").as_bytes()).is_ok();
            ok &= cmds
                .send(format!("cmd {i}").as_bytes(), SystemTime::Infinite)
                .is_ok();
        }
        ok &= status.send(b"status done").is_ok();
        crate::check(ok, "every message sent");
        crate::say("END");
    }
}

#[partition(partix_a653rs::Partix)]
mod receiver {
    use a653rs::prelude::*;
    use core::time::Duration;

    #[sampling_in(name = "STATUS", msg_size = "16B", refresh_period = "1s")]
    struct Status;

    #[queuing_in(name = "CMDS", msg_count = 4, msg_size = "16B", discipline = "FIFO")]
    struct Cmds;

    #[start(cold)]
    fn cold_start(mut ctx: start::Context) {
        let ok = ctx.create_status().is_ok()
            && ctx.create_cmds().is_ok()
            && ctx.create_recv().is_ok_and(|p| p.start().is_ok());
        crate::check(ok, "channels and process created, process started");
    }

    #[start(warm)]
    fn warm_start(ctx: start::Context) {
        cold_start(ctx);
    }

    #[aperiodic(
        name = "recv",
        time_capacity = "Infinite",
        stack_size = "256KB",
        base_priority = 10,
        deadline = "Soft"
    )]
    fn recv(ctx: recv::Context) {
        let (status, cmds) = (ctx.status.unwrap(), ctx.cmds.unwrap());
        let mut buf = [0u8; 16];
        let mut in_order = 0;
        for i in 0..crate::COUNT {
            if cmds
                .receive(&mut buf, SystemTime::Normal(Duration::from_secs(5)))
                .is_ok_and(|(m, overflow)| m == format!("cmd {i}").as_bytes() && !overflow)
            {
                in_order += 1;
            }
        }
        crate::check(in_order == crate::COUNT, "every queuing message, in order");
        let mut done = false;
        for _ in 0..500 {
            if let Ok((Validity::Valid, m)) = status.receive(&mut buf) {
                if m == b"status done" {
                    done = true;
                    break;
                }
            }
            let _ = ctx.timed_wait(Duration::from_millis(10));
        }
        crate::check(done, "the sampling port's latest message, valid");
        crate::say("END");
    }
}

fn main() {
    match pair_out::role("partix-a653rs-hello").as_str() {
        "send" => sender::Partition.run(),
        _ => receiver::Partition.run(),
    }
}
