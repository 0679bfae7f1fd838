//! A transport middleware that drops, duplicates, reorders and delays sent messages.
//!
//! Like smoltcp's `phy::FaultInjector`: wrap any [`Transport`] and the faults apply to every
//! message it sends, decided by a seeded generator so a failing run can be repeated. Wrapping both
//! the client's and the server's transport disturbs both directions.

use crate::transport::{PeerAddr, Received, RecvMode, Transport};
use std::collections::VecDeque;
use std::io;
use std::time::{Duration, Instant};

/// Fault probabilities (each in `0.0..=1.0`) and the generator seed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaultConfig {
    /// Seed of the generator.
    pub seed: u64,
    /// Probability that a message is dropped.
    pub drop: f64,
    /// Probability that a message is sent twice.
    pub duplicate: f64,
    /// Probability that a message is held back and sent after the next one.
    pub reorder: f64,
    /// Probability that a message is delayed by up to `max_delay`.
    pub delay: f64,
    /// Longest delay.
    pub max_delay: Duration,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            seed: 1,
            drop: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            delay: 0.0,
            max_delay: Duration::from_millis(2),
        }
    }
}

/// Failure of [`FaultConfig::parse`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultParseError(pub String);

impl std::fmt::Display for FaultParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (expected e.g. `drop=0.1,dup=0.05,reorder=0.05,delay=0.1,max-delay-us=2000,seed=7`)",
            self.0
        )
    }
}

impl std::error::Error for FaultParseError {}

impl FaultConfig {
    /// Parse `key=value` pairs separated by commas: `drop`, `dup`, `reorder`, `delay`,
    /// `max-delay-us`, `seed`.
    ///
    /// # Errors
    /// [`FaultParseError`] naming the bad item.
    pub fn parse(s: &str) -> Result<FaultConfig, FaultParseError> {
        let mut c = FaultConfig::default();
        for item in s.split(',').filter(|i| !i.trim().is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| FaultParseError(format!("`{item}` is not key=value")))?;
            let prob = |v: &str| -> Result<f64, FaultParseError> {
                match v.trim().parse::<f64>() {
                    Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
                    _ => Err(FaultParseError(format!(
                        "`{item}`: a probability must be in 0..=1"
                    ))),
                }
            };
            let int = |v: &str| -> Result<u64, FaultParseError> {
                v.trim()
                    .parse::<u64>()
                    .map_err(|_| FaultParseError(format!("`{item}`: not an integer")))
            };
            match k.trim() {
                "drop" => c.drop = prob(v)?,
                "dup" | "duplicate" => c.duplicate = prob(v)?,
                "reorder" => c.reorder = prob(v)?,
                "delay" => c.delay = prob(v)?,
                "max-delay-us" => c.max_delay = Duration::from_micros(int(v)?),
                "seed" => c.seed = int(v)?,
                other => return Err(FaultParseError(format!("unknown fault `{other}`"))),
            }
        }
        Ok(c)
    }
}

/// Counts of injected faults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultCounters {
    /// Messages passed to `send`.
    pub sent: u64,
    /// Messages dropped.
    pub dropped: u64,
    /// Messages duplicated.
    pub duplicated: u64,
    /// Messages reordered.
    pub reordered: u64,
    /// Messages delayed.
    pub delayed: u64,
}

/// A small xorshift64* generator (deterministic for a seed).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// Return a generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15 | 1)
    }

    /// Return the next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Return a float in `0.0..1.0`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Return an integer in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
}

/// A transport that injects faults into what it sends.
///
/// There is no timer thread: a delayed message is sent by the first `send` or `recv` on the
/// injector at or after its release time (a `recv` that times out sends what fell due before it
/// returns), and a reordered message by the next `send` or `recv`.
pub struct FaultInjector<T: Transport> {
    inner: T,
    cfg: FaultConfig,
    rng: Rng,
    held: Option<(PeerAddr, Vec<u8>)>,
    delayed: VecDeque<(Instant, PeerAddr, Vec<u8>)>,
    counters: FaultCounters,
}

impl<T: Transport> FaultInjector<T> {
    /// Wrap `inner`.
    pub fn new(inner: T, cfg: FaultConfig) -> Self {
        FaultInjector {
            inner,
            rng: Rng::new(cfg.seed),
            cfg,
            held: None,
            delayed: VecDeque::new(),
            counters: FaultCounters::default(),
        }
    }

    /// Return the fault counts so far.
    pub fn counters(&self) -> FaultCounters {
        self.counters
    }

    fn release_due(&mut self) -> io::Result<()> {
        let now = Instant::now();
        while let Some((at, _, _)) = self.delayed.front() {
            if *at > now {
                break;
            }
            if let Some((_, to, m)) = self.delayed.pop_front() {
                self.inner.send(&to, &m)?;
            }
        }
        Ok(())
    }
}

impl<T: Transport> Transport for FaultInjector<T> {
    fn send(&mut self, to: &PeerAddr, msg: &[u8]) -> io::Result<()> {
        self.counters.sent += 1;
        self.release_due()?;
        let r = self.rng.next_f64();
        let c = self.cfg;
        if r < c.drop {
            self.counters.dropped += 1;
        } else if r < c.drop + c.reorder && self.held.is_none() {
            self.counters.reordered += 1;
            self.held = Some((*to, msg.to_vec()));
            return Ok(());
        } else if r < c.drop + c.reorder + c.delay {
            self.counters.delayed += 1;
            let us = self.rng.below(c.max_delay.as_micros() as u64 + 1);
            let at = Instant::now() + Duration::from_micros(us);
            // Keep the queue ordered by release time.
            let pos = self.delayed.iter().position(|(t, _, _)| *t > at);
            let item = (at, *to, msg.to_vec());
            match pos {
                Some(i) => self.delayed.insert(i, item),
                None => self.delayed.push_back(item),
            }
        } else {
            self.inner.send(to, msg)?;
            if self.rng.next_f64() < c.duplicate {
                self.counters.duplicated += 1;
                self.inner.send(to, msg)?;
            }
        }
        if let Some((hto, hmsg)) = self.held.take() {
            self.inner.send(&hto, &hmsg)?;
        }
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<Received>> {
        let deadline = Instant::now() + timeout;
        loop {
            self.release_due()?;
            let now = Instant::now();
            // A reordered message with nothing sent after it would wait forever: release it
            // when its sender starts waiting.
            if let Some((hto, hmsg)) = self.held.take() {
                self.inner.send(&hto, &hmsg)?;
            }
            let mut wait = deadline.saturating_duration_since(now);
            if let Some((at, _, _)) = self.delayed.front() {
                wait = wait.min(at.saturating_duration_since(now));
            }
            if let Some(r) = self.inner.recv(buf, wait)? {
                return Ok(Some(r));
            }
            if Instant::now() >= deadline {
                // Send what fell due during the wait before giving up: a thread descheduled past
                // the deadline would otherwise leave due messages queued until its next call.
                self.release_due()?;
                return Ok(None);
            }
        }
    }

    fn max_message(&self) -> usize {
        self.inner.max_message()
    }

    fn local_addr(&self) -> PeerAddr {
        self.inner.local_addr()
    }

    fn set_mode(&mut self, mode: RecvMode) {
        self.inner.set_mode(mode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::UdpTransport;

    #[test]
    fn parse_accepts_all_keys_and_locates_errors() {
        let c =
            FaultConfig::parse("drop=0.1,dup=0.2,reorder=0.3,delay=0.05,max-delay-us=500,seed=9")
                .unwrap();
        assert_eq!(c.drop, 0.1);
        assert_eq!(c.duplicate, 0.2);
        assert_eq!(c.reorder, 0.3);
        assert_eq!(c.max_delay, Duration::from_micros(500));
        assert_eq!(c.seed, 9);
        assert!(FaultConfig::parse("drop=2")
            .unwrap_err()
            .0
            .contains("drop=2"));
        assert!(FaultConfig::parse("bogus=1").is_err());
        assert!(FaultConfig::parse("drop").is_err());
    }

    /// An inner transport that records what it sends and whose `recv` always oversleeps: a
    /// thread descheduled well past its deadline, every time.
    struct Oversleeping {
        sent: Vec<Vec<u8>>,
        over: Duration,
    }

    impl Transport for Oversleeping {
        fn send(&mut self, _: &PeerAddr, msg: &[u8]) -> io::Result<()> {
            self.sent.push(msg.to_vec());
            Ok(())
        }
        fn recv(&mut self, _: &mut [u8], timeout: Duration) -> io::Result<Option<Received>> {
            std::thread::sleep(timeout + self.over);
            Ok(None)
        }
        fn max_message(&self) -> usize {
            1500
        }
        fn local_addr(&self) -> PeerAddr {
            PeerAddr::Udp("127.0.0.1:1".parse().unwrap())
        }
        fn set_mode(&mut self, _: RecvMode) {}
    }

    #[test]
    fn a_recv_that_times_out_late_sends_what_fell_due() {
        let max_delay = Duration::from_millis(20);
        let inner = Oversleeping {
            sent: Vec::new(),
            over: max_delay + Duration::from_millis(10),
        };
        let cfg = FaultConfig {
            delay: 1.0,
            max_delay,
            ..FaultConfig::default()
        };
        let mut f = FaultInjector::new(inner, cfg);
        let to = PeerAddr::Udp("127.0.0.1:2".parse().unwrap());
        f.send(&to, b"late").unwrap();
        assert_eq!(f.counters().delayed, 1);
        // The wait ends past both the deadline and the release time: the message goes out
        // before recv returns, not at some later call.
        assert!(f.recv(&mut [0u8; 8], Duration::ZERO).unwrap().is_none());
        assert_eq!(f.inner.sent, [b"late".to_vec()]);
        assert!(f.delayed.is_empty());
    }

    #[test]
    fn faults_follow_the_probabilities_and_every_kept_message_arrives() {
        let a = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), RecvMode::Block).unwrap();
        let mut b = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), RecvMode::Block).unwrap();
        let to = b.local_addr();
        let cfg = FaultConfig {
            seed: 3,
            drop: 0.2,
            duplicate: 0.2,
            reorder: 0.1,
            delay: 0.1,
            max_delay: Duration::from_micros(300),
        };
        let mut f = FaultInjector::new(a, cfg);
        for i in 0..200u32 {
            f.send(&to, &i.to_be_bytes()).unwrap();
        }
        let mut scratch = [0u8; 8];
        // Flush held and delayed messages: a recv sends what is due, so wait until nothing is
        // left (the bound only matters if delayed messages were never released).
        let until = Instant::now() + Duration::from_secs(10);
        while (f.held.is_some() || !f.delayed.is_empty()) && Instant::now() < until {
            let _ = f.recv(&mut scratch, Duration::from_millis(5)).unwrap();
        }
        assert!(f.held.is_none(), "a reordered message was never sent");
        assert!(
            f.delayed.is_empty(),
            "{} delayed messages never sent",
            f.delayed.len()
        );
        let c = f.counters();
        assert_eq!(c.sent, 200);
        assert!(c.dropped > 10 && c.dropped < 80, "{c:?}");
        assert!(c.duplicated > 5, "{c:?}");
        assert!(c.reordered > 2 && c.delayed > 2, "{c:?}");
        // Everything kept is already in `b`'s socket: read the expected count (the deadline only
        // matters if some are missing), then make sure nothing more is there.
        let want = 200 - c.dropped + c.duplicated;
        let mut got = 0u64;
        let mut buf = [0u8; 8];
        let until = Instant::now() + Duration::from_secs(10);
        while got < want && Instant::now() < until {
            if b.recv(&mut buf, Duration::from_millis(100))
                .unwrap()
                .is_some()
            {
                got += 1;
            }
        }
        while b
            .recv(&mut buf, Duration::from_millis(200))
            .unwrap()
            .is_some()
        {
            got += 1;
        }
        assert_eq!(got, want, "{c:?}");
    }
}
