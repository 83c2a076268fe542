//! The journals' side of the addon.
//!
//! - `NativeFileJournal`: the server's durable file journal (`rindle-room-journal`), so a
//!   journal written by the smol server boots the Node shell and back — one format, one
//!   implementation. Every write runs on libuv's thread pool (its `fsync` never blocks
//!   the event loop) and resolves only once durable. `shell/file-journal.js` wraps it as
//!   `fileJournal(path)` with the `RoomJournal` methods.
//! - `compactJournalRecords` and `journalRecordOutcome`: what a JavaScript journal needs
//!   to know about the opaque records it stores, answered by the one record codec
//!   ([`rindle_room_core::host::journal_record`]).

// napi-rs registers the `#[napi]` functions below only outside `cfg(test)`.
#![cfg_attr(test, allow(dead_code))]

use std::collections::BTreeMap;
use std::sync::Arc;

use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};
use napi_derive::napi;
use rindle_room_core::host::FlushRecord;
use rindle_room_journal::file::FileJournal;
use rindle_room_journal::Journal;

use rindle_room_core::host::journal_record::{self, JournalRecord};
use rindle_room_core::host::json::{contents_json, records_from_json};

/// One journal operation, run off the event loop.
#[derive(Debug)]
pub enum JournalOp {
    /// Read everything: the host's boot contents as JSON.
    ReadAll,
    /// Append entries in the published journal's shape (JSON).
    Append(String),
    /// Journal a flush record (JSON `{seq, epoch, body}`).
    AppendFlush(String),
    /// Drop a settled flush record.
    Confirm(u64),
    /// Compact with the durable lmids (JSON `{clientID: lmid}`).
    Compact(String),
}

/// A task of [`NativeFileJournal`].
#[derive(Debug)]
pub struct JournalTask {
    journal: Option<Arc<FileJournal>>,
    op: Option<JournalOp>,
}

fn io_err(e: impl std::fmt::Display) -> napi::Error {
    napi::Error::new(napi::Status::GenericFailure, e.to_string())
}

impl Task for JournalTask {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<String> {
        let Some(j) = &self.journal else {
            return Err(io_err("the journal is closed"));
        };
        match self.op.take() {
            None => Ok(String::new()),
            Some(JournalOp::ReadAll) => j.read_all().map(|c| contents_json(&c)).map_err(io_err),
            Some(JournalOp::Append(json)) => {
                let v: serde_json::Value = serde_json::from_str(&json).map_err(io_err)?;
                let entries = records_from_json(&v)
                    .map_err(io_err)?
                    .into_iter()
                    .map(|r| match r {
                        JournalRecord::Entry(e) => Ok(e),
                        _ => Err(io_err("append: a binding record is not an entry")),
                    })
                    .collect::<napi::Result<Vec<_>>>()?;
                j.append(&entries).map(|()| String::new()).map_err(io_err)
            }
            Some(JournalOp::AppendFlush(json)) => {
                let v: serde_json::Value = serde_json::from_str(&json).map_err(io_err)?;
                let record = FlushRecord {
                    seq: v["seq"]
                        .as_u64()
                        .ok_or_else(|| io_err("flush record: `seq`"))?,
                    epoch: v["epoch"]
                        .as_u64()
                        .ok_or_else(|| io_err("flush record: `epoch`"))?,
                    body: v["body"]
                        .as_str()
                        .ok_or_else(|| io_err("flush record: `body`"))?
                        .to_string(),
                };
                j.append_flush(&record)
                    .map(|()| String::new())
                    .map_err(io_err)
            }
            Some(JournalOp::Confirm(seq)) => {
                j.confirm_flush(seq).map(|()| String::new()).map_err(io_err)
            }
            Some(JournalOp::Compact(json)) => {
                let durable: BTreeMap<String, u64> = serde_json::from_str(&json).map_err(io_err)?;
                j.compact(&durable).map(|()| String::new()).map_err(io_err)
            }
        }
    }

    fn resolve(&mut self, _env: Env, output: String) -> napi::Result<String> {
        Ok(output)
    }
}

/// The durable file journal, shared with the server.
#[napi]
#[derive(Debug)]
pub struct NativeFileJournal {
    /// `None` once closed (operations in flight keep their clone until they finish).
    journal: Option<Arc<FileJournal>>,
}

#[napi]
impl NativeFileJournal {
    /// Opens (creating) the journal at `path`: a torn tail is cut; damage followed by
    /// intact records throws (the file is left as it is).
    #[napi(constructor)]
    pub fn new(path: String) -> napi::Result<NativeFileJournal> {
        let journal = FileJournal::open(&path).map_err(io_err)?;
        Ok(NativeFileJournal {
            journal: Some(Arc::new(journal)),
        })
    }

    /// `[records kept, bytes cut from a torn tail]` at open.
    #[napi]
    pub fn recovered(&self) -> Vec<f64> {
        let r = self
            .journal
            .as_ref()
            .map(|j| j.recovered())
            .unwrap_or_default();
        vec![r.records as f64, r.truncated_bytes as f64]
    }

    /// Closes the file once the operations in flight are done; later calls fail.
    #[napi]
    pub fn close(&mut self) {
        self.journal = None;
    }

    fn task(&self, op: JournalOp) -> AsyncTask<JournalTask> {
        AsyncTask::new(JournalTask {
            journal: self.journal.clone(),
            op: Some(op),
        })
    }

    /// Everything the host reads at boot, as JSON.
    #[napi(js_name = "readAll")]
    pub fn read_all(&self) -> AsyncTask<JournalTask> {
        self.task(JournalOp::ReadAll)
    }

    /// Appends entries in the published journal's shape (JSON), durably.
    #[napi]
    pub fn append(&self, entries_json: String) -> AsyncTask<JournalTask> {
        self.task(JournalOp::Append(entries_json))
    }

    /// Journals a flush record (JSON), durably.
    #[napi(js_name = "appendFlush")]
    pub fn append_flush(&self, record_json: String) -> AsyncTask<JournalTask> {
        self.task(JournalOp::AppendFlush(record_json))
    }

    /// Drops the settled flush record `seq`.
    #[napi(js_name = "confirmFlush")]
    pub fn confirm_flush(&self, seq: f64) -> AsyncTask<JournalTask> {
        self.task(JournalOp::Confirm(seq as u64))
    }

    /// Compacts with the durable lmids (JSON `{clientID: lmid}`).
    #[napi]
    pub fn compact(&self, durable_json: String) -> AsyncTask<JournalTask> {
        self.task(JournalOp::Compact(durable_json))
    }
}

/// Compaction of a JavaScript journal's records (a JSON array of opaque record strings,
/// or of legacy entry objects): drops the entries a durable lmid covers (`durable_json`:
/// `{clientID: lmid}`) and keeps one binding record per client with a subject, in front.
/// Returns the records to keep, as a JSON array of opaque record strings.
#[napi(js_name = "compactJournalRecords")]
pub fn compact_journal_records(records_json: String, durable_json: String) -> napi::Result<String> {
    let v: serde_json::Value = serde_json::from_str(&records_json).map_err(io_err)?;
    let records = records_from_json(&v).map_err(io_err)?;
    let durable: BTreeMap<String, u64> = serde_json::from_str(&durable_json).map_err(io_err)?;
    let kept: Vec<String> = journal_record::compact(&records, &durable)
        .iter()
        .map(journal_record::encode)
        .collect();
    serde_json::to_string(&kept).map_err(io_err)
}

/// The recorded verdict of one journaled entry (`"applied"`, `"rejected"` or
/// `"deopt"`), given as its opaque record string or as a legacy entry object's JSON; an
/// unknown outcome, or a binding record, throws.
#[napi(js_name = "journalRecordOutcome")]
pub fn journal_record_outcome(record: String) -> napi::Result<String> {
    let entry = journal_record::decode_entry(record.as_bytes()).map_err(io_err)?;
    Ok(String::from(match entry.outcome {
        rindle_room_core::host::Outcome::Applied => "applied",
        rindle_room_core::host::Outcome::Rejected => "rejected",
        rindle_room_core::host::Outcome::Deopt => "deopt",
    }))
}
