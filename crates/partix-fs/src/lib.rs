//! Remote file and device access over raw Ethernet frames (and UDP).
//!
//! The protocol follows Usher and Audsley's Ethernet file protocol (open, close, read, write,
//! reply in one frame each, 6-byte header) and adds what users of 9P, AoE and NFS expect: a
//! version/msize handshake, stat, readdir, flush, split and atomic writes, a reply cache for
//! exactly-once retransmission. Frame formats live in [`partix_wire::fs`].
//!
//! Layers, smoltcp style:
//! - [`transport`]: the device trait ([`transport::Transport`]) and its AF_PACKET (socket reads
//!   or a mapped receive ring) and UDP implementations; [`fault`]: a middleware transport that injects drops, duplicates,
//!   reordering and delay.
//! - [`server`]: dispatch table, reply cache, per-client descriptor tables, limits, counters;
//!   [`confine`]: path resolution beneath the exported root.
//! - [`client`]: the Rust client library; [`ffi`]: its C API (`include/partix_fs.h`);
//!   [`fuse`]: a FUSE mount on top of it.
//! - [`cli`]: `partix fs ...`; [`netns`]: network namespaces and veth pairs for tests and
//!   benchmarks.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod cli;
pub mod client;
pub mod confine;
pub mod fault;
pub mod ffi;
pub mod fuse;
pub mod netns;
pub mod server;
pub mod transport;

pub use client::{Client, ClientConfig, FsError};
pub use server::{Server, ServerConfig};
pub use transport::{PacketTransport, PeerAddr, RecvMode, RingTransport, Transport, UdpTransport};
