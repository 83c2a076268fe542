//! The serial journal writer: one append in flight at a time (so acks apply in append
//! order), every call off the executor (`smol::unblock`), results back as events. Group
//! commits that queue up behind an append in flight are written and fsynced together.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use async_channel::Sender;

use super::Event;
use crate::journal::{Journal, JournalEntry};
use crate::server::clock::Env;
use crate::server::log::Logger;
use crate::server::metrics::Metrics;

/// A job for the serial journal writer.
pub(crate) enum JournalJob {
    Append {
        incarnation: u64,
        batch: Vec<JournalEntry>,
    },
    Compact(BTreeMap<String, u64>),
}

/// Starts the journal writer: one append in flight at a time, so acks apply in append
/// order; every call runs off the executor.
pub(crate) fn spawn(
    env: &Env,
    journal: Arc<dyn Journal>,
    events: Sender<Event>,
    metrics: Arc<Metrics>,
    log: Logger,
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
            match job {
                JournalJob::Append {
                    incarnation,
                    mut batch,
                } => {
                    // Group commits that queued up behind the last append (the disk is
                    // slower than the group-commit window) share this write and its
                    // fsync, in order; acks still apply in append order.
                    while let Ok(next) = rx.try_recv() {
                        match next {
                            JournalJob::Append {
                                incarnation: i,
                                batch: more,
                            } if i == incarnation => batch.extend(more),
                            other => {
                                held = Some(other);
                                break;
                            }
                        }
                    }
                    let start = Instant::now();
                    let (batch, result) = smol::unblock(move || {
                        let r = j.append(&batch);
                        (batch, r)
                    })
                    .await;
                    metrics.journal_append.observe(start.elapsed());
                    let result = result.map_err(|e| e.to_string());
                    let ev = Event::Appended {
                        incarnation,
                        batch,
                        result,
                    };
                    if events.send(ev).await.is_err() {
                        return;
                    }
                }
                JournalJob::Compact(durable) => {
                    if let Err(e) = smol::unblock(move || j.compact(&durable)).await {
                        log.warn(&format!(
                            "journal compaction failed (will retry later): {e}"
                        ));
                    }
                }
            }
        }
    });
    tx
}
