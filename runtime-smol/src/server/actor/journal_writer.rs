//! The serial journal writer: one append in flight at a time (so acks apply in append
//! order), every call off the executor (`smol::unblock`), results back as events.

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
        while let Ok(job) = rx.recv().await {
            let j = journal.clone();
            match job {
                JournalJob::Append { incarnation, batch } => {
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
