//! The box's journal writer: one thread that writes the appends of every room's journal
//! on one filesystem and covers each batch of them with one sync of it
//! ([`GroupSync`](crate::group_sync::GroupSync)).
//!
//! Without it, each room's append ran on a thread of its own (the runtime's blocking
//! pool), wrote, and waited on the shared sync: two thread hand-offs and a wake-up per
//! append, which on a box of a thousand writing rooms cost more than the syncs saved.
//! Here a room hands its encoded records over ([`Journal::submit_grouped`]) and is told
//! the outcome through a callback. The thread takes every append queued, writes each
//! one to its file (page cache only), then runs one sync that began after the last of
//! those writes, and only then reports them done — so an append is still on disk before
//! its caller acknowledges anything. A write that fails is reported at once (that
//! journal is poisoned); a sync that fails fails every write it was to cover, and each
//! of those journals refuses writes from then on.
//!
//! [`Journal::submit_grouped`]: crate::Journal::submit_grouped

use std::io;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;

use crate::file::FileJournal;

/// How a grouped write's outcome is told: called once, on the writer's thread.
pub type GroupDone = Box<dyn FnOnce(io::Result<()>) + Send>;

/// At most this many appends share one sync (the rest wait for the next).
const MAX_BATCH: usize = 4096;

/// One room's append for the box's writer.
pub(crate) struct GroupJob {
    pub(crate) journal: Arc<FileJournal>,
    /// What the write is, for errors.
    pub(crate) op: &'static str,
    /// The encoded records.
    pub(crate) frames: Vec<u8>,
    pub(crate) done: GroupDone,
}

/// Starts the writer thread; jobs go to the returned sender, and the thread ends when
/// every sender is gone.
pub(crate) fn start() -> io::Result<Sender<GroupJob>> {
    let (tx, rx) = std::sync::mpsc::channel::<GroupJob>();
    std::thread::Builder::new()
        .name(String::from("journal-sync"))
        .spawn(move || run(&rx))?;
    Ok(tx)
}

fn run(rx: &Receiver<GroupJob>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        write_and_sync(batch);
    }
}

/// Writes every job's records, then one sync covers those that were written.
fn write_and_sync(batch: Vec<GroupJob>) {
    let mut written = Vec::with_capacity(batch.len());
    for job in batch {
        match job.journal.write_unsynced(job.op, &job.frames) {
            Ok(()) => written.push(job),
            Err(e) => (job.done)(Err(e)),
        }
    }
    let Some(group) = written.first().and_then(|j| j.journal.group().cloned()) else {
        // Nothing written (or, never the case, a journal without a group: it cannot
        // have been submitted).
        for job in written {
            (job.done)(Err(io::Error::other("journal has no box-level sync")));
        }
        return;
    };
    match group.sync_covering(written.len() as u64) {
        Ok(()) => {
            for job in written {
                (job.done)(Ok(()));
            }
        }
        Err(e) => {
            for job in written {
                let e = job.journal.sync_failed(job.op, &e);
                (job.done)(Err(e));
            }
        }
    }
}
