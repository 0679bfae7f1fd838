//! Buffers (ARINC 653 Part 1): CREATE_BUFFER, SEND_BUFFER, RECEIVE_BUFFER, GET_BUFFER_ID,
//! GET_BUFFER_STATUS.
//!
//! A buffer is a FIFO of at most `MAX_NB_MESSAGE` messages of at most `MAX_MESSAGE_SIZE` bytes,
//! stored in one array allocated at creation, with the wait queues (no allocation when a message
//! is sent or received, waiting or not; a creation the partition's memory cannot hold is
//! INVALID_CONFIG). A receiver finding it empty, or a sender finding it full, is queued in the
//! buffer's discipline (FIFO, or PRIORITY: current priority, FIFO among equals):
//! - SEND_BUFFER with receivers waiting copies the message into the first one's buffer;
//! - RECEIVE_BUFFER that frees a place copies the message of the first waiting sender into the
//!   buffer and releases that sender.

use super::blackboard::MAX_INTRA_MESSAGE_SIZE;
use super::error::{ApexError, ApexResult};
use super::ports::QueuingDiscipline;
use super::rt::Inner;
use super::time::SystemTime;
use super::waitq::{
    self, block, check_name, check_timeout, may_wait, Inbox, Outbox, Step, WaitQueue, WakeSet,
};

/// `BUFFER_ID_TYPE` (1, 2, ... in creation order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufferId(pub i32);

/// `MAX_NUMBER_OF_BUFFERS` of this implementation (per partition).
pub const MAX_NUMBER_OF_BUFFERS: usize = 256;

/// `SYSTEM_LIMIT_NUMBER_OF_MESSAGES`: the largest `MAX_NB_MESSAGE` of a buffer.
pub const MAX_NUMBER_OF_MESSAGES: u32 = 512;

/// `BUFFER_STATUS_TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferStatus {
    /// `NB_MESSAGE`: messages in the buffer now.
    pub nb_message: u32,
    /// `MAX_NB_MESSAGE`.
    pub max_nb_message: u32,
    /// `MAX_MESSAGE_SIZE` (bytes).
    pub max_message_size: u32,
    /// `WAITING_PROCESSES`: senders and receivers waiting.
    pub waiting_processes: u32,
}

pub(crate) struct Buffer {
    name: String,
    /// The messages.
    ring: Ring,
    /// Waiting senders, each lending its message.
    senders: WaitQueue<Outbox>,
    /// Waiting receivers, each lending its buffer.
    receivers: WaitQueue<Inbox>,
}

/// The messages of a buffer, oldest first.
struct Ring {
    max: u32,
    max_nb: u32,
    /// `max_nb` slots of `max` bytes.
    data: Vec<u8>,
    lens: Vec<u32>,
    head: usize,
    count: usize,
}

impl Ring {
    fn slot(&mut self, k: usize) -> &mut [u8] {
        let m = self.max as usize;
        &mut self.data[k * m..(k + 1) * m]
    }

    fn push(&mut self, msg: &[u8]) {
        let k = (self.head + self.count) % self.max_nb as usize;
        self.slot(k)[..msg.len()].copy_from_slice(msg);
        self.lens[k] = msg.len() as u32;
        self.count += 1;
    }

    fn pop(&mut self, out: &mut dyn FnMut(&[u8])) {
        let k = self.head;
        let n = self.lens[k] as usize;
        out(&self.slot(k)[..n]);
        self.head = (self.head + 1) % self.max_nb as usize;
        self.count -= 1;
    }
}

impl Buffer {
    /// After a place was freed: copy the first waiting sender's message in and release it.
    fn refill(&mut self, inner: &mut Inner, now: u64, wake: &mut WakeSet) {
        let ring = &mut self.ring;
        self.senders
            .grant_next(inner, now, wake, |m| ring.push(m.message()));
    }
}

fn index(id: BufferId, n: usize) -> ApexResult<usize> {
    usize::try_from(id.0)
        .ok()
        .and_then(|i| i.checked_sub(1))
        .filter(|&i| i < n)
        .ok_or(ApexError::InvalidParam)
}

/// Create an empty buffer (`CREATE_BUFFER`) in COLD_START or WARM_START mode.
///
/// # Errors
/// - `InvalidConfig`: [`MAX_NUMBER_OF_BUFFERS`] buffers exist already; the partition's memory
///   cannot hold the buffer's `max_message_size` × `max_nb_message` bytes and its wait queues
///   (checked after the parameters, before the mode).
/// - `NoAction`: a buffer of this name exists.
/// - `InvalidParam`: `name` is empty or longer than 30 bytes; `max_message_size` is 0 or larger
///   than [`MAX_INTRA_MESSAGE_SIZE`]; `max_nb_message` is 0 or larger than
///   [`MAX_NUMBER_OF_MESSAGES`].
/// - `InvalidMode`: the partition is in NORMAL mode.
pub fn create_buffer(
    name: &str,
    max_message_size: u32,
    max_nb_message: u32,
    discipline: QueuingDiscipline,
) -> ApexResult<BufferId> {
    create_buffer_with(name, max_message_size, max_nb_message, Some(discipline))
}

/// [`create_buffer`] with a discipline that may be out of range (`None`: a C
/// `QUEUING_DISCIPLINE_TYPE` that is neither FIFO nor PRIORITY), refused with `InvalidParam` in
/// the standard's order: after the table, name and size checks, before the mode check (partix
/// extension, for the C API's CREATE_BUFFER).
///
/// # Errors
/// Those of [`create_buffer`]; `InvalidParam` also for a `None` discipline.
pub fn create_buffer_with(
    name: &str,
    max_message_size: u32,
    max_nb_message: u32,
    discipline: Option<QueuingDiscipline>,
) -> ApexResult<BufferId> {
    waitq::with_objects(|objs, _, _, _| {
        if objs.buffers.len() >= MAX_NUMBER_OF_BUFFERS {
            return Err(ApexError::InvalidConfig);
        }
        if objs.buffers.iter().any(|b| b.name == name) {
            return Err(ApexError::NoAction);
        }
        check_name(name)?;
        if max_message_size == 0
            || max_message_size > MAX_INTRA_MESSAGE_SIZE
            || max_nb_message == 0
            || max_nb_message > MAX_NUMBER_OF_MESSAGES
        {
            return Err(ApexError::InvalidParam);
        }
        let discipline = discipline.ok_or(ApexError::InvalidParam)?;
        // Insufficient storage is INVALID_CONFIG, not an abort of the partition. The message
        // array (up to 4 MiB) is only reserved before the mode check and zero-filled after it:
        // a creation refused in NORMAL mode writes none of it under the runtime lock.
        let size = max_message_size as usize * max_nb_message as usize;
        let mut data = waitq::try_capacity(size)?;
        let mut lens = waitq::try_capacity(max_nb_message as usize)?;
        let senders = WaitQueue::try_new(discipline)?;
        let receivers = WaitQueue::try_new(discipline)?;
        let name = waitq::try_name(name)?;
        waitq::try_room(&mut objs.buffers)?;
        waitq::creation_mode()?;
        // Within the reserved capacity: no allocation.
        data.resize(size, 0);
        lens.resize(max_nb_message as usize, 0);
        objs.buffers.push(Buffer {
            name,
            ring: Ring {
                max: max_message_size,
                max_nb: max_nb_message,
                data,
                lens,
                head: 0,
                count: 0,
            },
            senders,
            receivers,
        });
        let id = objs.buffers.len() as i32;
        MAX_SIZES.set(id, max_message_size);
        Ok(BufferId(id))
    })
}

/// Each buffer's maximum message size, for [`buffer_max_message_size`].
static MAX_SIZES: waitq::MaxSizes<MAX_NUMBER_OF_BUFFERS> = waitq::MaxSizes::new();

/// The maximum message size of buffer `id`: GET_BUFFER_STATUS's `MAX_MESSAGE_SIZE`, without
/// the runtime lock (partix extension; the C API's SEND_BUFFER and RECEIVE_BUFFER check every
/// message's length against it).
///
/// # Errors
/// `InvalidParam`: no such buffer.
pub fn buffer_max_message_size(id: BufferId) -> ApexResult<u32> {
    MAX_SIZES.get(id.0)
}

/// Send a message to a buffer (`SEND_BUFFER`), waiting up to `timeout` ns while it is full (0: do
/// not wait; `INFINITE_TIME_VALUE`: no limit). A waiting receiver gets the message directly.
///
/// # Errors
/// - `InvalidParam`: no such buffer; `message` is empty or longer than the maximum; `timeout`
///   negative and not infinite.
/// - `NotAvailable`: full and `timeout` is 0.
/// - `InvalidMode`: full, `timeout` ≠ 0, and the caller holds the preemption lock, is the error
///   handler or is not a process.
/// - `TimedOut`: still full after `timeout` (the message is not sent).
pub fn send_buffer(id: BufferId, message: &[u8], timeout: SystemTime) -> ApexResult<()> {
    check_timeout(timeout)?;
    let step = waitq::with_objects(|objs, inner, now, wake| {
        let i = index(id, objs.buffers.len())?;
        let b = &mut objs.buffers[i];
        if message.is_empty() || message.len() > b.ring.max as usize {
            return Err(ApexError::InvalidParam);
        }
        if b.receivers
            .grant_next(inner, now, wake, |m| m.fill(message))
        {
            return Ok(Step::Done(()));
        }
        if b.ring.count < b.ring.max_nb as usize {
            b.ring.push(message);
            return Ok(Step::Done(()));
        }
        if timeout == 0 {
            return Err(ApexError::NotAvailable);
        }
        let me = may_wait(inner, timeout, now)?;
        // SAFETY: `message` stays borrowed by this call, unchanged, until `block` below returns
        // or this incarnation ends; a receiver copies it into the buffer.
        let outbox = unsafe { Outbox::new(message) };
        Ok(Step::Wait(
            objs.enqueue(inner, me, outbox, |o| &mut o.buffers[i].senders),
        ))
    })?;
    match step {
        Step::Done(()) => Ok(()),
        Step::Wait(t) => {
            let i = id.0 as usize - 1;
            block(t, |o| &mut o.buffers[i].senders).map(|_| ())
        }
    }
}

/// Receive the oldest message of a buffer into `buf` (`RECEIVE_BUFFER`), waiting up to `timeout`
/// ns while it is empty (0: do not wait; `INFINITE_TIME_VALUE`: no limit); return its length.
///
/// # Errors
/// - `InvalidParam`: no such buffer; `timeout` negative and not infinite; `buf` shorter than the
///   buffer's maximum message size.
/// - `NotAvailable`: empty and `timeout` is 0.
/// - `InvalidMode`: empty, `timeout` ≠ 0, and the caller holds the preemption lock, is the error
///   handler or is not a process.
/// - `TimedOut`: nothing arrived within `timeout`.
pub fn receive_buffer(id: BufferId, timeout: SystemTime, buf: &mut [u8]) -> ApexResult<usize> {
    check_timeout(timeout)?;
    let step = waitq::with_objects(|objs, inner, now, wake| {
        let i = index(id, objs.buffers.len())?;
        let b = &mut objs.buffers[i];
        if buf.len() < b.ring.max as usize {
            return Err(ApexError::InvalidParam);
        }
        if b.ring.count > 0 {
            let mut n = 0;
            b.ring.pop(&mut |m| {
                buf[..m.len()].copy_from_slice(m);
                n = m.len();
            });
            b.refill(inner, now, wake);
            return Ok(Step::Done(n));
        }
        if timeout == 0 {
            return Err(ApexError::NotAvailable);
        }
        let me = may_wait(inner, timeout, now)?;
        // SAFETY: `buf` (at least `max` bytes) stays borrowed by this call, untouched, until
        // `block` below returns or this incarnation ends; a sender copies its message into it.
        let inbox = unsafe { Inbox::new(buf) };
        Ok(Step::Wait(objs.enqueue(inner, me, inbox, |o| {
            &mut o.buffers[i].receivers
        })))
    })?;
    match step {
        Step::Done(n) => Ok(n),
        Step::Wait(t) => {
            let i = id.0 as usize - 1;
            block(t, |o| &mut o.buffers[i].receivers).map(|m| m.len())
        }
    }
}

/// Return the id of the buffer `name` (`GET_BUFFER_ID`).
///
/// # Errors
/// `InvalidConfig`: no buffer has this name.
pub fn get_buffer_id(name: &str) -> ApexResult<BufferId> {
    waitq::with_objects(|objs, _, _, _| {
        objs.buffers
            .iter()
            .position(|b| b.name == name)
            .map(|i| BufferId(i as i32 + 1))
            .ok_or(ApexError::InvalidConfig)
    })
}

/// Return the status of a buffer (`GET_BUFFER_STATUS`).
///
/// # Errors
/// `InvalidParam`: no such buffer.
pub fn get_buffer_status(id: BufferId) -> ApexResult<BufferStatus> {
    waitq::with_objects(|objs, _, now, _| {
        let b = waitq::by_id(&mut objs.buffers, id.0)?;
        Ok(BufferStatus {
            nb_message: b.ring.count as u32,
            max_nb_message: b.ring.max_nb,
            max_message_size: b.ring.max,
            waiting_processes: b.senders.waiting(now) + b.receivers.waiting(now),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(max: u32, max_nb: u32) -> Ring {
        Ring {
            max,
            max_nb,
            data: vec![0; (max * max_nb) as usize],
            lens: vec![0; max_nb as usize],
            head: 0,
            count: 0,
        }
    }

    #[test]
    fn ring_keeps_order_and_lengths_across_wraps() {
        let mut b = ring(4, 3);
        let mut next_in = 0u8;
        for (next_out, round) in (0u8..).zip(0..20) {
            // Fill to a varying level, then drain part of it.
            while b.count < 1 + round % 3 {
                let len = 1 + (next_in as usize % 4);
                b.push(&vec![next_in; len]);
                next_in += 1;
            }
            let mut got = Vec::new();
            b.pop(&mut |m| got = m.to_vec());
            assert_eq!(got, vec![next_out; 1 + (next_out as usize % 4)]);
        }
        assert!(b.count <= 3 && b.head < 3);
    }
}
