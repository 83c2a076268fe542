//! The serial journal writer: the host's journal operations run one at a time, in the
//! order it output them, off the executor, their results back as events. Appends that
//! queue up behind an operation in flight are written and fsynced together (one group
//! of group commits, one `fdatasync`); each still gets its own result, in order.
//!
//! An append goes to the box's journal writer when the journal has one
//! (`fleet.journal_sync = "box"`: one thread writes every room's appends and covers
//! them with one sync), else to a blocking thread (`smol::unblock`). A flush
//! confirmation does no I/O (the journal writes it with its next append), so it runs
//! here.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use async_channel::Sender;
use rindle_room_core::host::IoId;

use super::Event;
use crate::journal::{FlushRecord, GroupedWrite, Journal, JournalEntry};
use crate::server::clock::Env;
use crate::server::metrics::Metrics;

/// A job for the serial journal writer.
pub(crate) enum JournalJob {
    Read(IoId),
    Append {
        io: IoId,
        entries: Vec<JournalEntry>,
    },
    AppendFlush {
        io: IoId,
        record: FlushRecord,
    },
    ConfirmFlush {
        io: IoId,
        seq: u64,
    },
    Compact {
        io: IoId,
        durable: BTreeMap<String, u64>,
    },
}

impl JournalJob {
    /// The operation's id.
    pub(crate) fn io(&self) -> IoId {
        match self {
            JournalJob::Read(io)
            | JournalJob::Append { io, .. }
            | JournalJob::AppendFlush { io, .. }
            | JournalJob::ConfirmFlush { io, .. }
            | JournalJob::Compact { io, .. } => *io,
        }
    }
}

/// Starts the journal writer.
pub(crate) fn spawn(
    env: &Env,
    journal: Arc<dyn Journal>,
    events: Sender<Event>,
    metrics: Arc<Metrics>,
) -> Sender<JournalJob> {
    let (tx, rx) = async_channel::unbounded::<JournalJob>();
    env.spawn(async move {
        // A job taken off the queue while gathering appends, to run next.
        let mut held: Option<JournalJob> = None;
        loop {
            let job = match held.take() {
                Some(job) => job,
                None => match rx.recv().await {
                    Ok(job) => job,
                    Err(_) => return,
                },
            };
            let j = journal.clone();
            let done: Vec<Event> = match job {
                JournalJob::Append { io, mut entries } => {
                    // Appends that queued up behind the last operation share this write.
                    let mut ios = vec![(io, entries.len())];
                    while let Ok(next) = rx.try_recv() {
                        match next {
                            JournalJob::Append { io, entries: more } => {
                                ios.push((io, more.len()));
                                entries.extend(more);
                            }
                            other => {
                                held = Some(other);
                                break;
                            }
                        }
                    }
                    let start = Instant::now();
                    let result = durably(j, GroupedWrite::Entries(entries)).await;
                    metrics.journal_append.observe(start.elapsed());
                    let result = result.map_err(Arc::new);
                    ios.into_iter()
                        .map(|(io, _)| Event::JournalWritten {
                            io,
                            result: result.clone(),
                        })
                        .collect()
                }
                JournalJob::Read(io) => {
                    let result = smol::unblock(move || j.read_all()).await.map_err(Arc::new);
                    vec![Event::JournalRead { io, result }]
                }
                JournalJob::AppendFlush { io, record } => {
                    let result = durably(j, GroupedWrite::Flush(record))
                        .await
                        .map_err(Arc::new);
                    vec![Event::JournalWritten { io, result }]
                }
                JournalJob::ConfirmFlush { io, seq } => {
                    // No I/O (the trait's contract): no thread hand-off either.
                    let result = j.confirm_flush(seq).map_err(Arc::new);
                    vec![Event::JournalWritten { io, result }]
                }
                JournalJob::Compact { io, durable } => {
                    let result = smol::unblock(move || j.compact(&durable))
                        .await
                        .map_err(Arc::new);
                    vec![Event::JournalWritten { io, result }]
                }
            };
            for ev in done {
                if events.send(ev).await.is_err() {
                    return;
                }
            }
        }
    });
    tx
}

/// Makes `write` durable: through the box's journal writer when the journal has one,
/// else on a blocking thread.
async fn durably(journal: Arc<dyn Journal>, write: GroupedWrite) -> std::io::Result<()> {
    let (tx, rx) = async_channel::bounded(1);
    let done = Box::new(move |result| {
        // A fresh channel of one: the send cannot find it full.
        let _ = tx.try_send(result);
    });
    match journal.clone().submit_grouped(write, done) {
        Ok(()) => rx.recv().await.unwrap_or_else(|_| {
            Err(std::io::Error::other(
                "the box's journal writer dropped an append unanswered",
            ))
        }),
        Err((write, _)) => {
            smol::unblock(move || match write {
                GroupedWrite::Entries(entries) => journal.append(&entries),
                GroupedWrite::Flush(record) => journal.append_flush(&record),
            })
            .await
        }
    }
}
