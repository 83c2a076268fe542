//! The process's unsent bytes: every socket's backlog (frames queued that its writer
//! has not taken) counted together, so a box of many rooms has one bound on what slow
//! readers make it hold (`server.max_unsent_bytes`). The per-socket caps (send budget,
//! snapshot backlog) are the host's and bound one socket; past this cap the core's
//! [`unsent_cuts`] names the sockets to cut — the largest backlogs first — and they
//! close like a budget overrun: their queue dropped, 1008 with a reason naming the
//! option. The count is exact: a socket's bytes leave it when its writer takes them or
//! when the socket's backlog is freed.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use async_channel::WeakSender;
use rindle_room_core::host::{unsent_cut_reason, unsent_cuts};

use crate::out::{Backlog, Out};
use crate::ConnId;

/// Told of every socket cut for the process's unsent bytes: `(socket, reason)`.
pub type CutLog = Box<dyn Fn(ConnId, &str) + Send + Sync>;

/// One socket the account can cut.
struct Member {
    id: ConnId,
    backlog: Weak<Backlog>,
    out: WeakSender<Out>,
    closing: WeakSender<()>,
}

/// The process-wide account of unsent bytes.
#[derive(Default)]
pub struct Unsent {
    total: AtomicUsize,
    /// 0: no cap.
    cap: AtomicUsize,
    members: Mutex<Vec<Member>>,
    cuts: AtomicU64,
    log: OnceLock<CutLog>,
}

impl std::fmt::Debug for Unsent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unsent")
            .field("total", &self.total.load(Ordering::Relaxed))
            .field("cap", &self.cap.load(Ordering::Relaxed))
            .field("cuts", &self.cuts.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Unsent {
    /// Sets the cap (`server.max_unsent_bytes`; 0: none) and where cuts are logged
    /// (the first log set stays).
    pub fn configure(&self, cap: usize, log: CutLog) {
        self.cap.store(cap, Ordering::Relaxed);
        let _ = self.log.set(log);
    }

    /// Bytes queued for every socket that their writers have not taken.
    pub fn total(&self) -> usize {
        self.total.load(Ordering::Relaxed)
    }

    /// Sockets cut for the cap so far.
    pub fn cuts(&self) -> u64 {
        self.cuts.load(Ordering::Relaxed)
    }

    pub(crate) fn add(&self, bytes: usize) {
        self.total.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(crate) fn sub(&self, bytes: usize) {
        self.total.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Counts socket `id` in, so it can be cut.
    pub(crate) fn join(
        &self,
        id: ConnId,
        backlog: &Arc<Backlog>,
        out: &async_channel::Sender<Out>,
        closing: &async_channel::Sender<()>,
    ) {
        let mut members = self.members.lock().unwrap_or_else(|p| p.into_inner());
        // Forget sockets that are gone, now and then (amortized over joins).
        if members.len() >= 64 && members.len().is_power_of_two() {
            members.retain(|m| m.backlog.strong_count() > 0);
        }
        members.push(Member {
            id,
            backlog: Arc::downgrade(backlog),
            out: out.downgrade(),
            closing: closing.downgrade(),
        });
    }

    /// Past the cap: cuts the sockets the core names. Cheap under the cap (two loads);
    /// over it, one pass over the sockets (another caller already cutting skips).
    pub(crate) fn enforce(&self) {
        let cap = self.cap.load(Ordering::Relaxed);
        if cap == 0 || self.total() <= cap {
            return;
        }
        let Ok(mut members) = self.members.try_lock() else {
            return;
        };
        members.retain(|m| m.backlog.strong_count() > 0);
        let mut held = Vec::with_capacity(members.len());
        for m in members.iter() {
            if let Some(b) = m.backlog.upgrade() {
                // A socket already cut is closing: its bytes are on their way out.
                if !b.discarding() {
                    held.push((m.id, b.unsent()));
                }
            }
        }
        let total: usize = held.iter().map(|(_, b)| *b).sum();
        for id in unsent_cuts(&held, cap) {
            let Some(m) = members.iter().find(|m| m.id == id) else {
                continue;
            };
            let Some(backlog) = m.backlog.upgrade() else {
                continue;
            };
            let reason = unsent_cut_reason(backlog.unsent(), total, cap);
            backlog.discard();
            if let Some(out) = m.out.upgrade() {
                let _ = out.try_send(Out::Close((1008, reason.clone())));
            }
            if let Some(closing) = m.closing.upgrade() {
                let _ = closing.try_send(());
            }
            self.cuts.fetch_add(1, Ordering::Relaxed);
            if let Some(log) = self.log.get() {
                log(id, &reason);
            }
        }
    }
}
