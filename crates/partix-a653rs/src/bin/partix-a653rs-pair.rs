//! A pair of a653rs partitions (written against a653rs's abstractions only, generic code
//! instantiated with [`Partix`]) for the integration test `tests/a653rs.rs`: `send OUT` and
//! `recv OUT` exchange sampling and queuing messages through the channels the module gives
//! them, and write `PASS`/`FAIL`/`END` lines to `OUT`.
//!
//! The sender writes `status N` on the sampling port `STATUS` before each of 24 queuing
//! messages `cmd N` on `CMDS` (MaxNbMessages 4: it waits for room across windows, with an
//! infinite time-out), then `status done`. The receiver takes the 24 in order (time-out 5 s
//! each), checks its ports' status and ids, and reads `STATUS` until the sender's last write.

mod pair_out;

use a653rs::bindings::{ApexProcessP1, EmptyIndicator, PortDirection, ProcessState};
use a653rs::prelude::*;
use pair_out::{check, say};
use partix_a653rs::Partix;
use std::str::FromStr;
use std::sync::OnceLock;
use std::time::Duration;

const MSG: MessageSize = 16;
const NB: MessageRange = 4;
const COUNT: u32 = 24;

static STATUS_OUT: OnceLock<SamplingPortSource<Partix>> = OnceLock::new();
static CMDS_OUT: OnceLock<QueuingPortSender<Partix>> = OnceLock::new();
static STATUS_IN: OnceLock<SamplingPortDestination<Partix>> = OnceLock::new();
static CMDS_IN: OnceLock<QueuingPortReceiver<Partix>> = OnceLock::new();
static BB: OnceLock<Blackboard<Partix>> = OnceLock::new();
static BUF: OnceLock<Buffer<Partix>> = OnceLock::new();
static SEM: OnceLock<Semaphore<Partix>> = OnceLock::new();
static EV: OnceLock<Event<Partix>> = OnceLock::new();

fn name(s: &str) -> Name {
    Name::from_str(s).expect("a short name")
}

/// Checks of the partition's status in its start (`id`: its PartitionIdentifier;
/// `examples/a653rs/module.xml` gives each partition a window of 10 ms every 20 ms) and of the
/// core affinity of `p`.
fn check_start<P: Partition<Partix>>(id: i64, p: &Process<Partix>, ctx: &StartContext<Partix>) {
    let st = P::get_status();
    check(
        matches!(
            st.operating_mode,
            OperatingMode::ColdStart | OperatingMode::WarmStart
        ) && st.identifier == id
            && st.period == SystemTime::Normal(Duration::from_millis(20))
            && st.duration == SystemTime::Normal(Duration::from_millis(10))
            && st.num_assigned_cores == 1,
        "GET_PARTITION_STATUS in COLD_START (or WARM_START)",
    );
    check(
        ctx.initialize_process_core_affinity(p, 0).is_ok()
            && ctx
                .initialize_process_core_affinity(p, CORE_AFFINITY_NO_PREFERENCE)
                .is_ok()
            && matches!(
                ctx.initialize_process_core_affinity(p, 1),
                Err(Error::InvalidConfig)
            ),
        "INITIALIZE_PROCESS_CORE_AFFINITY: core 0 or none, not core 1",
    );
}

/// Checks of the calling process's own status, id, index and priority (`n`: its name).
fn check_self(n: &str) {
    let me = Process::<Partix>::get_self();
    let ok = me.as_ref().is_ok_and(|me| {
        // (Through the trait: `Process::status` unwraps, and a wrong id would abort the
        // partition rather than write FAIL.)
        let Ok(st) =
            <Partix as ApexProcessP1>::get_process_status(me.id()).map(ProcessStatus::from)
        else {
            return false;
        };
        st.process_state == ProcessState::Running
            && st.attributes.name == name(n)
            && st.current_priority == 10
            && st.attributes.base_priority == 10
            && st.attributes.deadline == Deadline::Soft
            && st.attributes.period == SystemTime::Infinite
            && st.deadline_time == SystemTime::Infinite
            && Process::<Partix>::from_name(name(n)).is_ok_and(|p| p.id() == me.id())
            && Process::<Partix>::get_my_index().is_ok_and(|i| i64::from(i) == me.id())
            && Process::<Partix>::get_my_processor_core_id() == 0
            && me.set_priority(11).is_ok()
            && <Partix as ApexProcessP1>::get_process_status(me.id())
                .is_ok_and(|st| st.current_priority == 11)
            && me.set_priority(10).is_ok()
    });
    check(
        ok,
        "GET_PROCESS_STATUS, GET_MY_ID, GET_MY_INDEX, SET_PRIORITY of the caller",
    );
    let t0 = <Partix as ApexTimeP4Ext>::get_time();
    let waited = <Partix as ApexTimeP1Ext>::timed_wait(Duration::from_millis(10)).is_ok();
    let t1 = <Partix as ApexTimeP4Ext>::get_time();
    check(
        waited
            && matches!((t0, t1), (SystemTime::Normal(a), SystemTime::Normal(b))
                if b >= a + Duration::from_millis(10) && b < a + Duration::from_secs(1)),
        "TIMED_WAIT of 10 ms, GET_TIME before and after",
    );
}

fn process(n: &str, entry: extern "C" fn()) -> ProcessAttribute {
    ProcessAttribute {
        period: SystemTime::Infinite,
        time_capacity: SystemTime::Infinite,
        entry_point: entry,
        stack_size: 256 * 1024,
        base_priority: 10,
        deadline: Deadline::Soft,
        name: name(n),
    }
}

struct Sender;

impl Partition<Partix> for Sender {
    fn cold_start(&self, ctx: &mut StartContext<Partix>) {
        let s = ctx.create_sampling_port_source(name("STATUS"), MSG);
        let q = ctx.create_queuing_port_sender(name("CMDS"), MSG, NB, QueuingDiscipline::Fifo);
        match (s, q) {
            (Ok(s), Ok(q)) => {
                let _ = STATUS_OUT.set(s);
                let _ = CMDS_OUT.set(q);
            }
            (s, q) => {
                say(&format!("FAIL ports: {:?} {:?}", s.err(), q.err()));
                say("END");
                return;
            }
        }
        let p = ctx.create_process(process("sender", send_main));
        check(
            p.as_ref().is_ok_and(|p| p.start().is_ok()),
            "sender process created and started",
        );
        if let Ok(p) = &p {
            check_start::<Self>(1, p, ctx);
        }
    }

    fn warm_start(&self, ctx: &mut StartContext<Partix>) {
        self.cold_start(ctx)
    }
}

extern "C" fn send_main() {
    let (s, q) = (STATUS_OUT.get().unwrap(), CMDS_OUT.get().unwrap());
    for i in 0..COUNT {
        let status = format!("status {i}");
        let cmd = format!("cmd {i}");
        if let Err(e) = s.send(status.as_bytes()) {
            say(&format!("FAIL write {i}: {e:?}"));
        }
        if let Err(e) = q.send(cmd.as_bytes(), SystemTime::Infinite) {
            say(&format!("FAIL send {i}: {e:?}"));
        }
    }
    check(
        s.send(b"status done").is_ok() && q.send(b"extra", SystemTime::Infinite).is_ok(),
        "last status written, one more message sent (for CLEAR)",
    );
    let st = q.status();
    check(
        st.max_nb_message == NB && st.port_direction == PortDirection::Source,
        "the sender's queuing port status",
    );
    check_self("sender");
    say("END");
}

struct Receiver;

impl Partition<Partix> for Receiver {
    fn cold_start(&self, ctx: &mut StartContext<Partix>) {
        let s = ctx.create_sampling_port_destination(name("STATUS"), MSG, Duration::from_secs(1));
        let q = ctx.create_queuing_port_receiver(name("CMDS"), MSG, NB, QueuingDiscipline::Fifo);
        match (s, q) {
            (Ok(s), Ok(q)) => {
                let _ = STATUS_IN.set(s);
                let _ = CMDS_IN.set(q);
            }
            (s, q) => {
                say(&format!("FAIL ports: {:?} {:?}", s.err(), q.err()));
                say("END");
                return;
            }
        }
        check(
            matches!(
                ctx.create_sampling_port_destination(name("STATUS"), MSG, Duration::from_secs(1)),
                Err(Error::NoAction)
            ),
            "a second CREATE_SAMPLING_PORT of the port answers NO_ACTION",
        );
        // The intra-partition objects, through a653rs's abstractions too.
        let objects = (
            ctx.create_blackboard(name("bb"), MSG),
            ctx.create_buffer(name("buf"), MSG, 2, QueuingDiscipline::Fifo),
            ctx.create_semaphore(name("sem"), 0, 1, QueuingDiscipline::Priority),
            ctx.create_event(name("ev")),
        );
        match objects {
            (Ok(b), Ok(u), Ok(m), Ok(e)) => {
                let _ = (BB.set(b), BUF.set(u), SEM.set(m), EV.set(e));
            }
            (b, u, m, e) => {
                say(&format!(
                    "FAIL objects: {:?} {:?} {:?} {:?}",
                    b.err(),
                    u.err(),
                    m.err(),
                    e.err()
                ));
                say("END");
                return;
            }
        }
        let p = ctx.create_process(process("receiver", recv_main));
        check(
            p.as_ref().is_ok_and(|p| p.start().is_ok()),
            "receiver process created and started",
        );
        if let Ok(p) = &p {
            check_start::<Self>(2, p, ctx);
        }
    }

    fn warm_start(&self, ctx: &mut StartContext<Partix>) {
        self.cold_start(ctx)
    }
}

extern "C" fn recv_main() {
    let (s, q) = (STATUS_IN.get().unwrap(), CMDS_IN.get().unwrap());
    let mut buf = [0u8; MSG as usize];
    let mut in_order = 0;
    for i in 0..COUNT {
        match q.receive(&mut buf, SystemTime::Normal(Duration::from_secs(5))) {
            Ok((m, overflow)) if m == format!("cmd {i}").as_bytes() && !overflow => in_order += 1,
            other => say(&format!("FAIL receive {i}: {other:?}")),
        }
    }
    check(in_order == COUNT, "every queuing message, in order");
    // The sender's last message, for CLEAR: wait until it is there.
    for _ in 0..500 {
        if q.status().nb_message >= 1 {
            break;
        }
        let _ = <Partix as ApexTimeP1Ext>::timed_wait(Duration::from_millis(10));
    }
    let st = q.status();
    check(
        st.nb_message == 1
            && st.max_nb_message == NB
            && st.port_direction == PortDirection::Destination,
        "the receiver's queuing port status, one message waiting",
    );
    q.clear();
    check(
        q.status().nb_message == 0
            && matches!(
                q.receive(&mut buf, SystemTime::Normal(Duration::ZERO)),
                Err(Error::NotAvailable)
            ),
        "CLEAR_QUEUING_PORT discards it; then NOT_AVAILABLE",
    );
    let mut last = Vec::new();
    for _ in 0..500 {
        if let Ok((Validity::Valid, m)) = s.receive(&mut buf) {
            last = m.to_vec();
            if m == b"status done" {
                break;
            }
        }
        let _ = <Partix as ApexTimeP1Ext>::timed_wait(Duration::from_millis(10));
    }
    check(
        last == b"status done",
        "the sampling port's latest message, valid",
    );
    let st = s.status();
    check(
        st.refresh_period == SystemTime::Normal(Duration::from_secs(1))
            && st.max_message_size == MSG
            && st.port_direction == PortDirection::Destination
            && st.last_msg_validity == Validity::Valid,
        "GET_SAMPLING_PORT_STATUS",
    );
    check(
        <Partix as ApexErrorP4Ext>::report_application_message(b"a653rs on partix").is_ok(),
        "REPORT_APPLICATION_MESSAGE",
    );
    check_self("receiver");
    let sched = <Partix as ApexScheduleP2Ext>::get_module_schedule_status();
    check(
        sched.is_ok_and(|st| {
            <Partix as ApexScheduleP2Ext>::get_module_schedule_id(name("s").into_inner())
                .is_ok_and(|id| id == st.current_schedule && id == st.next_schedule)
        }) && matches!(
            <Partix as ApexScheduleP2Ext>::set_module_schedule(1),
            Err(Error::InvalidMode)
        ),
        "GET_MODULE_SCHEDULE_STATUS and _ID; SET_MODULE_SCHEDULE refused outside a system partition",
    );
    let id = SamplingPortDestination::<Partix>::from_name(name("STATUS")).map(|d| d.id());
    check(id == Ok(s.id()), "GET_SAMPLING_PORT_ID");
    check(
        QueuingPortReceiver::<Partix>::from_name(name("CMDS")).is_ok_and(|r| r.id() == q.id()),
        "GET_QUEUING_PORT_ID",
    );
    intra();
    say("END");
}

/// One pass through each intra-partition object's services (one process: no waits but
/// time-outs of 0).
fn intra() {
    let now = SystemTime::Normal(Duration::ZERO);
    let mut buf = [0u8; MSG as usize];
    let bb = BB.get().unwrap();
    let ok = bb.display(b"hello").is_ok()
        && bb.read(now.clone(), &mut buf).is_ok_and(|m| m == b"hello")
        && bb.status().empty_indicator == EmptyIndicator::Occupied
        && {
            bb.clear();
            matches!(bb.read(now.clone(), &mut buf), Err(Error::NotAvailable))
        }
        && Blackboard::<Partix>::from_name(name("bb")).is_ok_and(|b| b.id() == bb.id());
    check(ok, "blackboard: DISPLAY, READ, status, CLEAR, GET_ID");
    let u = BUF.get().unwrap();
    let ok = u.send(&mut b"one".to_vec(), now.clone()).is_ok()
        && u.send(&mut b"two".to_vec(), now.clone()).is_ok()
        && matches!(
            u.send(&mut b"three".to_vec(), now.clone()),
            Err(Error::NotAvailable)
        )
        && u.status().nb_message == 2
        && u.receive(&mut buf, now.clone()).is_ok_and(|m| m == b"one")
        && u.receive(&mut buf, now.clone()).is_ok_and(|m| m == b"two")
        && matches!(u.receive(&mut buf, now.clone()), Err(Error::NotAvailable))
        && Buffer::<Partix>::from_name(name("buf")).is_ok_and(|b| b.id() == u.id());
    check(
        ok,
        "buffer: SEND, RECEIVE in order, full and empty, status, GET_ID",
    );
    let m = SEM.get().unwrap();
    let ok = matches!(m.wait(now.clone()), Err(Error::NotAvailable))
        && m.signal().is_ok()
        && m.current() == 1
        && matches!(m.signal(), Err(Error::NoAction))
        && m.wait(now.clone()).is_ok()
        && m.current() == 0
        && Semaphore::<Partix>::from_name(name("sem")).is_ok_and(|s| s.id() == m.id());
    check(ok, "semaphore: WAIT, SIGNAL, the maximum, status, GET_ID");
    let e = EV.get().unwrap();
    let ok = e.status().event_state == EventState::Down
        && matches!(e.wait(now.clone()), Err(Error::NotAvailable))
        && {
            e.set();
            e.status().event_state == EventState::Up
        }
        && e.wait(now.clone()).is_ok()
        && {
            e.reset();
            e.status().event_state == EventState::Down
        }
        && Event::<Partix>::from_name(name("ev")).is_ok_and(|v| v.id() == e.id());
    check(ok, "event: SET, WAIT, RESET, status, GET_ID");
}

fn main() {
    match pair_out::role("partix-a653rs-pair").as_str() {
        "send" => Sender.run(),
        _ => Receiver.run(),
    }
}
