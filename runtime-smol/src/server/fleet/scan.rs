//! Start-up settlement (docs/fleet.md, "Per-room storage", "Acknowledgement modes"): before
//! a restarted box reports ready, every room journal under `<data_dir>/rooms/` that still
//! holds acknowledged entries or unconfirmed flushes is booted, settled and drained. A room
//! whose settlement is fenced (another box owns the doc now) keeps its journal; the room
//! itself reports what it acknowledged and could not deliver — logged one by one, counted
//! and listed in `/stats` as **stranded**, never dropped silently (host `ack.rs`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::journal::file::FileJournal;
use crate::journal::{Journal, JournalEntry};
use crate::server::actor::{Control, Event};
use crate::server::log::Logger;

use super::rooms::Rooms;

/// A journal with work left from before the restart.
#[derive(Debug)]
pub(crate) struct Unsettled {
    pub doc: String,
    pub path: PathBuf,
    /// The acknowledged entries it holds.
    pub entries: Vec<JournalEntry>,
    /// Unconfirmed flush records.
    pub unconfirmed: usize,
}

/// Reads every room journal under `<data_dir>/rooms/`; returns those with work left.
/// A journal that cannot be read (corrupt, not a room's) is logged and left alone.
pub(crate) fn scan(data_dir: &Path, log: &Logger) -> Vec<Unsettled> {
    let rooms_dir = data_dir.join("rooms");
    let Ok(dirs) = std::fs::read_dir(&rooms_dir) else {
        return Vec::new(); // a fresh box
    };
    let mut out = Vec::new();
    for dir in dirs.flatten() {
        let path = dir.path().join("journal");
        if !path.is_file() {
            continue;
        }
        let read = FileJournal::open(&path).and_then(|j| Ok((j.doc()?, j.read_all()?)));
        match read {
            Ok((Some(doc), contents)) => {
                if !contents.entries.is_empty() || !contents.flushes.is_empty() {
                    out.push(Unsettled {
                        doc,
                        path,
                        entries: contents.entries,
                        unconfirmed: contents.flushes.len(),
                    });
                }
            }
            Ok((None, _)) => log.warn(&format!(
                "{}: no doc record, so it is not a room journal; left alone",
                path.display()
            )),
            Err(e) => log.error(&format!(
                "{}: cannot be read ({e}); its room is not settled at start-up — check it \
                 with `rindle-room journal check`",
                path.display()
            )),
        }
    }
    out.sort_by(|a, b| a.doc.cmp(&b.doc));
    out
}

/// How many unsettled rooms a restarted box settles at once. Each boot still passes the
/// boot admission (`fleet.max_boots_in_flight`); a box that died with a thousand busy
/// rooms is ready in the time of its slowest few settlements, not the sum of them all.
pub(crate) const SETTLE_IN_FLIGHT: usize = 8;

/// Settled rooms between two progress lines in the log.
const SETTLE_PROGRESS_EVERY: usize = 100;

/// Boots, settles and drains each unsettled room, [`SETTLE_IN_FLIGHT`] at a time, then
/// marks the box ready.
pub(crate) async fn settle_all(rooms: Arc<Rooms>, unsettled: Vec<Unsettled>) {
    let log = rooms.shared.log.clone();
    let total = unsettled.len();
    if total > 0 {
        log.info(&format!(
            "start-up: {total} room journal(s) hold unsettled writes; settling them before \
             ready, {SETTLE_IN_FLIGHT} at a time"
        ));
    }
    let (work_tx, work_rx) = async_channel::unbounded();
    for u in unsettled {
        let _ = work_tx.try_send(u); // unbounded and open: cannot fail
    }
    work_tx.close();
    let workers = total.min(SETTLE_IN_FLIGHT);
    let (done_tx, done_rx) = async_channel::bounded(workers.max(1));
    let settled = Arc::new(AtomicUsize::new(0));
    for _ in 0..workers {
        let (rooms, work, done) = (rooms.clone(), work_rx.clone(), done_tx.clone());
        let (log, settled) = (log.clone(), settled.clone());
        rooms.clone().shared.env.spawn(async move {
            while let Ok(u) = work.recv().await {
                settle_one(&rooms, &u, &log).await;
                let n = settled.fetch_add(1, Ordering::SeqCst) + 1;
                if n % SETTLE_PROGRESS_EVERY == 0 && n < total {
                    log.info(&format!("start-up: {n} of {total} rooms settled"));
                }
            }
            let _ = done.send(()).await;
        });
    }
    drop(done_tx);
    for _ in 0..workers {
        if done_rx.recv().await.is_err() {
            break; // a worker was dropped (the box is stopping)
        }
    }
    rooms.step(Some(rindle_room_core::fleet::Input::Settled));
    log.info("ready");
}

async fn settle_one(rooms: &Arc<Rooms>, u: &Unsettled, log: &Logger) {
    let (room, _hold) = match rooms.boot_for_settlement(&u.doc).await {
        Ok(admitted) => (admitted.room, admitted.hold),
        Err((Some(room), _)) if room.moved.load(Ordering::SeqCst) => {
            return strand(rooms, u, log);
        }
        Err((_, (_, reason))) => {
            log.error(&format!(
                "start-up: room {} could not boot to settle {} entr(ies) and {} unconfirmed \
                 flush(es) ({reason}); its journal {} is kept and settles at its next boot",
                u.doc,
                u.entries.len(),
                u.unconfirmed,
                u.path.display()
            ));
            return;
        }
    };
    let drained = rooms.drain(&room).await;
    // A fence settles the drain too: ask once more — a room that stopped in the same
    // step cannot answer, and then its `moved` flag says why.
    let (tx, rx) = async_channel::bounded(1);
    let still_up = match room.events.send(Event::Control(Control::Health(tx))).await {
        Ok(()) => rx.recv().await.unwrap_or(false), // a stopped room answers `false`
        Err(_) => false,
    };
    if !still_up && room.moved.load(Ordering::SeqCst) {
        return strand(rooms, u, log);
    }
    match drained {
        Some(Ok(seq)) => {
            log.info(&format!(
                "start-up: room {} settled (flush seq {seq})",
                u.doc
            ));
        }
        _ if room.moved.load(Ordering::SeqCst) => strand(rooms, u, log),
        Some(Err(e)) => log.warn(&format!(
            "start-up: room {} did not drain ({e}); it keeps flushing",
            u.doc
        )),
        None => log.warn(&format!(
            "start-up: room {} stopped while settling; its journal {} is kept",
            u.doc,
            u.path.display()
        )),
    }
}

/// The doc is placed elsewhere now: the room has reported (and logged) the
/// acknowledged entries it could not deliver; say where the journal is.
fn strand(_rooms: &Arc<Rooms>, u: &Unsettled, log: &Logger) {
    log.error(&format!(
        "start-up: room {} is placed on another box now; {} journaled entr(ies) it held are \
         reported above as stranded where acknowledged, and its journal {} is kept",
        u.doc,
        u.entries.len(),
        u.path.display()
    ));
}
