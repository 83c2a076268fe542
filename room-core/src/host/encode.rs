//! The one encoding of the host's [`Output`]s for drivers across a language boundary.
//!
//! [`encode_output`] walks an output once and hands an [`OutputSink`] its kind, then
//! each field in a fixed order, with its name. The faces only decide how a value lands:
//! the C library's sink writes one JSON object ([`output_json`]: `{"t": <kind name>,
//! …fields}`), the Node addon's pushes the values onto a flat array (the kind's number,
//! then the fields, names dropped). The kinds' names and numbers are [`OutputKind`]'s;
//! the Node shell reads them from the addon ([`output_kinds_json`]) instead of keeping
//! a copy.
//!
//! | kind | fields |
//! |---|---|
//! | `started`, `stopAccepting`, `mintLease`, `closeUpstream` | — |
//! | `startFailed` | `reason` |
//! | `stopped` | `moved` (flag) |
//! | `stranded` | `mutations` (JSON: `[{doc, clientID, mid, name}]`) |
//! | `live` | `bootId` |
//! | `send` | `conn`, `class` (`plain` / `live` / `snapshot`), `text` |
//! | `close` | `conn`, `code`, `reason`, `discardQueued` (flag) |
//! | `terminate` | `conn` |
//! | `openUpstream` | `link` |
//! | `upstreamSend` | `link`, `text` |
//! | `journalRead` | `io` |
//! | `journalAppend` | `io`, `entries` (JSON, the published room's entry shape) |
//! | `journalAppendFlush` | `io`, `record` (JSON: `{seq, epoch, body}`) |
//! | `journalConfirmFlush` | `io`, `seq` |
//! | `journalCompact` | `io`, `durable` (JSON: `{clientID: lmid}`) |
//! | `authorityClaim` | `io`, `doc`, `body` |
//! | `authorityLmids` | `io`, `doc`, `clients` (JSON: `[clientID]`), `body` |
//! | `authorityApply` | `io`, `body` |
//! | `controlReply` | `id`, `reply`: {`kind`, `value` (JSON; absent for `flushed` / `stopped`)} |
//! | `log` | `level` (`debug` / `info` / `warn` / `error`), `text` |

use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use core::fmt::Write as _;

use super::{ControlReply, FlushRecord, JournalEntry, Level, Output, SendClass};
use crate::json::write::write_str;

/// The kind of an [`Output`]: its name (lower camel case) and its number in the flat
/// encoding. The numbers never change meaning; a new kind takes the next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
#[non_exhaustive]
pub enum OutputKind {
    /// [`Output::Started`].
    Started = 0,
    /// [`Output::StartFailed`].
    StartFailed = 1,
    /// [`Output::StopAccepting`].
    StopAccepting = 2,
    /// [`Output::Stopped`].
    Stopped = 3,
    /// [`Output::Live`].
    Live = 4,
    /// [`Output::Send`].
    Send = 5,
    /// [`Output::Close`].
    Close = 6,
    /// [`Output::Terminate`].
    Terminate = 7,
    /// [`Output::MintLease`].
    MintLease = 8,
    /// [`Output::OpenUpstream`].
    OpenUpstream = 9,
    /// [`Output::CloseUpstream`].
    CloseUpstream = 10,
    /// [`Output::UpstreamSend`].
    UpstreamSend = 11,
    /// [`Output::JournalRead`].
    JournalRead = 12,
    /// [`Output::JournalAppend`].
    JournalAppend = 13,
    /// [`Output::JournalAppendFlush`].
    JournalAppendFlush = 14,
    /// [`Output::JournalConfirmFlush`].
    JournalConfirmFlush = 15,
    /// [`Output::JournalCompact`].
    JournalCompact = 16,
    /// [`Output::AuthorityClaim`].
    AuthorityClaim = 17,
    /// [`Output::AuthorityLmids`].
    AuthorityLmids = 18,
    /// [`Output::AuthorityApply`].
    AuthorityApply = 19,
    /// [`Output::ControlReply`].
    ControlReply = 20,
    /// [`Output::Log`].
    Log = 21,
    /// [`Output::Stranded`].
    Stranded = 22,
    /// [`Output::PingUpstream`].
    PingUpstream = 23,
    /// [`Output::Ping`].
    Ping = 24,
}

impl OutputKind {
    /// Every kind, in number order.
    pub const ALL: [OutputKind; 25] = [
        OutputKind::Started,
        OutputKind::StartFailed,
        OutputKind::StopAccepting,
        OutputKind::Stopped,
        OutputKind::Live,
        OutputKind::Send,
        OutputKind::Close,
        OutputKind::Terminate,
        OutputKind::MintLease,
        OutputKind::OpenUpstream,
        OutputKind::CloseUpstream,
        OutputKind::UpstreamSend,
        OutputKind::JournalRead,
        OutputKind::JournalAppend,
        OutputKind::JournalAppendFlush,
        OutputKind::JournalConfirmFlush,
        OutputKind::JournalCompact,
        OutputKind::AuthorityClaim,
        OutputKind::AuthorityLmids,
        OutputKind::AuthorityApply,
        OutputKind::ControlReply,
        OutputKind::Log,
        OutputKind::Stranded,
        OutputKind::PingUpstream,
        OutputKind::Ping,
    ];

    /// The kind's number in the flat encoding.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The kind's name: the JSON encoding's `t`.
    pub const fn name(self) -> &'static str {
        match self {
            OutputKind::Started => "started",
            OutputKind::StartFailed => "startFailed",
            OutputKind::StopAccepting => "stopAccepting",
            OutputKind::Stopped => "stopped",
            OutputKind::Live => "live",
            OutputKind::Send => "send",
            OutputKind::Close => "close",
            OutputKind::Terminate => "terminate",
            OutputKind::MintLease => "mintLease",
            OutputKind::OpenUpstream => "openUpstream",
            OutputKind::CloseUpstream => "closeUpstream",
            OutputKind::UpstreamSend => "upstreamSend",
            OutputKind::JournalRead => "journalRead",
            OutputKind::JournalAppend => "journalAppend",
            OutputKind::JournalAppendFlush => "journalAppendFlush",
            OutputKind::JournalConfirmFlush => "journalConfirmFlush",
            OutputKind::JournalCompact => "journalCompact",
            OutputKind::AuthorityClaim => "authorityClaim",
            OutputKind::AuthorityLmids => "authorityLmids",
            OutputKind::AuthorityApply => "authorityApply",
            OutputKind::ControlReply => "controlReply",
            OutputKind::Log => "log",
            OutputKind::Stranded => "stranded",
            OutputKind::PingUpstream => "pingUpstream",
            OutputKind::Ping => "ping",
        }
    }
}

/// Where [`encode_output`] puts an output: its kind first, then its fields in order.
/// Values come owned where the output owned them, so a sink keeps them without a copy.
pub trait OutputSink {
    /// The output's kind (first, once).
    fn kind(&mut self, kind: OutputKind);
    /// An integer field (ids, codes, sequence numbers).
    fn number(&mut self, name: &'static str, value: u64);
    /// A boolean field.
    fn flag(&mut self, name: &'static str, value: bool);
    /// A text field (a frame, a reason, a document id, a body).
    fn text(&mut self, name: &'static str, value: String);
    /// A field whose value is one of a fixed set of names (a send class, a log level,
    /// a control reply's kind).
    fn word(&mut self, name: &'static str, value: &'static str);
    /// A field whose value is JSON text (entries, records, maps, lists).
    fn json(&mut self, name: &'static str, value: String);
    /// A JSON field that some outputs of the kind leave out.
    fn optional_json(&mut self, name: &'static str, value: Option<String>);
    /// A journal append's entries. By default JSON entry objects (what a C driver reads
    /// and hands back); a driver whose journals keep the records opaque writes
    /// [`super::json::records_json`] instead.
    fn journal_entries(&mut self, name: &'static str, entries: &[JournalEntry]) {
        self.json(name, super::json::entries_json(entries));
    }
    /// The fields that follow, up to [`OutputSink::end`], form object `name`.
    fn begin(&mut self, name: &'static str);
    /// Closes the object [`OutputSink::begin`] opened.
    fn end(&mut self);
}

/// Hands `output`'s kind and fields to `sink`, in the order of the module docs' table.
pub fn encode_output<S: OutputSink + ?Sized>(output: Output, sink: &mut S) {
    match output {
        Output::Started => sink.kind(OutputKind::Started),
        Output::StartFailed { reason } => {
            sink.kind(OutputKind::StartFailed);
            sink.text("reason", reason);
        }
        Output::StopAccepting => sink.kind(OutputKind::StopAccepting),
        Output::Stopped { moved } => {
            sink.kind(OutputKind::Stopped);
            sink.flag("moved", moved);
        }
        Output::Stranded { mutations } => {
            sink.kind(OutputKind::Stranded);
            let mut s = String::new();
            crate::texts::write_stranded(&mut s, &mutations);
            sink.json("mutations", s);
        }
        Output::Live { boot_id } => {
            sink.kind(OutputKind::Live);
            sink.text("bootId", boot_id);
        }
        Output::Send { conn, text, class } => {
            sink.kind(OutputKind::Send);
            sink.number("conn", conn);
            sink.word("class", class_name(class));
            sink.text("text", text);
        }
        Output::Close {
            conn,
            code,
            reason,
            discard_queued,
        } => {
            sink.kind(OutputKind::Close);
            sink.number("conn", conn);
            sink.number("code", u64::from(code));
            sink.text("reason", reason);
            sink.flag("discardQueued", discard_queued);
        }
        Output::Terminate { conn } => {
            sink.kind(OutputKind::Terminate);
            sink.number("conn", conn);
        }
        Output::MintLease => sink.kind(OutputKind::MintLease),
        Output::OpenUpstream { link } => {
            sink.kind(OutputKind::OpenUpstream);
            sink.number("link", link);
        }
        Output::CloseUpstream => sink.kind(OutputKind::CloseUpstream),
        Output::PingUpstream { link } => {
            sink.kind(OutputKind::PingUpstream);
            sink.number("link", link);
        }
        Output::Ping { conn } => {
            sink.kind(OutputKind::Ping);
            sink.number("conn", conn);
        }
        Output::UpstreamSend { link, text } => {
            sink.kind(OutputKind::UpstreamSend);
            sink.number("link", link);
            sink.text("text", text);
        }
        Output::JournalRead { io } => {
            sink.kind(OutputKind::JournalRead);
            sink.number("io", io);
        }
        Output::JournalAppend { io, entries } => {
            sink.kind(OutputKind::JournalAppend);
            sink.number("io", io);
            sink.journal_entries("entries", &entries);
        }
        Output::JournalAppendFlush { io, record } => {
            sink.kind(OutputKind::JournalAppendFlush);
            sink.number("io", io);
            sink.json("record", record_json(&record));
        }
        Output::JournalConfirmFlush { io, seq } => {
            sink.kind(OutputKind::JournalConfirmFlush);
            sink.number("io", io);
            sink.number("seq", seq);
        }
        Output::JournalCompact { io, durable } => {
            sink.kind(OutputKind::JournalCompact);
            sink.number("io", io);
            sink.json("durable", durable_json(&durable));
        }
        Output::AuthorityClaim { io, doc } => {
            sink.kind(OutputKind::AuthorityClaim);
            sink.number("io", io);
            let body = super::claim_body(&doc);
            sink.text("doc", doc);
            sink.text("body", body);
        }
        Output::AuthorityLmids { io, doc, clients } => {
            sink.kind(OutputKind::AuthorityLmids);
            sink.number("io", io);
            let body = super::lmids_body(&doc, &clients);
            sink.text("doc", doc);
            let mut list = String::from("[");
            for (i, c) in clients.iter().enumerate() {
                if i > 0 {
                    list.push(',');
                }
                write_str(&mut list, c);
            }
            list.push(']');
            sink.json("clients", list);
            sink.text("body", body);
        }
        Output::AuthorityApply { io, body } => {
            sink.kind(OutputKind::AuthorityApply);
            sink.number("io", io);
            sink.text("body", body);
        }
        Output::ControlReply { id, reply } => {
            sink.kind(OutputKind::ControlReply);
            sink.number("id", id);
            sink.begin("reply");
            let (kind, value) = reply_parts(reply);
            sink.word("kind", kind);
            sink.optional_json("value", value);
            sink.end();
        }
        Output::Log { level, text } => {
            sink.kind(OutputKind::Log);
            sink.word("level", level_name(level));
            sink.text("text", text);
        }
    }
}

/// `{seq, epoch, body}`.
fn record_json(r: &FlushRecord) -> String {
    let mut s = String::with_capacity(r.body.len() + 48);
    // Writing to a String cannot fail.
    let _ = write!(s, "{{\"seq\":{},\"epoch\":{},\"body\":", r.seq, r.epoch);
    write_str(&mut s, &r.body);
    s.push('}');
    s
}

/// `{clientID: lmid}`.
fn durable_json(durable: &BTreeMap<String, u64>) -> String {
    let mut s = String::from("{");
    for (i, (c, l)) in durable.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        write_str(&mut s, c);
        let _ = write!(s, ":{l}");
    }
    s.push('}');
    s
}

/// A control reply's kind and its value as JSON (none for `flushed` / `stopped`).
fn reply_parts(r: ControlReply) -> (&'static str, Option<String>) {
    match r {
        ControlReply::Stats(s) => ("stats", Some(s)),
        ControlReply::Health(h) => ("health", Some(h.to_string())),
        ControlReply::Ready(r) => ("ready", Some(r.to_string())),
        ControlReply::Revoked(n) => ("revoked", Some(n.to_string())),
        ControlReply::Drained(Ok(seq)) => ("drained", Some(seq.to_string())),
        ControlReply::Drained(Err(e)) => {
            let mut s = String::new();
            write_str(&mut s, &e.to_string());
            ("drainFailed", Some(s))
        }
        ControlReply::Flushed => ("flushed", None),
        ControlReply::Stopped => ("stopped", None),
    }
}

fn class_name(c: SendClass) -> &'static str {
    match c {
        SendClass::Plain => "plain",
        SendClass::Live => "live",
        SendClass::Snapshot => "snapshot",
    }
}

fn level_name(l: Level) -> &'static str {
    match l {
        Level::Debug => "debug",
        Level::Info => "info",
        Level::Warn => "warn",
        Level::Error => "error",
    }
}

/// The JSON sink: one object per output.
struct JsonSink {
    s: String,
    /// No field written yet in the innermost object (no comma before the next one).
    fresh: bool,
}

impl JsonSink {
    fn key(&mut self, name: &str) {
        if !self.fresh {
            self.s.push(',');
        }
        self.fresh = false;
        self.s.push('"');
        self.s.push_str(name);
        self.s.push_str("\":");
    }
}

impl OutputSink for JsonSink {
    fn kind(&mut self, kind: OutputKind) {
        self.s.push_str("{\"t\":\"");
        self.s.push_str(kind.name());
        self.s.push('"');
        self.fresh = false;
    }
    fn number(&mut self, name: &'static str, value: u64) {
        self.key(name);
        let _ = write!(self.s, "{value}");
    }
    fn flag(&mut self, name: &'static str, value: bool) {
        self.key(name);
        self.s.push_str(if value { "true" } else { "false" });
    }
    fn text(&mut self, name: &'static str, value: String) {
        self.key(name);
        write_str(&mut self.s, &value);
    }
    fn word(&mut self, name: &'static str, value: &'static str) {
        self.key(name);
        write_str(&mut self.s, value);
    }
    fn json(&mut self, name: &'static str, value: String) {
        self.key(name);
        self.s.push_str(&value);
    }
    fn optional_json(&mut self, name: &'static str, value: Option<String>) {
        if let Some(v) = value {
            self.json(name, v);
        }
    }
    fn begin(&mut self, name: &'static str) {
        self.key(name);
        self.s.push('{');
        self.fresh = true;
    }
    fn end(&mut self) {
        self.s.push('}');
        self.fresh = false;
    }
}

/// One output as a JSON object: `{"t": <kind name>, …fields}`, the fields as in the
/// module docs' table (JSON fields embedded as values).
pub fn output_json(output: Output) -> String {
    let mut sink = JsonSink {
        s: String::with_capacity(64),
        fresh: true,
    };
    encode_output(output, &mut sink);
    sink.s.push('}');
    sink.s
}

/// Every kind as a JSON object `{name: number}`, for a driver that reads the flat
/// encoding (the Node shell).
pub fn output_kinds_json() -> String {
    let mut s = String::from("{");
    for (i, k) in OutputKind::ALL.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        write_str(&mut s, k.name());
        let _ = write!(s, ":{}", k.code());
    }
    s.push('}');
    s
}

#[cfg(test)]
mod tests;
