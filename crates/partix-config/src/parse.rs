//! Stage 1: XML text → a syntactic tree ([`RawModule`]) with every value typed and located.
//!
//! This stage checks what one element can check on its own: well-formed XML, known element and
//! attribute names (with "did you mean" hints), required attributes, and value syntax (numbers,
//! durations, booleans, enumerations, name lengths). Cross-references (ids, ports, windows) are
//! checked by [`crate::validate`].

use std::path::Path;
use std::time::Duration;

use roxmltree::{Attribute, Document, Node};

use crate::error::{ConfigError, ErrorSink};
use crate::model::{
    Credentials, Criticality, Delivery, DescriptorTable, ErrorCode, ErrorLevel, Location,
    MemoryAccess, MemoryKind, MemoryRequirement, ModuleAction, PartitionAction, PortDirection,
    QueuingPortConfig, ReceiveMode, SamplingPortConfig,
};
use crate::value::{self, ValueError};

/// The XML namespace of the partix extensions.
pub const PARTIX_NS: &str = "urn:partix:config:1";

/// The transports a channel may name in `partix:Transport`.
pub const TRANSPORTS: &[&str] = &["one-sided", "two-sided", "udp", "tcp"];

/// The values of `partix:Delivery` (two-sided channels only).
pub const DELIVERIES: &[&str] = &["helped", "manager"];

/// Longest partition, port, process or schedule name in bytes (the APEX `NAME_TYPE` is
/// `char[30]`: 30 bytes of UTF-8, fewer characters when some are not ASCII).
pub const MAX_NAME_LEN: usize = 30;

/// Largest `MaxMessageSize` of a queuing port: 16 MiB, the largest message of the runtime's
/// rings (`partix_shm::ring::RingLayout::new`, which every queuing transport uses).
pub const MAX_QUEUING_MESSAGE_SIZE: u32 = 16 << 20;

/// Largest `MaxNbMessages` of a queuing port: 2^24. The runtime's ring holds `MaxNbMessages`
/// rounded up to a power of two, at most 2^24 (`partix_shm::ring::RingLayout::new`).
pub const MAX_NB_MESSAGES: u32 = 1 << 24;

/// Largest `MaxMessageSize` of a sampling port: 256 MiB, the largest sampling slot
/// (`partix_shm::sampling::SamplingLayout::new`).
pub const MAX_SAMPLING_MESSAGE_SIZE: u32 = 256 << 20;

/// Largest `MaxMessageSize` of the ports of a `two-sided` sampling channel: 16 MiB, the largest
/// buffer of a two-sided ring (`partix_shm::twosided::RingShape::new`).
pub const MAX_TWO_SIDED_MESSAGE_SIZE: u32 = 16 << 20;

/// Largest `MaxMessageSize` of the ports of a `udp` channel: a message travels in one datagram,
/// whose payload is at most 65507 bytes over IPv4, and the frame header takes 24 of them
/// (`partix_runtime::transport::socket::HEADER_LEN`).
pub const MAX_UDP_MESSAGE_SIZE: u32 = 65507 - 24;

/// Largest buffer the executive gives a `udp`/`tcp` socket (bytes asked with `SO_RCVBUF` /
/// `SO_SNDBUF`; the kernel doubles it for its bookkeeping).
pub const MAX_SOCKET_BUFFER: usize = 16 << 20;

/// Return the buffer the executive asks of each socket of a `udp`/`tcp` channel for `frames`
/// frames of `max_message_size` bytes (before [`MAX_SOCKET_BUFFER`]; saturating): about 1 KiB
/// of kernel overhead per datagram and the 24-byte frame header on each, for `frames` + 2
/// frames, twice.
pub fn socket_buffer_bytes(max_message_size: u32, frames: u32) -> usize {
    (max_message_size as usize + 24 + 1024)
        .saturating_mul(frames as usize + 2)
        .saturating_mul(2)
}

/// Most sampling ports, and most queuing ports, of one partition (the runtime's
/// `MAX_NUMBER_OF_PORTS`, per partition and kind).
pub const MAX_PORTS_PER_KIND: usize = 512;

/// Largest `PartitionIdentifier` and `ScheduleIdentifier`: APEX identifiers are `APEX_INTEGER`
/// (a signed 32-bit integer), and the runtime keeps `u32::MAX` for "no request".
pub const MAX_IDENTIFIER: u32 = i32::MAX as u32;

/// A value and where it is in the file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Loc<T> {
    pub v: T,
    pub loc: Location,
}

/// `ARINC_653_Module`, as written.
#[derive(Debug, Default)]
pub(crate) struct RawModule {
    pub name: Option<String>,
    pub version: Option<String>,
    pub loc: Location,
    pub partitions: Vec<RawPartition>,
    pub memories: Vec<RawMemory>,
    pub schedules: Vec<RawSchedule>,
    pub channels: Vec<RawChannel>,
    pub system_hm: Vec<RawSystemHm>,
    pub module_hm: Vec<RawModuleHm>,
    pub partition_hms: Vec<RawPartitionHm>,
    /// The `SystemState` of every `System_State_Entry` of every HM table, in file order.
    pub system_states: Vec<Loc<u32>>,
}

/// `Partition`.
#[derive(Debug)]
pub(crate) struct RawPartition {
    pub id: Loc<u32>,
    pub name: Option<Loc<String>>,
    pub criticality: Criticality,
    pub system_partition: bool,
    pub entry_point: Option<String>,
    pub executable: Option<Loc<String>>,
    pub args: Vec<String>,
    pub affinity: Option<Loc<Vec<usize>>>,
    pub descriptor_table: DescriptorTable,
    pub user: Option<Loc<Credentials>>,
    pub sampling: Vec<SamplingPortConfig>,
    pub queuing: Vec<QueuingPortConfig>,
    pub loc: Location,
}

/// A partition reference (`PartitionIdentifier` plus optional `PartitionName`).
#[derive(Debug, Clone)]
pub(crate) struct RawPartRef {
    pub id: Loc<u32>,
    pub name: Option<Loc<String>>,
}

/// `Partition_Memory`.
#[derive(Debug)]
pub(crate) struct RawMemory {
    pub part: RawPartRef,
    pub regions: Vec<MemoryRequirement>,
    pub loc: Location,
}

/// `Module_Schedule`.
#[derive(Debug)]
pub(crate) struct RawSchedule {
    pub id: Option<Loc<u32>>,
    pub name: Option<Loc<String>>,
    pub initial: Option<Loc<bool>>,
    pub major_frame: Loc<Duration>,
    pub partitions: Vec<RawPartitionSchedule>,
    pub loc: Location,
}

/// `Partition_Schedule`.
#[derive(Debug)]
pub(crate) struct RawPartitionSchedule {
    pub part: RawPartRef,
    pub period: Loc<Duration>,
    pub duration: Loc<Duration>,
    pub windows: Vec<RawWindow>,
    pub loc: Location,
}

/// `Window_Schedule`.
#[derive(Debug)]
pub(crate) struct RawWindow {
    pub id: Loc<u32>,
    pub start: Loc<Duration>,
    pub duration: Loc<Duration>,
    pub period_start: bool,
    pub loc: Location,
}

/// `Channel`.
#[derive(Debug)]
pub(crate) struct RawChannel {
    pub id: Loc<u32>,
    pub name: Option<Loc<String>>,
    pub transport: Option<Loc<String>>,
    pub delivery: Option<Loc<Delivery>>,
    pub sources: Vec<RawPortRef>,
    pub destinations: Vec<RawPortRef>,
    pub loc: Location,
}

/// `Standard_Partition` inside `Source`/`Destination`.
#[derive(Debug, Clone)]
pub(crate) struct RawPortRef {
    pub part: RawPartRef,
    pub port: Loc<String>,
    pub loc: Location,
}

/// `Error_ID_Level` of the `System_HM_Table`.
#[derive(Debug)]
pub(crate) struct RawSystemHm {
    pub state: u32,
    pub error_id: Loc<u32>,
    pub level: ErrorLevel,
    pub code: Loc<ErrorCode>,
}

/// `Error_ID_Action` of the `Module_HM_Table`.
#[derive(Debug)]
pub(crate) struct RawModuleHm {
    pub state: u32,
    pub error_id: Loc<u32>,
    pub action: ModuleAction,
}

/// `Partition_HM_Table`.
#[derive(Debug)]
pub(crate) struct RawPartitionHm {
    pub part: RawPartRef,
    pub entries: Vec<RawPartitionHmEntry>,
    pub loc: Location,
}

/// `Error_ID_Action` of a `Partition_HM_Table`.
#[derive(Debug)]
pub(crate) struct RawPartitionHmEntry {
    pub state: u32,
    pub error_id: Loc<u32>,
    pub code: Option<Loc<ErrorCode>>,
    pub action: Loc<PartitionAction>,
}

/// The values of `partix:DescriptorTable`.
const DESCRIPTOR_TABLES: &[(&str, DescriptorTable)] = &[
    ("shared", DescriptorTable::Shared),
    ("per-process", DescriptorTable::PerProcess),
];

const CRITICALITIES: &[(&str, Criticality)] = &[
    ("LEVEL_A", Criticality::LevelA),
    ("LEVEL_B", Criticality::LevelB),
    ("LEVEL_C", Criticality::LevelC),
    ("LEVEL_D", Criticality::LevelD),
    ("LEVEL_E", Criticality::LevelE),
];
const DIRECTIONS: &[(&str, PortDirection)] = &[
    ("SOURCE", PortDirection::Source),
    ("DESTINATION", PortDirection::Destination),
];
const MEMORY_KINDS: &[(&str, MemoryKind)] = &[
    ("CODE", MemoryKind::Code),
    ("DATA", MemoryKind::Data),
    ("INPUT_OUTPUT", MemoryKind::InputOutput),
];
const MEMORY_ACCESS: &[(&str, MemoryAccess)] = &[
    ("READ_ONLY", MemoryAccess::ReadOnly),
    ("READ_WRITE", MemoryAccess::ReadWrite),
];
const ERROR_LEVELS: &[(&str, ErrorLevel)] = &[
    ("MODULE", ErrorLevel::Module),
    ("PARTITION", ErrorLevel::Partition),
    ("PROCESS", ErrorLevel::Process),
];
/// Error code names (`POWER_FAILURE` is the spelling of POK's schema).
pub(crate) const ERROR_CODES: &[(&str, ErrorCode)] = &[
    ("DEADLINE_MISSED", ErrorCode::DeadlineMissed),
    ("APPLICATION_ERROR", ErrorCode::ApplicationError),
    ("NUMERIC_ERROR", ErrorCode::NumericError),
    ("ILLEGAL_REQUEST", ErrorCode::IllegalRequest),
    ("STACK_OVERFLOW", ErrorCode::StackOverflow),
    ("MEMORY_VIOLATION", ErrorCode::MemoryViolation),
    ("HARDWARE_FAULT", ErrorCode::HardwareFault),
    ("POWER_FAIL", ErrorCode::PowerFail),
    ("POWER_FAILURE", ErrorCode::PowerFail),
    ("PARTITION_CRASH", ErrorCode::PartitionCrash),
    ("INIT_TIMEOUT", ErrorCode::InitTimeout),
];
const MODULE_ACTIONS: &[(&str, ModuleAction)] = &[
    ("IGNORE", ModuleAction::Ignore),
    ("SHUTDOWN", ModuleAction::Shutdown),
    ("RESET", ModuleAction::Reset),
];
const PARTITION_ACTIONS: &[(&str, PartitionAction)] = &[
    ("IGNORE", PartitionAction::Ignore),
    ("IDLE", PartitionAction::Idle),
    ("WARM_START", PartitionAction::WarmStart),
    ("COLD_START", PartitionAction::ColdStart),
    ("STOP_PROCESS", PartitionAction::StopProcess),
    ("RESTART_PROCESS", PartitionAction::RestartProcess),
];

/// Return the canonical name of an error code.
pub(crate) fn error_code_name(code: ErrorCode) -> &'static str {
    ERROR_CODES
        .iter()
        .find(|(_, c)| *c == code)
        .map_or("?", |(n, _)| n)
}

/// Every element name of the ARINC vocabulary partix reads.
const KNOWN_ELEMENTS: &[&str] = &[
    "ARINC_653_Module",
    "System_HM_Table",
    "Module_HM_Table",
    "Partition",
    "Partition_Memory",
    "Memory_Requirements",
    "Module_Schedule",
    "Partition_Schedule",
    "Window_Schedule",
    "Partition_HM_Table",
    "Connection_Table",
    "Channel",
    "Source",
    "Destination",
    "Standard_Partition",
    "Pseudo_Partition",
    "Sampling_Port",
    "Queuing_Port",
    "Process",
    "System_State_Entry",
    "Error_ID_Level",
    "Error_ID_Action",
];

/// Every partix extension attribute name, per element, for the "put it in the namespace" hint.
const PARTIX_ATTRS_PARTITION: &[&str] = &[
    "Executable",
    "Arguments",
    "Affinity",
    "DescriptorTable",
    "User",
];
const PARTIX_ATTRS_CHANNEL: &[&str] = &["Transport", "Delivery"];
const PARTIX_ATTRS_PORT: &[&str] = &["ReceiveMode"];
const ALL_PARTIX_ATTRS: &[&str] = &[
    "Executable",
    "Arguments",
    "Affinity",
    "DescriptorTable",
    "User",
    "Transport",
    "Delivery",
    "ReceiveMode",
];

/// Parse state: the document, the file name for errors, and the errors found so far.
pub(crate) struct Parser<'a, 'i> {
    doc: &'a Document<'i>,
    file: Option<&'a Path>,
    /// The namespace of the ARINC vocabulary: the root element's namespace (usually none).
    arinc_ns: Option<&'a str>,
    lines: LineIndex<'i>,
    pub errors: ErrorSink,
    /// The `SystemState`s read so far (see [`RawModule::system_states`]).
    system_states: Vec<Loc<u32>>,
}

/// Byte offset → line/column in O(log lines) (roxmltree's `text_pos_at` rescans the text).
///
/// A column counts characters. On an ASCII line it is the byte distance; on another line it is
/// counted from checkpoints every [`CHECKPOINT_BYTES`] bytes of the text, so a lookup costs at most
/// twice that much counting whatever the line's length (counting from the line's start made a
/// one-line file with a non-ASCII character quadratic: review 27).
struct LineIndex<'i> {
    text: &'i str,
    starts: Vec<usize>,
    /// Per line: whether it is ASCII (column = byte distance, no counting).
    ascii: Vec<bool>,
    /// (byte offset, characters before it), at the first character boundary at or after each
    /// multiple of [`CHECKPOINT_BYTES`]; the first is (0, 0).
    checkpoints: Vec<(usize, usize)>,
}

/// Bytes between two checkpoints of a [`LineIndex`].
const CHECKPOINT_BYTES: usize = 256;

impl<'i> LineIndex<'i> {
    fn new(text: &'i str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        let ascii: Vec<bool> = starts
            .iter()
            .enumerate()
            .map(|(k, &s)| {
                let end = starts.get(k + 1).copied().unwrap_or(text.len());
                text.as_bytes()[s..end].is_ascii()
            })
            .collect();
        let mut checkpoints = vec![(0, 0)];
        if !text.is_ascii() {
            let (mut at, mut chars) = (0, 0);
            loop {
                let mut next = at + CHECKPOINT_BYTES;
                while next < text.len() && !text.is_char_boundary(next) {
                    next += 1;
                }
                if next >= text.len() {
                    break;
                }
                chars += text[at..next].chars().count();
                checkpoints.push((next, chars));
                at = next;
            }
        }
        Self {
            text,
            starts,
            ascii,
            checkpoints,
        }
    }

    /// The number of characters before byte `pos` (a character boundary).
    fn chars_before(&self, pos: usize) -> usize {
        let k = self.checkpoints.partition_point(|&(at, _)| at <= pos) - 1;
        let (at, chars) = self.checkpoints[k];
        chars
            + self
                .text
                .get(at..pos)
                .map_or(pos - at, |t| t.chars().count())
    }

    fn location(&self, pos: usize) -> Location {
        let pos = pos.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= pos);
        let start = self.starts[line - 1];
        let col = if self.ascii[line - 1] || !self.text.is_char_boundary(pos) {
            pos - start
        } else {
            self.chars_before(pos) - self.chars_before(start)
        };
        Location {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            col: u32::try_from(col + 1).unwrap_or(u32::MAX),
        }
    }
}

/// Return the 1-based line/column of a byte offset in `text` (for errors outside a document).
pub(crate) fn location_at(text: &str, pos: usize) -> Location {
    let pos = pos.min(text.len());
    let mut line = 1u32;
    let mut col = 1u32;
    for (i, c) in text.char_indices() {
        if i >= pos {
            break;
        }
        if c == '\n' {
            line = line.saturating_add(1);
            col = 1;
        } else {
            col = col.saturating_add(1);
        }
    }
    Location { line, col }
}

/// Deepest element nesting accepted (a module configuration nests 6 levels; roxmltree recurses
/// per level, so unbounded nesting could exhaust the stack).
pub const MAX_DEPTH: usize = 64;

/// Most attributes (namespace declarations included) on one element. An element of a module
/// configuration has at most a dozen; roxmltree's duplicate-attribute check takes time quadratic
/// in their number (two million attributes on one element would take hours).
pub const MAX_ATTRIBUTES: usize = 64;

/// Most namespace declarations (`xmlns` and `xmlns:*` attributes) in one file. A module
/// configuration declares one or two; roxmltree copies every namespace in scope into each
/// element that declares one and checks each copy against the rest (time quadratic in the
/// namespaces in scope: 4000 of them, well inside the other limits, made a 131 KB file take 73 s).
pub const MAX_NAMESPACE_DECLARATIONS: usize = 256;

/// Longest namespace URI (the value of an `xmlns` or `xmlns:*` attribute, as written), in bytes.
/// A URI is a few dozen bytes; roxmltree keeps it once, but every check that compares it (per
/// element in scope) would read a long one whole: 8 MiB of URI over a million elements took
/// minutes (review 27).
pub const MAX_NAMESPACE_URI: usize = 1024;

/// Most XML nodes of a document (elements, text, comments, processing instructions and the
/// document itself, as roxmltree counts them; its `nodes_limit`). A module configuration has a
/// few thousand.
pub const MAX_NODES: u32 = 1_000_000;

/// Most pieces (runs of text and CDATA sections, one after the other) joined into one text node:
/// roxmltree copies the text joined so far at each join, so a million alternations of text and
/// CDATA would take time quadratic in their length. A module configuration has no text content.
pub const MAX_TEXT_PIECES: usize = 64;

/// What [`prescan`] refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// A start tag nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// An attribute past the [`MAX_ATTRIBUTES`]th of the element named here.
    TooManyAttributes(String),
    /// The node past the [`MAX_NODES`]th.
    TooManyNodes,
    /// The text piece past the [`MAX_TEXT_PIECES`]th of one text node.
    FragmentedText,
    /// The namespace declaration past the [`MAX_NAMESPACE_DECLARATIONS`]th of the file.
    TooManyNamespaces,
    /// A namespace declaration whose URI is longer than [`MAX_NAMESPACE_URI`] bytes.
    LongNamespaceUri,
}

/// Return where and why `text` is refused before roxmltree parses it, if it is: the first start
/// tag nested deeper than [`MAX_DEPTH`], the first attribute past the [`MAX_ATTRIBUTES`]th of
/// its element, the first node past the [`MAX_NODES`]th, or the first piece of text past the
/// [`MAX_TEXT_PIECES`]th of one text node.
pub(crate) fn prescan(text: &str) -> Option<(usize, Refusal)> {
    prescan_with(text, MAX_NODES as usize).err()
}

/// [`prescan`] with at most `max_nodes` nodes; return the number of nodes (as roxmltree counts
/// them) when nothing is refused.
///
/// A linear scan that skips comments, CDATA sections, processing instructions, declarations and
/// quoted attribute values; it only has to be exact on well-formed XML (malformed XML is
/// reported by roxmltree either way).
fn prescan_with(text: &str, max_nodes: usize) -> Result<usize, (usize, Refusal)> {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    let skip_to = |from: usize, pat: &str| -> usize {
        text.get(from..)
            .and_then(|t| t.find(pat))
            .map_or(b.len(), |k| from + k + pat.len())
    };
    // The document node.
    let mut nodes = 1usize;
    // Namespace declarations so far.
    let mut namespaces = 0usize;
    // Whether the last node is text, which the next piece of text joins (and its pieces).
    let mut after_text = false;
    let mut pieces = 0usize;
    let node = |at: usize, nodes: &mut usize| {
        *nodes += 1;
        if *nodes > max_nodes {
            Err((at, Refusal::TooManyNodes))
        } else {
            Ok(())
        }
    };
    // A run of text or a CDATA section at `at`: a new text node, or a piece of the last one.
    let mut text_piece = |at: usize, nodes: &mut usize, after_text: &mut bool| {
        if *after_text {
            pieces += 1;
            if pieces > MAX_TEXT_PIECES {
                return Err((at, Refusal::FragmentedText));
            }
            Ok(())
        } else {
            *after_text = true;
            pieces = 1;
            node(at, nodes)
        }
    };
    while i < b.len() {
        if b[i] != b'<' {
            // Text outside the root element is whitespace, which roxmltree skips.
            if depth > 0 {
                text_piece(i, &mut nodes, &mut after_text)?;
            }
            i = text
                .get(i..)
                .and_then(|t| t.find('<'))
                .map_or(b.len(), |k| i + k);
            continue;
        }
        let rest = &b[i..];
        if rest.starts_with(b"<!--") {
            node(i, &mut nodes)?;
            after_text = false;
            i = skip_to(i + 4, "-->");
        } else if rest.starts_with(b"<![CDATA[") {
            if depth > 0 {
                text_piece(i, &mut nodes, &mut after_text)?;
            }
            i = skip_to(i + 9, "]]>");
        } else if rest.starts_with(b"<?") {
            // A processing instruction; the XML declaration (`<?xml ...?>`) is not a node.
            let target_end = rest[2..]
                .iter()
                .position(|c| c.is_ascii_whitespace() || *c == b'?')
                .map_or(rest.len(), |k| k + 2);
            if &rest[2..target_end] != b"xml" {
                node(i, &mut nodes)?;
            }
            after_text = false;
            i = skip_to(i + 2, "?>");
        } else if rest.starts_with(b"<!") {
            i = skip_to(i + 2, ">");
        } else if rest.starts_with(b"</") {
            depth = depth.saturating_sub(1);
            after_text = false;
            i = skip_to(i + 2, ">");
        } else {
            let start = i;
            node(i, &mut nodes)?;
            after_text = false;
            let mut j = i + 1;
            let mut quote: Option<u8> = None;
            // Each attribute has one `=` outside quotes.
            let mut attributes = 0usize;
            while j < b.len() {
                match (quote, b[j]) {
                    (Some(q), c) if c == q => quote = None,
                    (Some(_), _) => {}
                    (None, c @ (b'"' | b'\'')) => quote = Some(c),
                    (None, b'>') => break,
                    (None, b'=') => {
                        attributes += 1;
                        let at = attribute_start(b, j);
                        if attributes > MAX_ATTRIBUTES {
                            return Err((at, Refusal::TooManyAttributes(tag_name_at(text, start))));
                        }
                        let name = b[at..j].trim_ascii_end();
                        if name == b"xmlns" || name.starts_with(b"xmlns:") {
                            namespaces += 1;
                            if namespaces > MAX_NAMESPACE_DECLARATIONS {
                                return Err((at, Refusal::TooManyNamespaces));
                            }
                            // The value: after spaces, in quotes. Read up to the limit only,
                            // so that the scan stays linear.
                            let mut k = j + 1;
                            while k < b.len() && b[k].is_ascii_whitespace() {
                                k += 1;
                            }
                            if let Some(&q @ (b'"' | b'\'')) = b.get(k) {
                                let end = (k + 2 + MAX_NAMESPACE_URI).min(b.len());
                                if !b[k + 1..end].contains(&q) && end - (k + 1) > MAX_NAMESPACE_URI
                                {
                                    return Err((at, Refusal::LongNamespaceUri));
                                }
                            }
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            let self_closing = j > 0 && j < b.len() && b[j - 1] == b'/';
            if !self_closing {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err((start, Refusal::TooDeep));
                }
            }
            i = j + 1;
        }
    }
    Ok(nodes)
}

/// Return where the attribute whose `=` is at `eq` starts (its name, before any spaces).
fn attribute_start(b: &[u8], eq: usize) -> usize {
    let mut k = eq;
    while k > 0 && b[k - 1].is_ascii_whitespace() {
        k -= 1;
    }
    while k > 0 && !b[k - 1].is_ascii_whitespace() && !matches!(b[k - 1], b'"' | b'\'' | b'<') {
        k -= 1;
    }
    k
}

/// Return the name of the tag starting at `start` (`<name ...`), at most 64 bytes of it.
fn tag_name_at(text: &str, start: usize) -> String {
    let rest = text.get(start + 1..).unwrap_or("");
    let end = rest
        .find(|c: char| c.is_ascii_whitespace() || c == '/' || c == '>')
        .unwrap_or(rest.len());
    let mut cut = end.min(64);
    while !rest.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut name = rest[..cut].to_string();
    if cut < end {
        name.push_str("...");
    }
    name
}

/// Turn a [`prescan`] refusal at byte `pos` of `text` into a located [`ConfigError`].
pub(crate) fn refusal_error(
    text: &str,
    file: Option<&Path>,
    pos: usize,
    refusal: Refusal,
) -> ConfigError {
    let (message, help) = match refusal {
        Refusal::TooDeep => (
            format!("elements are nested more than {MAX_DEPTH} levels deep"),
            "an ARINC_653_Module nests at most 6 levels; check for unclosed elements".to_string(),
        ),
        Refusal::TooManyAttributes(name) => (
            format!("<{name}> has more than {MAX_ATTRIBUTES} attributes"),
            "an element of a module configuration has a handful of attributes: remove the extra ones (is this file generated or corrupted?)".to_string(),
        ),
        Refusal::TooManyNodes => (too_many_nodes(), TOO_MANY_NODES_HELP.to_string()),
        Refusal::TooManyNamespaces => (
            format!("the file declares more than {MAX_NAMESPACE_DECLARATIONS} XML namespaces"),
            "a module configuration declares one or two (xmlns:partix=\"urn:partix:config:1\"), once on the root element: remove the others (is this file generated or corrupted?)".to_string(),
        ),
        Refusal::LongNamespaceUri => (
            format!("a namespace URI longer than {MAX_NAMESPACE_URI} bytes"),
            "a namespace URI is a few dozen bytes (xmlns:partix=\"urn:partix:config:1\"): shorten it (is this file generated or corrupted?)".to_string(),
        ),
        Refusal::FragmentedText => (
            format!("more than {MAX_TEXT_PIECES} pieces of text and CDATA sections in a row"),
            "a module configuration has no text content: remove the text, or write it in one piece".to_string(),
        ),
    };
    ConfigError {
        file: file.map(Path::to_path_buf),
        location: location_at(text, pos),
        message,
        help,
    }
}

fn too_many_nodes() -> String {
    format!("the file has more than {MAX_NODES} XML nodes (elements, text, comments)")
}

const TOO_MANY_NODES_HELP: &str = "a module configuration has a few thousand nodes: check that this is the module configuration, and remove repeated or generated elements";

/// Turn a roxmltree error into a located [`ConfigError`].
pub(crate) fn xml_error(text: &str, file: Option<&Path>, e: &roxmltree::Error) -> ConfigError {
    use roxmltree::Error as E;
    // Limits: roxmltree says which, not where (the pre-scan refuses too many nodes first, where
    // they are; these are the fallbacks).
    let limit = match e {
        E::NodesLimitReached => Some((too_many_nodes(), TOO_MANY_NODES_HELP)),
        E::AttributesLimitReached => Some((
            "the file has more than 2^32 attributes".to_string(),
            "check that this is the module configuration: it has a few hundred attributes",
        )),
        E::NamespacesLimitReached => Some((
            "the file declares more than 65535 distinct XML namespaces".to_string(),
            "declare each namespace once, on <ARINC_653_Module> (a module configuration needs the partix one and perhaps a vendor's)",
        )),
        _ => None,
    };
    if let Some((message, help)) = limit {
        return ConfigError {
            file: file.map(Path::to_path_buf),
            location: Location { line: 1, col: 1 },
            message,
            help: help.to_string(),
        };
    }
    let pos = e.pos();
    let location = match e {
        E::UnclosedRootNode | E::UnexpectedEndOfStream => location_at(text, text.len()),
        E::DtdDetected => location_at(text, text.find("<!DOCTYPE").unwrap_or(0)),
        _ => Location {
            line: pos.row,
            col: pos.col,
        },
    };
    let mut message = e.to_string();
    let suffix = format!(" at {pos}");
    if let Some(stripped) = message.strip_suffix(&suffix) {
        message = stripped.to_string();
    }
    let help = match e {
        E::DtdDetected => "remove the <!DOCTYPE ...> declaration: partix does not read DTDs",
        E::UnclosedRootNode | E::UnexpectedEndOfStream => {
            "the file ends early: close every open element (</ARINC_653_Module> last)"
        }
        E::UnexpectedCloseTag(..) => "make each closing tag match the element it closes",
        E::UnknownNamespace(..) => {
            "declare the prefix on the root element, e.g. xmlns:partix=\"urn:partix:config:1\""
        }
        E::DuplicatedAttribute(..) => "give each attribute once per element",
        _ => "fix the XML syntax at this position (check quotes, '<', '&' and closing tags)",
    }
    .to_string();
    ConfigError {
        file: file.map(Path::to_path_buf),
        location,
        message: format!("malformed XML: {message}"),
        help,
    }
}

/// Whether `a` and `b` are equal, comparing their addresses first (no byte read when they are
/// the same string, as the namespaces roxmltree shares between elements are).
fn same_str(a: &str, b: &str) -> bool {
    (std::ptr::eq(a.as_ptr(), b.as_ptr()) && a.len() == b.len()) || a == b
}

/// `s` for a message: at most 100 bytes of it, then `...`.
fn shorten(s: &str) -> String {
    const MAX: usize = 100;
    if s.len() <= MAX {
        return s.to_string();
    }
    let mut cut = MAX;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", &s[..cut])
}

fn tag(node: Node) -> String {
    format!("<{}>", node.tag_name().name())
}

impl<'a, 'i> Parser<'a, 'i> {
    /// Start parsing `doc`.
    pub fn new(doc: &'a Document<'i>, file: Option<&'a Path>) -> Self {
        Self {
            doc,
            file,
            arinc_ns: doc.root_element().tag_name().namespace(),
            lines: LineIndex::new(doc.input_text()),
            errors: ErrorSink::default(),
            system_states: Vec::new(),
        }
    }

    fn loc(&self, pos: usize) -> Location {
        self.lines.location(pos)
    }

    fn node_loc(&self, node: Node) -> Location {
        self.loc(node.range().start)
    }

    fn attr_loc(&self, a: &Attribute) -> Location {
        self.loc(a.range_value().start)
    }

    fn err(&mut self, location: Location, message: impl Into<String>, help: impl Into<String>) {
        self.errors.push(ConfigError {
            file: self.file.map(Path::to_path_buf),
            location,
            message: message.into(),
            help: help.into(),
        });
    }

    /// Check the attributes of `node`: unprefixed ones must be in `arinc`, partix ones in `partix`.
    fn check_attrs(&mut self, node: Node, arinc: &[&str], partix: &[&str]) {
        for a in node.attributes() {
            let loc = self.loc(a.range().start);
            match a.namespace() {
                None => {
                    if arinc.contains(&a.name()) {
                        continue;
                    }
                    if ALL_PARTIX_ATTRS.contains(&a.name()) {
                        self.err(
                            loc,
                            format!("`{}` on {} is a partix extension without its namespace", a.name(), tag(node)),
                            format!(
                                "write partix:{}=\"...\" and declare xmlns:partix=\"{PARTIX_NS}\" on <ARINC_653_Module>{}",
                                a.name(),
                                if partix.contains(&a.name()) { "" } else { " (and check which element it belongs on)" }
                            ),
                        );
                        continue;
                    }
                    let help = match value::closest(a.name(), arinc) {
                        Some(c) => format!("did you mean `{c}`?"),
                        None => {
                            format!("the attributes of {} are: {}", tag(node), arinc.join(", "))
                        }
                    };
                    self.err(
                        loc,
                        format!("unknown attribute `{}` on {}", a.name(), tag(node)),
                        help,
                    );
                }
                Some(PARTIX_NS) => {
                    if partix.contains(&a.name()) {
                        continue;
                    }
                    let help = match value::closest(a.name(), partix) {
                        Some(c) => format!("did you mean `partix:{c}`?"),
                        None if partix.is_empty() => {
                            format!("{} takes no partix extension", tag(node))
                        }
                        None => format!(
                            "the partix extensions of {} are: {}",
                            tag(node),
                            partix
                                .iter()
                                .map(|p| format!("partix:{p}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    };
                    self.err(
                        loc,
                        format!("unknown partix attribute `{}` on {}", a.name(), tag(node)),
                        help,
                    );
                }
                Some(ns) => {
                    if ALL_PARTIX_ATTRS.contains(&a.name()) && ns.starts_with("urn:partix") {
                        self.err(
                            loc,
                            format!(
                                "`{}` is in namespace `{}`, which partix does not know",
                                a.name(),
                                shorten(ns)
                            ),
                            format!("partix extensions live in xmlns:partix=\"{PARTIX_NS}\""),
                        );
                    }
                    // Other implementers' extensions: allowed by the schema, ignored.
                }
            }
        }
    }

    /// Report the prefix `partix` bound to another namespace than [`PARTIX_NS`] (a typo in the URI
    /// would make every partix attribute another implementer's extension, ignored: a partition
    /// would run without its program, or as root instead of its `partix:User`), once per URI,
    /// at the first element that has it in scope (the one that declares it).
    fn check_partix_prefix(&mut self) {
        let mut seen: Vec<&str> = Vec::new();
        let elements: Vec<Node<'a, 'i>> = self
            .doc
            .root_element()
            .descendants()
            .filter(Node::is_element)
            .collect();
        for e in elements {
            for ns in e.namespaces() {
                // By address first: every element in its scope shares the declaring element's
                // string, which a byte comparison would read whole each time.
                if ns.name() == Some("partix")
                    && ns.uri() != PARTIX_NS
                    && !seen.iter().any(|s| same_str(s, ns.uri()))
                {
                    seen.push(ns.uri());
                    let loc = self.node_loc(e);
                    self.err(
                        loc,
                        format!(
                            "the prefix `partix` is bound to `{}`, not to the partix namespace",
                            shorten(ns.uri())
                        ),
                        format!("declare xmlns:partix=\"{PARTIX_NS}\" (partix's extensions would be ignored otherwise)"),
                    );
                }
            }
        }
    }

    /// Report every child element of `node`, an element that has none (a forgotten `/` nests the
    /// next element inside it, which would otherwise disappear without a word).
    fn leaf(&mut self, node: Node<'a, 'i>) {
        let _ = self.children(node, &[]);
    }

    /// Return the element children of `node` in the ARINC vocabulary; report unknown ones.
    fn children(&mut self, node: Node<'a, 'i>, allowed: &[&str]) -> Vec<Node<'a, 'i>> {
        let mut out = Vec::new();
        for c in node.children().filter(Node::is_element) {
            let ns = c.tag_name().namespace();
            let name = c.tag_name().name();
            let loc = self.node_loc(c);
            let arinc = match (ns, self.arinc_ns) {
                (Some(a), Some(b)) => same_str(a, b),
                (a, b) => a == b,
            };
            if arinc {
                if allowed.contains(&name) {
                    out.push(c);
                } else {
                    if KNOWN_ELEMENTS.contains(&name) {
                        let help = if allowed.is_empty() && node.tag_name().name() == name {
                            format!(
                                "{} has no child elements: end it with \"/>\" (a forgotten \"/\" \
                                 puts the next <{name}> inside it)",
                                tag(node)
                            )
                        } else if allowed.is_empty() {
                            format!(
                                "{} has no child elements; move <{name}> to where it belongs",
                                tag(node)
                            )
                        } else {
                            format!(
                                "move it to where it belongs; {} may contain: {}",
                                tag(node),
                                allowed
                                    .iter()
                                    .map(|a| format!("<{a}>"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        };
                        self.err(
                            loc,
                            format!("<{name}> is not allowed inside {}", tag(node)),
                            help,
                        );
                        continue;
                    }
                    let help = match value::closest(name, allowed) {
                        Some(s) => format!("did you mean <{s}>?"),
                        None if allowed.is_empty() => {
                            format!("{} has no child elements", tag(node))
                        }
                        None => format!(
                            "{} may contain: {}",
                            tag(node),
                            allowed
                                .iter()
                                .map(|a| format!("<{a}>"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    };
                    self.err(
                        loc,
                        format!("unknown element <{name}> in {}", tag(node)),
                        help,
                    );
                }
            } else if ns == Some(PARTIX_NS) {
                self.err(
                    loc,
                    format!("unknown partix element <partix:{name}>"),
                    "partix extensions are attributes (partix:Executable, partix:Arguments, partix:Affinity, partix:DescriptorTable, partix:User on <Partition>, partix:Transport and partix:Delivery on <Channel>, partix:ReceiveMode on <Sampling_Port> and <Queuing_Port>)",
                );
            } else if KNOWN_ELEMENTS.contains(&name) {
                // An ARINC element name in another namespace (a stray xmlns="..." on it, or a
                // prefix bound to a mistyped URI) would be dropped with everything inside it.
                self.err(
                    loc,
                    format!(
                        "<{name}> is in namespace `{}`, not in the module's ({})",
                        shorten(ns.unwrap_or("")),
                        self.arinc_ns
                            .map_or("no namespace".to_string(), |n| format!("`{}`", shorten(n)))
                    ),
                    "remove the xmlns attribute or prefix that moved it (elements of other namespaces are extensions partix ignores)",
                );
            }
            // Other elements of other namespaces are implementer extensions: ignored.
        }
        out
    }

    fn attr(&self, node: Node<'a, 'i>, name: &str) -> Option<Attribute<'a, 'i>> {
        node.attributes()
            .find(|a| a.namespace().is_none() && a.name() == name)
    }

    fn pattr(&self, node: Node<'a, 'i>, name: &str) -> Option<Attribute<'a, 'i>> {
        node.attributes()
            .find(|a| a.namespace() == Some(PARTIX_NS) && a.name() == name)
    }

    fn missing(&mut self, node: Node, name: &str, example: &str) {
        // A misspelt attribute (`PeriodSecond`) is already reported as unknown with a
        // "did you mean `PeriodSeconds`?" hint; do not report the missing one twice.
        let misspelt = node.attributes().any(|a| {
            a.namespace().is_none()
                && a.name() != name
                && value::closest(a.name(), &[name]).is_some()
        });
        if misspelt {
            return;
        }
        let loc = self.node_loc(node);
        self.err(
            loc,
            format!("{} is missing the required attribute `{name}`", tag(node)),
            format!("add {name}=\"{example}\""),
        );
    }

    fn bad_value(&mut self, node: Node, a: &Attribute, e: ValueError) {
        let loc = self.attr_loc(a);
        let prefix = if a.namespace() == Some(PARTIX_NS) {
            "partix:"
        } else {
            ""
        };
        self.err(
            loc,
            format!("bad `{prefix}{}` on {}: {}", a.name(), tag(node), e.message),
            e.help,
        );
    }

    fn typed<T>(
        &mut self,
        node: Node<'a, 'i>,
        a: Attribute<'a, 'i>,
        f: impl Fn(&str) -> Result<T, ValueError>,
    ) -> Option<Loc<T>> {
        match f(a.value()) {
            Ok(v) => Some(Loc {
                v,
                loc: self.attr_loc(&a),
            }),
            Err(e) => {
                self.bad_value(node, &a, e);
                None
            }
        }
    }

    /// An optional attribute, parsed with `f`. `Err(())` = present but bad (already reported).
    fn opt<T>(
        &mut self,
        node: Node<'a, 'i>,
        name: &str,
        f: impl Fn(&str) -> Result<T, ValueError>,
    ) -> Result<Option<Loc<T>>, ()> {
        match self.attr(node, name) {
            None => Ok(None),
            Some(a) => self.typed(node, a, f).map(Some).ok_or(()),
        }
    }

    /// A required attribute, parsed with `f`; `None` if missing or bad (reported).
    fn req<T>(
        &mut self,
        node: Node<'a, 'i>,
        name: &str,
        example: &str,
        f: impl Fn(&str) -> Result<T, ValueError>,
    ) -> Option<Loc<T>> {
        match self.attr(node, name) {
            None => {
                self.missing(node, name, example);
                None
            }
            Some(a) => self.typed(node, a, f),
        }
    }

    fn text(s: &str) -> Result<String, ValueError> {
        if s.trim().is_empty() {
            Err(ValueError {
                message: "empty value".into(),
                help: "give a non-empty value".into(),
            })
        } else {
            Ok(s.to_string())
        }
    }

    fn name(s: &str) -> Result<String, ValueError> {
        let t = Self::text(s)?;
        // A line feed or an escape sequence would forge `FILE:L:C: error:` lines and break the
        // tables of `partix check` (review 27).
        if let Some(c) = t.chars().find(|c| c.is_control()) {
            let shown: String = shorten(&t).escape_debug().collect();
            return Err(ValueError {
                message: format!(
                    "the name \"{shown}\" contains the control character U+{:04X}",
                    u32::from(c)
                ),
                help: "names are printable text: remove the control character (a character reference such as &#10; or &#9; in the value)".into(),
            });
        }
        if t.trim() != t {
            return Err(ValueError {
                message: format!("`{t}` has leading or trailing spaces"),
                help: "remove the spaces around the name".into(),
            });
        }
        // NAME_TYPE is 30 bytes (`char[30]`), whatever the characters.
        if t.len() > MAX_NAME_LEN {
            let shown = if t.len() > 2 * MAX_NAME_LEN {
                let cut = (0..=2 * MAX_NAME_LEN)
                    .rev()
                    .find(|&i| t.is_char_boundary(i))
                    .unwrap_or(0);
                format!("{}...", &t[..cut])
            } else {
                t.clone()
            };
            return Err(ValueError {
                message: format!(
                    "`{shown}` is {} bytes long, more than {MAX_NAME_LEN}",
                    t.len()
                ),
                help: format!(
                    "use at most {MAX_NAME_LEN} bytes (the APEX NAME_TYPE is {MAX_NAME_LEN} bytes; a non-ASCII character takes 2 to 4 of them in UTF-8)"
                ),
            });
        }
        Ok(t)
    }

    fn enumeration<T: Copy>(
        table: &'static [(&'static str, T)],
    ) -> impl Fn(&str) -> Result<T, ValueError> {
        move |s: &str| {
            let s = s.trim();
            if let Some((_, v)) = table.iter().find(|(n, _)| *n == s) {
                return Ok(*v);
            }
            let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
            let help = match value::closest(s, &names) {
                Some(c) => format!("did you mean `{c}`? (one of {})", names.join(", ")),
                None => format!("use one of {}", names.join(", ")),
            };
            Err(ValueError {
                message: format!("unknown value `{s}`"),
                help,
            })
        }
    }

    fn seconds(s: &str) -> Result<Duration, ValueError> {
        value::parse_seconds(s)
    }

    /// Parse a partition reference (`PartitionIdentifier` required, `PartitionName` optional).
    fn part_ref(&mut self, node: Node<'a, 'i>) -> Option<RawPartRef> {
        let id = self.req(node, "PartitionIdentifier", "1", parse_identifier);
        let name = self.opt(node, "PartitionName", Self::name).ok()?;
        Some(RawPartRef { id: id?, name })
    }

    /// Parse the whole document.
    pub fn module(&mut self) -> RawModule {
        let root = self.doc.root_element();
        let mut m = RawModule {
            loc: self.node_loc(root),
            ..RawModule::default()
        };
        if root.tag_name().name() != "ARINC_653_Module" {
            let loc = self.node_loc(root);
            self.err(
                loc,
                format!("the root element is <{}>, not <ARINC_653_Module>", root.tag_name().name()),
                "an ARINC 653 module configuration starts with <ARINC_653_Module ModuleName=\"...\">",
            );
            return m;
        }
        self.check_partix_prefix();
        self.check_attrs(root, &["ModuleName", "ModuleVersion", "ModuleId"], &[]);
        m.name = self
            .opt(root, "ModuleName", Self::text)
            .ok()
            .flatten()
            .map(|l| l.v);
        m.version = self
            .opt(root, "ModuleVersion", Self::text)
            .ok()
            .flatten()
            .map(|l| l.v);
        let _ = self.opt(root, "ModuleId", value::parse_u32);

        let kids = self.children(
            root,
            &[
                "System_HM_Table",
                "Module_HM_Table",
                "Partition",
                "Partition_Memory",
                "Module_Schedule",
                "Partition_HM_Table",
                "Connection_Table",
            ],
        );
        let mut seen_single: Vec<(&str, Location)> = Vec::new();
        for c in kids {
            let name = c.tag_name().name();
            if matches!(
                name,
                "System_HM_Table" | "Module_HM_Table" | "Connection_Table"
            ) {
                let loc = self.node_loc(c);
                if let Some((_, first)) = seen_single.iter().find(|(n, _)| *n == name) {
                    let first = *first;
                    self.err(
                        loc,
                        format!(
                            "second <{name}> (the first is at {}:{})",
                            first.line, first.col
                        ),
                        format!("merge the two into one <{name}>"),
                    );
                    continue;
                }
                seen_single.push((name, loc));
            }
            match name {
                "System_HM_Table" => self.system_hm(c, &mut m.system_hm),
                "Module_HM_Table" => self.module_hm(c, &mut m.module_hm),
                "Partition" => {
                    if let Some(p) = self.partition(c) {
                        m.partitions.push(p);
                    }
                }
                "Partition_Memory" => {
                    if let Some(p) = self.memory(c) {
                        m.memories.push(p);
                    }
                }
                "Module_Schedule" => {
                    if let Some(s) = self.schedule(c) {
                        m.schedules.push(s);
                    }
                }
                "Partition_HM_Table" => {
                    if let Some(t) = self.partition_hm(c) {
                        m.partition_hms.push(t);
                    }
                }
                "Connection_Table" => self.connections(c, &mut m.channels),
                _ => {}
            }
        }
        m.system_states = std::mem::take(&mut self.system_states);
        m
    }

    fn partition(&mut self, node: Node<'a, 'i>) -> Option<RawPartition> {
        self.check_attrs(
            node,
            &[
                "PartitionIdentifier",
                "PartitionName",
                "Criticality",
                "SystemPartition",
                "EntryPoint",
            ],
            PARTIX_ATTRS_PARTITION,
        );
        let loc = self.node_loc(node);
        let r = self.part_ref(node);
        let criticality = self.opt(node, "Criticality", Self::enumeration(CRITICALITIES));
        let system_partition = self.opt(node, "SystemPartition", value::parse_bool);
        let entry_point = self.opt(node, "EntryPoint", Self::text);
        let executable = match self.pattr(node, "Executable") {
            Some(a) => self.typed(node, a, Self::text).ok_or(()).map(Some),
            None => Ok(None),
        };
        let args = self
            .pattr(node, "Arguments")
            .map(|a| a.value().split_whitespace().map(str::to_string).collect())
            .unwrap_or_default();
        let affinity = match self.pattr(node, "Affinity") {
            Some(a) => self.typed(node, a, parse_affinity).ok_or(()).map(Some),
            None => Ok(None),
        };
        let descriptor_table = match self.pattr(node, "DescriptorTable") {
            Some(a) => self
                .typed(node, a, Self::enumeration(DESCRIPTOR_TABLES))
                .ok_or(())
                .map(|l| l.v),
            None => Ok(DescriptorTable::Shared),
        };
        let user = match self.pattr(node, "User") {
            Some(a) => self.typed(node, a, parse_user).ok_or(()).map(Some),
            None => Ok(None),
        };
        let mut sampling = Vec::new();
        let mut queuing = Vec::new();
        for c in self.children(node, &["Sampling_Port", "Queuing_Port", "Process"]) {
            match c.tag_name().name() {
                "Sampling_Port" => {
                    if let Some(p) = self.sampling_port(c) {
                        sampling.push(p);
                    }
                }
                "Queuing_Port" => {
                    if let Some(p) = self.queuing_port(c) {
                        queuing.push(p);
                    }
                }
                _ => {
                    // Process: informational in partix (the partition code creates its processes).
                    self.leaf(c);
                    self.check_attrs(c, &["Name", "StackSize"], &[]);
                    let _ = self.opt(c, "Name", Self::name);
                    let _ = self.opt(c, "StackSize", value::parse_u64);
                }
            }
        }
        let r = r?;
        Some(RawPartition {
            id: r.id,
            name: r.name,
            criticality: criticality.ok()?.map_or(Criticality::LevelA, |l| l.v),
            system_partition: system_partition.ok()?.is_some_and(|l| l.v),
            entry_point: entry_point.ok()?.map(|l| l.v),
            executable: executable.ok()?,
            args,
            affinity: affinity.ok()?,
            descriptor_table: descriptor_table.ok()?,
            user: user.ok()?,
            sampling,
            queuing,
            loc,
        })
    }

    fn sampling_port(&mut self, node: Node<'a, 'i>) -> Option<SamplingPortConfig> {
        self.leaf(node);
        self.check_attrs(
            node,
            &["Name", "MaxMessageSize", "Direction", "RefreshRateSeconds"],
            PARTIX_ATTRS_PORT,
        );
        let name = self.req(node, "Name", "nav_state", Self::name);
        let size = self.req(
            node,
            "MaxMessageSize",
            "64",
            parse_size(MAX_SAMPLING_MESSAGE_SIZE, "sampling"),
        );
        let dir = self.req(node, "Direction", "SOURCE", Self::enumeration(DIRECTIONS));
        let refresh = self.req(node, "RefreshRateSeconds", "0.02", Self::seconds);
        let mode = self.receive_mode(node);
        Some(SamplingPortConfig {
            name: name?.v,
            max_message_size: size?.v,
            direction: dir?.v,
            refresh_period: refresh?.v,
            receive_mode: mode.ok()?,
            location: self.node_loc(node),
        })
    }

    fn queuing_port(&mut self, node: Node<'a, 'i>) -> Option<QueuingPortConfig> {
        self.leaf(node);
        self.check_attrs(
            node,
            &["Name", "MaxMessageSize", "Direction", "MaxNbMessages"],
            PARTIX_ATTRS_PORT,
        );
        let name = self.req(node, "Name", "commands", Self::name);
        let size = self.req(
            node,
            "MaxMessageSize",
            "32",
            parse_size(MAX_QUEUING_MESSAGE_SIZE, "queuing"),
        );
        let dir = self.req(node, "Direction", "SOURCE", Self::enumeration(DIRECTIONS));
        let nb = self.req(node, "MaxNbMessages", "8", parse_count);
        let mode = self.receive_mode(node);
        Some(QueuingPortConfig {
            name: name?.v,
            max_message_size: size?.v,
            direction: dir?.v,
            max_nb_messages: nb?.v,
            receive_mode: mode.ok()?,
            location: self.node_loc(node),
        })
    }

    /// `partix:ReceiveMode` of a port, if given (`Err` once reported).
    fn receive_mode(&mut self, node: Node<'a, 'i>) -> Result<Option<ReceiveMode>, ()> {
        match self.pattr(node, "ReceiveMode") {
            Some(a) => self
                .typed(node, a, parse_receive_mode)
                .ok_or(())
                .map(|l| Some(l.v)),
            None => Ok(None),
        }
    }

    fn memory(&mut self, node: Node<'a, 'i>) -> Option<RawMemory> {
        self.check_attrs(node, &["PartitionIdentifier", "PartitionName"], &[]);
        let part = self.part_ref(node);
        let mut regions = Vec::new();
        let mut ok = true;
        for c in self.children(node, &["Memory_Requirements"]) {
            self.leaf(c);
            self.check_attrs(
                c,
                &[
                    "RegionName",
                    "Type",
                    "SizeBytes",
                    "PhysicalAddress",
                    "Access",
                ],
                &[],
            );
            let name = self.opt(c, "RegionName", Self::text);
            let kind = self.req(c, "Type", "DATA", Self::enumeration(MEMORY_KINDS));
            let size = self.req(c, "SizeBytes", "0x100000", parse_memory_size);
            let _ = self.opt(c, "PhysicalAddress", value::parse_u64);
            let access = self.req(c, "Access", "READ_WRITE", Self::enumeration(MEMORY_ACCESS));
            match (name, kind, size, access) {
                (Ok(name), Some(kind), Some(size), Some(access)) => {
                    regions.push(MemoryRequirement {
                        name: name.map(|l| l.v),
                        kind: kind.v,
                        size_bytes: size.v,
                        access: access.v,
                    })
                }
                _ => ok = false,
            }
        }
        if !ok {
            return None;
        }
        Some(RawMemory {
            part: part?,
            regions,
            loc: self.node_loc(node),
        })
    }

    fn schedule(&mut self, node: Node<'a, 'i>) -> Option<RawSchedule> {
        self.check_attrs(
            node,
            &[
                "ScheduleIdentifier",
                "ScheduleName",
                "InitialModuleSchedule",
                "MajorFrameSeconds",
            ],
            &[],
        );
        let id = self.opt(node, "ScheduleIdentifier", parse_identifier);
        // GET_MODULE_SCHEDULE_ID takes a SCHEDULE_NAME_TYPE (a NAME_TYPE).
        let name = self.opt(node, "ScheduleName", Self::name);
        let initial = self.opt(node, "InitialModuleSchedule", value::parse_bool);
        let mf = self.req(node, "MajorFrameSeconds", "0.08", Self::seconds);
        let mut partitions = Vec::new();
        let mut ok = true;
        for c in self.children(node, &["Partition_Schedule"]) {
            self.check_attrs(
                c,
                &[
                    "PartitionIdentifier",
                    "PartitionName",
                    "PeriodSeconds",
                    "PeriodDurationSeconds",
                ],
                &[],
            );
            let part = self.part_ref(c);
            let period = self.req(c, "PeriodSeconds", "0.02", Self::seconds);
            let duration = self.req(c, "PeriodDurationSeconds", "0.01", Self::seconds);
            let mut windows = Vec::new();
            for w in self.children(c, &["Window_Schedule"]) {
                self.leaf(w);
                self.check_attrs(
                    w,
                    &[
                        "WindowIdentifier",
                        "WindowStartSeconds",
                        "WindowDurationSeconds",
                        "PartitionPeriodStart",
                    ],
                    &[],
                );
                let wid = self.req(w, "WindowIdentifier", "1", value::parse_u32);
                let start = self.req(w, "WindowStartSeconds", "0.0", Self::seconds);
                let dur = self.req(w, "WindowDurationSeconds", "0.01", Self::seconds);
                let ps = self.opt(w, "PartitionPeriodStart", value::parse_bool);
                match (wid, start, dur, ps) {
                    (Some(id), Some(start), Some(duration), Ok(ps)) => windows.push(RawWindow {
                        id,
                        start,
                        duration,
                        period_start: ps.is_some_and(|l| l.v),
                        loc: self.node_loc(w),
                    }),
                    _ => ok = false,
                }
            }
            match (part, period, duration) {
                (Some(part), Some(period), Some(duration)) => {
                    partitions.push(RawPartitionSchedule {
                        part,
                        period,
                        duration,
                        windows,
                        loc: self.node_loc(c),
                    })
                }
                _ => ok = false,
            }
        }
        if !ok {
            return None;
        }
        Some(RawSchedule {
            id: id.ok()?,
            name: name.ok()?,
            initial: initial.ok()?,
            major_frame: mf?,
            partitions,
            loc: self.node_loc(node),
        })
    }

    fn connections(&mut self, node: Node<'a, 'i>, out: &mut Vec<RawChannel>) {
        self.check_attrs(node, &[], &[]);
        for c in self.children(node, &["Channel"]) {
            self.check_attrs(
                c,
                &["ChannelIdentifier", "ChannelName"],
                PARTIX_ATTRS_CHANNEL,
            );
            let id = self.req(c, "ChannelIdentifier", "1", value::parse_u32);
            let name = self.opt(c, "ChannelName", Self::text);
            let transport = match self.pattr(c, "Transport") {
                Some(a) => self.typed(c, a, parse_transport).ok_or(()).map(Some),
                None => Ok(None),
            };
            let delivery = match self.pattr(c, "Delivery") {
                Some(a) => self.typed(c, a, parse_delivery).ok_or(()).map(Some),
                None => Ok(None),
            };
            let mut sources = Vec::new();
            let mut destinations = Vec::new();
            let mut ok = true;
            for end in self.children(c, &["Source", "Destination"]) {
                self.check_attrs(end, &[], &[]);
                let parts = self.children(end, &["Standard_Partition", "Pseudo_Partition"]);
                if parts.is_empty() {
                    let loc = self.node_loc(end);
                    self.err(
                        loc,
                        format!("{} names no port", tag(end)),
                        format!(
                            "add <Standard_Partition PartitionIdentifier=\"1\" PortName=\"...\"/> inside {}",
                            tag(end)
                        ),
                    );
                    ok = false;
                }
                for p in parts {
                    self.leaf(p);
                    if p.tag_name().name() == "Pseudo_Partition" {
                        let loc = self.node_loc(p);
                        self.err(
                            loc,
                            "<Pseudo_Partition> (a partition outside the module) is not supported",
                            "connect ports of partitions of this module with <Standard_Partition>",
                        );
                        ok = false;
                        continue;
                    }
                    self.check_attrs(
                        p,
                        &[
                            "PartitionIdentifier",
                            "PartitionName",
                            "PortName",
                            "PhysicalAddress",
                        ],
                        &[],
                    );
                    let part = self.part_ref(p);
                    let port = self.req(p, "PortName", "nav_state", Self::name);
                    let _ = self.opt(p, "PhysicalAddress", value::parse_u64);
                    match (part, port) {
                        (Some(part), Some(port)) => {
                            let r = RawPortRef {
                                part,
                                port,
                                loc: self.node_loc(p),
                            };
                            if end.tag_name().name() == "Source" {
                                sources.push(r);
                            } else {
                                destinations.push(r);
                            }
                        }
                        _ => ok = false,
                    }
                }
            }
            if let (Some(id), Ok(name), Ok(transport), Ok(delivery), true) =
                (id, name, transport, delivery, ok)
            {
                out.push(RawChannel {
                    id,
                    name,
                    transport,
                    delivery,
                    sources,
                    destinations,
                    loc: self.node_loc(c),
                });
            }
        }
    }

    /// Parse the `System_State_Entry` children of an HM table; call `entry` on each of their
    /// children named `child`.
    fn states(
        &mut self,
        node: Node<'a, 'i>,
        child: &str,
        mut entry: impl FnMut(&mut Self, u32, Node<'a, 'i>),
    ) {
        for s in self.children(node, &["System_State_Entry"]) {
            self.check_attrs(s, &["SystemState", "Description"], &[]);
            let state = self.req(s, "SystemState", "1", value::parse_u32);
            let kids = self.children(s, &[child]);
            if let Some(state) = state {
                self.system_states.push(state.clone());
                for k in kids {
                    self.leaf(k);
                    entry(self, state.v, k);
                }
            }
        }
    }

    fn system_hm(&mut self, node: Node<'a, 'i>, out: &mut Vec<RawSystemHm>) {
        self.check_attrs(node, &[], &[]);
        self.states(node, "Error_ID_Level", |p, state, e| {
            p.check_attrs(e, &["ErrorIdentifier", "Description", "ErrorLevel", "ErrorCode"], &[]);
            let id = p.req(e, "ErrorIdentifier", "1", value::parse_u32);
            let level = p.req(e, "ErrorLevel", "PARTITION", Self::enumeration(ERROR_LEVELS));
            let code = p.opt(e, "ErrorCode", Self::enumeration(ERROR_CODES));
            let code = match code {
                Ok(Some(c)) => Some(c),
                Ok(None) => {
                    // POK-style tables put the code name in Description.
                    let from_desc = p.attr(e, "Description").and_then(|a| {
                        ERROR_CODES
                            .iter()
                            .find(|(n, _)| *n == a.value().trim())
                            .map(|(_, c)| Loc {
                                v: *c,
                                loc: p.attr_loc(&a),
                            })
                    });
                    if from_desc.is_none() {
                        let loc = p.node_loc(e);
                        p.err(
                            loc,
                            "<Error_ID_Level> does not say which error code it stands for",
                            "add ErrorCode=\"...\" (DEADLINE_MISSED, APPLICATION_ERROR, NUMERIC_ERROR, ILLEGAL_REQUEST, STACK_OVERFLOW, MEMORY_VIOLATION, HARDWARE_FAULT, POWER_FAIL, PARTITION_CRASH, INIT_TIMEOUT)",
                        );
                    }
                    from_desc
                }
                Err(()) => None,
            };
            if let (Some(id), Some(level), Some(code)) = (id, level, code) {
                out.push(RawSystemHm {
                    state,
                    error_id: id,
                    level: level.v,
                    code,
                });
            }
        });
    }

    fn module_hm(&mut self, node: Node<'a, 'i>, out: &mut Vec<RawModuleHm>) {
        self.check_attrs(node, &["ModuleCallback"], &[]);
        self.states(node, "Error_ID_Action", |p, state, e| {
            p.check_attrs(e, &["ErrorIdentifier", "Description", "Action"], &[]);
            let id = p.req(e, "ErrorIdentifier", "1", value::parse_u32);
            let action = p.req(e, "Action", "SHUTDOWN", Self::enumeration(MODULE_ACTIONS));
            if let (Some(id), Some(action)) = (id, action) {
                out.push(RawModuleHm {
                    state,
                    error_id: id,
                    action: action.v,
                });
            }
        });
    }

    fn partition_hm(&mut self, node: Node<'a, 'i>) -> Option<RawPartitionHm> {
        self.check_attrs(
            node,
            &["PartitionIdentifier", "PartitionName", "PartitionCallback"],
            &[],
        );
        let part = self.part_ref(node);
        let mut entries = Vec::new();
        self.states(node, "Error_ID_Action", |p, state, e| {
            p.check_attrs(
                e,
                &["ErrorIdentifier", "Description", "Action", "ErrorCode"],
                &[],
            );
            let id = p.req(e, "ErrorIdentifier", "1", value::parse_u32);
            let action = p.req(
                e,
                "Action",
                "COLD_START",
                Self::enumeration(PARTITION_ACTIONS),
            );
            let code = p.opt(e, "ErrorCode", Self::enumeration(ERROR_CODES));
            if let (Some(id), Some(action), Ok(code)) = (id, action, code) {
                entries.push(RawPartitionHmEntry {
                    state,
                    error_id: id,
                    code,
                    action,
                });
            }
        });
        Some(RawPartitionHm {
            part: part?,
            entries,
            loc: self.node_loc(node),
        })
    }
}

/// `MaxMessageSize` of a `kind` port: a byte count in 1 ..= `max`.
fn parse_size(max: u32, kind: &'static str) -> impl Fn(&str) -> Result<u32, ValueError> {
    move |s: &str| {
        let v = value::parse_u64(s)?;
        if v == 0 {
            return Err(ValueError {
                message: "a message size of 0 bytes".into(),
                help: "give the largest message in bytes (at least 1)".into(),
            });
        }
        match u32::try_from(v) {
            Ok(v) if v <= max => Ok(v),
            _ => Err(ValueError {
                message: format!(
                    "{v} bytes is more than the largest {kind} message partix carries ({max} bytes, {} MiB)",
                    max >> 20
                ),
                help: format!(
                    "give MaxMessageSize at most {max}, and send larger data in several messages"
                ),
            }),
        }
    }
}

/// `PartitionIdentifier` / `ScheduleIdentifier`: 1 ..= [`MAX_IDENTIFIER`].
fn parse_identifier(s: &str) -> Result<u32, ValueError> {
    let v = value::parse_u64(s)?;
    let help = || {
        format!(
            "use an identifier from 1 to {MAX_IDENTIFIER} (APEX identifiers are APEX_INTEGER, a signed 32-bit integer)"
        )
    };
    if v == 0 {
        return Err(ValueError {
            message: "identifier 0".into(),
            help: help(),
        });
    }
    match u32::try_from(v) {
        Ok(id) if id <= MAX_IDENTIFIER => Ok(id),
        _ => Err(ValueError {
            message: format!("`{}` is above {MAX_IDENTIFIER}", s.trim()),
            help: help(),
        }),
    }
}

/// `SizeBytes` of `Memory_Requirements`: a byte count > 0.
fn parse_memory_size(s: &str) -> Result<u64, ValueError> {
    let v = value::parse_u64(s)?;
    if v == 0 {
        return Err(ValueError {
            message: "a memory region of 0 bytes".into(),
            help:
                "give the region's size in bytes (at least 1), or remove the <Memory_Requirements>"
                    .into(),
        });
    }
    Ok(v)
}

/// `MaxNbMessages`: a count in 1 ..= [`MAX_NB_MESSAGES`].
fn parse_count(s: &str) -> Result<u32, ValueError> {
    let v = value::parse_u64(s)?;
    if v == 0 {
        return Err(ValueError {
            message: "a queue of 0 messages".into(),
            help: "give the queue depth (at least 1)".into(),
        });
    }
    match u32::try_from(v) {
        Ok(v) if v <= MAX_NB_MESSAGES => Ok(v),
        _ => Err(ValueError {
            message: format!(
                "a queue of {v} messages is deeper than partix's queues ({MAX_NB_MESSAGES} messages, 2^24)"
            ),
            help: format!("give MaxNbMessages at most {MAX_NB_MESSAGES}"),
        }),
    }
}

/// `partix:Affinity`: `"0"` or `"0,1"`: distinct CPU numbers.
fn parse_affinity(s: &str) -> Result<Vec<usize>, ValueError> {
    let help = "list CPU numbers separated by commas, e.g. \"0\" or \"0,1\"";
    let mut cpus: Vec<usize> = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let cpu = value::parse_u32(part).map_err(|_| ValueError {
            message: format!("`{part}` is not a CPU number"),
            help: help.into(),
        })?;
        if cpu > 4095 {
            return Err(ValueError {
                message: format!(
                    "CPU {cpu} is beyond the largest CPU number Linux supports (4095)"
                ),
                help: help.into(),
            });
        }
        let cpu = cpu as usize;
        if cpus.contains(&cpu) {
            return Err(ValueError {
                message: format!("CPU {cpu} is listed twice"),
                help: "list each CPU once".into(),
            });
        }
        cpus.push(cpu);
    }
    Ok(cpus)
}

/// `partix:User`: `"UID"` or `"UID:GID"`, decimal ids below 4294967295 (`(uid_t)-1` means "no
/// change" to the kernel). Names are not looked up: a module's configuration means the same
/// user on every machine it is loaded on.
fn parse_user(s: &str) -> Result<Credentials, ValueError> {
    let help = "give a numeric user id, optionally with a group id: e.g. \"61001\" or \"61001:61001\" (user names are not looked up)";
    let id = |part: &str, what: &str, ty: &str| -> Result<u32, ValueError> {
        let part = part.trim();
        match value::parse_u32(part) {
            Ok(v) if v != u32::MAX => Ok(v),
            Ok(_) => Err(ValueError {
                message: format!("{what} id {part} is ({ty})-1, which means \"no id\""),
                help: help.into(),
            }),
            Err(_) => Err(ValueError {
                message: format!("`{part}` is not a numeric {what} id"),
                help: help.into(),
            }),
        }
    };
    let (u, g) = match s.split_once(':') {
        Some((u, g)) => (u, Some(g)),
        None => (s, None),
    };
    let uid = id(u, "user", "uid_t")?;
    let gid = match g {
        Some(g) => id(g, "group", "gid_t")?,
        None => uid,
    };
    if uid == 0 || gid == 0 {
        return Err(ValueError {
            message: format!(
                "{} 0 is root's: the partition would keep root's privileges",
                if uid == 0 { "user" } else { "group" }
            ),
            help: "give an unprivileged user and group, e.g. \"61001\" (leave partix:User out to run the partition with the executive's credentials)".into(),
        });
    }
    Ok(Credentials { uid, gid })
}

/// The values of `partix:ReceiveMode` (`spin-then-park` also as `spin-then-park:N`).
pub const RECEIVE_MODES: &[&str] = &["spin", "spin-then-park", "blocking"];

/// `partix:ReceiveMode`: one of [`RECEIVE_MODES`], or `spin-then-park:N` with N polls (1 ..
/// 4294967295).
fn parse_receive_mode(s: &str) -> Result<ReceiveMode, ValueError> {
    let t = s.trim();
    match t {
        "spin" => return Ok(ReceiveMode::Spin),
        "blocking" => return Ok(ReceiveMode::Blocking),
        "spin-then-park" => return Ok(ReceiveMode::SpinThenPark { spins: None }),
        _ => {}
    }
    if let Some(n) = t.strip_prefix("spin-then-park:") {
        return match n.trim().parse::<u32>() {
            Ok(k) if k > 0 => Ok(ReceiveMode::SpinThenPark { spins: Some(k) }),
            _ => Err(ValueError {
                message: format!("`{n}` is not a number of polls"),
                help: "write spin-then-park:N with N from 1 to 4294967295 (e.g. \
                       spin-then-park:2000), or `blocking` to sleep at once"
                    .into(),
            }),
        };
    }
    let help = match value::closest(t, RECEIVE_MODES) {
        Some(c) => format!(
            "did you mean `{c}`? (one of {}, or spin-then-park:N)",
            RECEIVE_MODES.join(", ")
        ),
        None => format!(
            "use one of {}, or spin-then-park:N",
            RECEIVE_MODES.join(", ")
        ),
    };
    Err(ValueError {
        message: format!("unknown receive mode `{t}`"),
        help,
    })
}

/// `partix:Delivery`: one of [`DELIVERIES`].
fn parse_delivery(s: &str) -> Result<Delivery, ValueError> {
    match s.trim() {
        "helped" => return Ok(Delivery::Helped),
        "manager" => return Ok(Delivery::Manager),
        _ => {}
    }
    let t = s.trim();
    let help = match value::closest(t, DELIVERIES) {
        Some(c) => format!("did you mean `{c}`? (one of {})", DELIVERIES.join(", ")),
        None => format!("use one of {}", DELIVERIES.join(", ")),
    };
    Err(ValueError {
        message: format!("unknown delivery `{t}`"),
        help,
    })
}

/// `partix:Transport`: one of [`TRANSPORTS`].
fn parse_transport(s: &str) -> Result<String, ValueError> {
    let t = s.trim();
    if TRANSPORTS.contains(&t) {
        return Ok(t.to_string());
    }
    let help = match value::closest(t, TRANSPORTS) {
        Some(c) => format!("did you mean `{c}`? (one of {})", TRANSPORTS.join(", ")),
        None => format!("use one of {}", TRANSPORTS.join(", ")),
    };
    Err(ValueError {
        message: format!("unknown transport `{t}`"),
        help,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_scan() {
        assert_eq!(
            prescan("<a><b/><c x='>'><!-- <d> --><![CDATA[<e>]]></c></a>"),
            None
        );
        let deep = format!(
            "{}{}",
            "<a>".repeat(MAX_DEPTH + 1),
            "</a>".repeat(MAX_DEPTH + 1)
        );
        assert_eq!(prescan(&deep), Some((3 * MAX_DEPTH, Refusal::TooDeep)));
        let ok = format!("{}{}", "<a>".repeat(MAX_DEPTH), "</a>".repeat(MAX_DEPTH));
        assert_eq!(prescan(&ok), None);
        let siblings = "<a><b></b></a>".repeat(1000);
        assert_eq!(prescan(&siblings), None);
    }

    #[test]
    fn attribute_count_scan() {
        let attrs = |n: usize, sep: &str| -> String {
            (0..n).map(|i| format!(" a{i}{sep}'x=\"y'")).collect()
        };
        let ok = format!(
            "<r{}><e{}/></r>",
            attrs(MAX_ATTRIBUTES, "="),
            attrs(MAX_ATTRIBUTES, " = ")
        );
        assert_eq!(prescan(&ok), None);
        // The first attribute past the limit, at its name.
        let many = format!("<r><long-name{}/></r>", attrs(MAX_ATTRIBUTES + 1, " = "));
        let at = many.find(&format!(" a{MAX_ATTRIBUTES} ")).unwrap() + 1;
        assert_eq!(
            prescan(&many),
            Some((at, Refusal::TooManyAttributes("long-name".into())))
        );
        // `=` inside values, comments and text is not counted.
        let text = format!(
            "<r a='{}'><!-- {} -->{}</r>",
            "=".repeat(100),
            "=".repeat(100),
            "=".repeat(100)
        );
        assert_eq!(prescan(&text), None);
        // A huge tag name is cut in the message.
        let name = "n".repeat(1000);
        let e = refusal_error(
            "",
            None,
            0,
            Refusal::TooManyAttributes(tag_name_at(&format!("<{name} a=''>"), 0)),
        );
        assert!(e.message.len() < 120, "{}", e.message);
    }

    /// The pre-scan counts nodes as roxmltree does, so its limit is roxmltree's, located.
    #[test]
    fn node_count_agrees_with_roxmltree() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut texts: Vec<String> = Vec::new();
        for dir in ["tests/good", "tests/bad", "../../examples/uav"] {
            for e in std::fs::read_dir(root.join(dir)).unwrap() {
                let p = e.unwrap().path();
                if p.extension().is_some_and(|x| x == "xml") {
                    texts.push(std::fs::read_to_string(p).unwrap());
                }
            }
        }
        texts.extend(
            [
                "<?xml version='1.0'?>\n<!-- c --><?pi x?>\n<r>\n  <a/>text<![CDATA[x]]>more<!--c--><![CDATA[]]>\n<?p?>&amp;\r\n</r>\n<!-- after -->\n",
                "<r><![CDATA[a]]><![CDATA[b]]>c<b>d</b><c/></r>",
                "<r a='<!--'>x<?xml-stylesheet href='a'?>y</r>",
                "\u{feff}<r/>",
                "<r>\t</r>",
            ]
            .map(String::from),
        );
        let mut checked = 0;
        for t in &texts {
            let Ok(doc) = Document::parse(t) else {
                continue;
            };
            match prescan_with(t, usize::MAX) {
                Err((_, Refusal::TooManyAttributes(_))) => continue,
                got => assert_eq!(got, Ok(doc.descendants().count()), "{t}"),
            }
            checked += 1;
        }
        assert!(checked > 60, "{checked}");
    }

    #[test]
    fn node_and_text_limits() {
        // MAX_NODES nodes: the document, the root and MAX_NODES - 2 elements.
        let n = MAX_NODES as usize;
        let ok = format!("<r>{}</r>", "<a/>".repeat(n - 2));
        assert_eq!(prescan(&ok), None);
        let opts = roxmltree::ParsingOptions {
            allow_dtd: false,
            nodes_limit: MAX_NODES,
        };
        assert!(Document::parse_with_options(&ok, opts).is_ok());
        let over = format!("<r>{}<!--x--></r>", "<a/>".repeat(n - 2));
        assert_eq!(
            prescan(&over),
            Some((over.len() - 12, Refusal::TooManyNodes))
        );
        let e = Document::parse_with_options(&over, opts).unwrap_err();
        assert!(matches!(e, roxmltree::Error::NodesLimitReached));
        // Text pieces joined into one node.
        let pieces = |k: usize| format!("<r>{}</r>", "x<![CDATA[y]]>".repeat(k / 2));
        assert_eq!(prescan(&pieces(MAX_TEXT_PIECES)), None);
        let many = pieces(MAX_TEXT_PIECES + 2);
        assert_eq!(
            prescan(&many),
            Some((3 + 14 * (MAX_TEXT_PIECES / 2), Refusal::FragmentedText))
        );
        // Text pieces separated by a comment or an element are separate nodes.
        let apart = format!("<r>{}</r>", "x<![CDATA[y]]><!---->".repeat(1000));
        assert_eq!(prescan(&apart), None);
    }

    /// roxmltree's limits get their own messages (it does not say where they were reached).
    #[test]
    fn xml_limits_are_explained() {
        use roxmltree::Error as E;
        for (e, what, help) in [
            (
                E::NodesLimitReached,
                "more than 1000000 XML nodes",
                "few thousand",
            ),
            (
                E::AttributesLimitReached,
                "2^32 attributes",
                "module configuration",
            ),
            (
                E::NamespacesLimitReached,
                "65535 distinct XML namespaces",
                "once",
            ),
        ] {
            let c = xml_error("<a/>", None, &e);
            assert!(c.message.contains(what), "{}", c.message);
            assert!(!c.message.contains("malformed"), "{}", c.message);
            assert!(c.help.contains(help), "{}", c.help);
            assert_eq!(c.location, Location { line: 1, col: 1 });
        }
    }

    #[test]
    fn line_index_agrees_with_roxmltree() {
        let text = "<a>\n  <b x='é'/>\n\n<c/></a>";
        let doc = Document::parse(text).unwrap();
        let idx = LineIndex::new(text);
        for (pos, _) in text.char_indices() {
            let p = doc.text_pos_at(pos);
            assert_eq!(
                idx.location(pos),
                Location {
                    line: p.row,
                    col: p.col
                },
                "at {pos}"
            );
            assert_eq!(location_at(text, pos), idx.location(pos));
        }
    }

    /// Columns on long non-ASCII lines, counted from checkpoints, agree with a count from the
    /// start: characters of 1 to 4 bytes on both sides of (and across) checkpoints, on several
    /// lines, the first of them ASCII.
    #[test]
    fn line_index_checkpoints_agree_with_a_full_count() {
        let mut text = String::from("<a x='plain ascii line'>\n");
        let pieces = ["é", "x", "€", "𝄞", "ab", "\u{7ff}"];
        for line in 0..3 {
            for i in 0..(3 * CHECKPOINT_BYTES + 17 * line) {
                text.push_str(pieces[(i * 7 + line) % pieces.len()]);
            }
            text.push('\n');
        }
        text.push_str("</a>");
        let idx = LineIndex::new(&text);
        assert!(idx.checkpoints.len() > 8);
        for (pos, _) in text.char_indices() {
            assert_eq!(idx.location(pos), location_at(&text, pos), "at {pos}");
        }
        assert_eq!(idx.location(text.len()), location_at(&text, text.len()));
    }

    #[test]
    fn names_are_at_most_30_bytes() {
        assert!(Parser::name(&"x".repeat(30)).is_ok());
        assert!(Parser::name(&"x".repeat(31)).is_err());
        // 15 two-byte characters fill NAME_TYPE; 16 do not fit, though they are 16 characters.
        assert!(Parser::name(&"é".repeat(15)).is_ok());
        let e = Parser::name(&"é".repeat(16)).unwrap_err();
        assert!(e.message.contains("32 bytes"), "{}", e.message);
        // A huge name is not echoed whole.
        let e = Parser::name(&"é".repeat(50_000)).unwrap_err();
        assert!(e.message.len() < 120, "{}", e.message);
        assert!(e.message.contains("100000 bytes"), "{}", e.message);
    }

    #[test]
    fn location_of_offsets() {
        assert_eq!(location_at("ab\ncd", 4), Location { line: 2, col: 2 });
        assert_eq!(location_at("ab", 99), Location { line: 1, col: 3 });
    }
}
