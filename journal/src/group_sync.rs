//! Box-level group commit: the journals of many rooms on one filesystem share one
//! `syncfs` instead of one `fdatasync` each.
//!
//! A journal that appends through a [`GroupSync`] writes its records, then calls
//! [`GroupSync::sync`], which returns only once a `syncfs` that *started after the write*
//! has finished — so the append is on disk before its caller acknowledges anything, as
//! with its own `fdatasync`. Syncs run one at a time; the writes that arrive while one
//! runs are covered together by the next one (each numbered by the sync that will cover
//! it: a *generation*). Under load, a thousand rooms' appends cost a few syncs, not a
//! thousand.
//!
//! Failure: a `syncfs` that fails fails every append of its generation (which file lost
//! data is not known), and each of those journals then refuses writes as after a failed
//! `fdatasync`. Later generations are judged on their own sync. The kernel reports a
//! writeback error to `syncfs` only since Linux 5.8; [`GroupSync::open`] refuses older
//! kernels (callers fall back to a sync per journal), so a sync that returns `Ok` means
//! the data is down.
//!
//! Every journal using one `GroupSync` must live on the filesystem of the directory it
//! was opened on; [`GroupSync::covers`] tells (a journal elsewhere syncs itself).

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

use crate::group_writer::{self, GroupJob};

/// The operation that makes a filesystem's written data durable (`syncfs` on a
/// descriptor of it; a stand-in in tests).
pub type SyncOp = Box<dyn Fn(&File) -> io::Result<()> + Send + Sync>;

/// One filesystem's shared sync. Cheap to share (`Arc`).
pub struct GroupSync {
    /// A descriptor on the filesystem (its directory), opened once: `syncfs` reports a
    /// writeback error once per open file, so one descriptor sees each error once.
    anchor: File,
    /// The filesystem's device number.
    dev: u64,
    op: SyncOp,
    state: Mutex<State>,
    finished: Condvar,
    /// The box's journal writer ([`crate::group_writer`]), started at the first
    /// grouped append.
    writer: OnceLock<Sender<GroupJob>>,
}

#[derive(Default)]
struct State {
    /// Every generation up to this one has finished.
    done: u64,
    /// The generation whose sync runs now.
    running: Option<u64>,
    /// Generations whose sync failed, with why (rare; kept).
    failed: BTreeMap<u64, Arc<str>>,
    /// Syncs run (metrics).
    syncs: u64,
    /// Appends covered (metrics).
    covered: u64,
}

/// What a [`GroupSync`] has done, for metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupSyncStats {
    /// `syncfs` calls.
    pub syncs: u64,
    /// Appends those calls covered.
    pub covered: u64,
}

impl std::fmt::Debug for GroupSync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupSync").field("dev", &self.dev).finish()
    }
}

impl GroupSync {
    /// A group sync for the filesystem holding `dir` (created if missing), through
    /// `syncfs`. Fails where that is not a safe substitute for `fdatasync`: not Linux, or
    /// a kernel before 5.8 (whose `syncfs` does not report writeback errors).
    pub fn open(dir: &Path) -> io::Result<GroupSync> {
        if !syncfs_reports_errors() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "a box-level journal sync needs Linux 5.8 or later (syncfs must report \
                 writeback errors); set `fleet.journal_sync = \"room\"` or upgrade the kernel",
            ));
        }
        GroupSync::with_op(dir, Box::new(syncfs))
    }

    /// A group sync for the filesystem holding `dir` through `op` (tests inject failures
    /// and delays here).
    pub fn with_op(dir: &Path, op: SyncOp) -> io::Result<GroupSync> {
        std::fs::create_dir_all(dir)?;
        let anchor = File::open(dir)?;
        let dev = device_of(&anchor)?;
        Ok(GroupSync {
            anchor,
            dev,
            op,
            state: Mutex::new(State::default()),
            finished: Condvar::new(),
            writer: OnceLock::new(),
        })
    }

    /// Whether `file` is on this group's filesystem (then [`GroupSync::sync`] covers
    /// its writes).
    pub fn covers(&self, file: &File) -> bool {
        device_of(file).is_ok_and(|dev| dev == self.dev)
    }

    /// What the group has done so far.
    pub fn stats(&self) -> GroupSyncStats {
        let st = self.lock();
        GroupSyncStats {
            syncs: st.syncs,
            covered: st.covered,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays whole if a waiter panicked: every field is written at once.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Returns once everything the caller wrote before calling is durable: after a sync
    /// that started after this call began. The error names the failed sync.
    pub fn sync(&self) -> io::Result<()> {
        self.sync_covering(1)
    }

    /// [`GroupSync::sync`] for `appends` appends written before the call (metrics).
    pub(crate) fn sync_covering(&self, appends: u64) -> io::Result<()> {
        let mut st = self.lock();
        // A sync that runs now may have started before the caller's write.
        let ticket = match st.running {
            Some(g) => g + 1,
            None => st.done + 1,
        };
        st.covered += appends;
        loop {
            if st.done >= ticket {
                return match st.failed.get(&ticket) {
                    None => Ok(()),
                    Some(why) => Err(io::Error::other(format!(
                        "the box's journal sync failed: {why}"
                    ))),
                };
            }
            if st.running.is_none() {
                // This caller runs the sync for every write made before now.
                let generation = st.done + 1;
                st.running = Some(generation);
                st.syncs += 1;
                drop(st);
                let result = (self.op)(&self.anchor);
                st = self.lock();
                st.running = None;
                st.done = generation;
                if let Err(e) = result {
                    st.failed.insert(generation, Arc::from(e.to_string()));
                }
                self.finished.notify_all();
                continue;
            }
            st = self.finished.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl GroupSync {
    /// Hands `job` to the box's journal writer, starting it if needed; on failure to
    /// start, the job is told at once.
    pub(crate) fn submit(&self, job: GroupJob) {
        let sender = match self.writer.get() {
            Some(s) => s,
            None => match group_writer::start() {
                // Another caller may have started one meanwhile: theirs is kept, and
                // this one's thread ends with its sender.
                Ok(s) => self.writer.get_or_init(|| s),
                Err(e) => return (job.done)(Err(e)),
            },
        };
        if let Err(failed) = sender.send(job) {
            // The thread is gone (it only ends with its sender: never while we hold it).
            (failed.0.done)(Err(io::Error::other("the box's journal writer stopped")));
        }
    }
}

#[cfg(target_os = "linux")]
fn syncfs(file: &File) -> io::Result<()> {
    rustix::fs::syncfs(file).map_err(io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn syncfs(_: &File) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "syncfs is Linux only",
    ))
}

#[cfg(unix)]
fn device_of(file: &File) -> io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    Ok(file.metadata()?.dev())
}

#[cfg(not(unix))]
fn device_of(_: &File) -> io::Result<u64> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no device numbers here",
    ))
}

/// Whether this kernel's `syncfs` reports writeback errors (Linux 5.8 and later).
fn syncfs_reports_errors() -> bool {
    if !cfg!(target_os = "linux") {
        return false;
    }
    let Ok(release) = std::fs::read_to_string("/proc/sys/kernel/osrelease") else {
        return false;
    };
    kernel_at_least(&release, (5, 8))
}

/// Whether a kernel release string (`6.1.0-18-amd64`) is at least `(major, minor)`.
fn kernel_at_least(release: &str, (major, minor): (u32, u32)) -> bool {
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(a), Some(b)) => (a, b) >= (major, minor),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    fn dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!(
            "rindle-group-sync-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn kernel_releases_are_read_by_major_and_minor() {
        assert!(kernel_at_least("6.18.44-fc-v1252", (5, 8)));
        assert!(kernel_at_least("5.8.0", (5, 8)));
        assert!(!kernel_at_least("5.4.0-150-generic", (5, 8)));
        assert!(!kernel_at_least("4.19.0", (5, 8)));
        assert!(!kernel_at_least("garbage", (5, 8)));
    }

    #[test]
    fn concurrent_callers_share_syncs_and_each_waits_for_one_that_started_after_it() {
        // The op records when each sync starts (a counter of calls begun) and holds a
        // little, so callers pile up behind it.
        let began = Arc::new(AtomicU64::new(0));
        let b = began.clone();
        let g = Arc::new(
            GroupSync::with_op(
                &dir(),
                Box::new(move |_| {
                    b.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(5));
                    Ok(())
                }),
            )
            .unwrap(),
        );
        let threads: Vec<_> = (0..32)
            .map(|_| {
                let (g, began) = (g.clone(), began.clone());
                std::thread::spawn(move || {
                    for _ in 0..10 {
                        let before = began.load(Ordering::SeqCst);
                        g.sync().unwrap();
                        // A sync began after this call did.
                        assert!(began.load(Ordering::SeqCst) > before);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let stats = g.stats();
        assert_eq!(stats.covered, 320);
        assert!(stats.syncs < 320, "syncs were shared: {stats:?}");
    }

    #[test]
    fn a_failed_sync_fails_its_generation_and_not_the_next() {
        let calls = Arc::new(AtomicU64::new(0));
        let c = calls.clone();
        let g = GroupSync::with_op(
            &dir(),
            Box::new(move |_| {
                if c.fetch_add(1, Ordering::SeqCst) == 0 {
                    Err(io::Error::other("EIO from the disk"))
                } else {
                    Ok(())
                }
            }),
        )
        .unwrap();
        let err = g.sync().unwrap_err();
        assert!(err.to_string().contains("EIO from the disk"), "{err}");
        g.sync().unwrap();
    }

    #[test]
    fn a_journal_through_the_group_acks_after_its_sync_and_is_poisoned_by_a_failed_one() {
        use crate::file::FileJournal;
        use crate::{Journal, JournalEntry};
        let d = dir().join("journaled");
        let fail = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let f = fail.clone();
        let g = Arc::new(
            GroupSync::with_op(
                &d,
                Box::new(move |_| {
                    if f.load(Ordering::SeqCst) {
                        Err(io::Error::other("EIO from the disk"))
                    } else {
                        Ok(())
                    }
                }),
            )
            .unwrap(),
        );
        let path = d.join("room").join("journal");
        let _ = std::fs::remove_file(&path);
        let mut j = FileJournal::open(&path).unwrap();
        assert!(j.sync_through(g.clone()));
        let entry = |mid: u64| JournalEntry {
            client_id: "c".into(),
            mid,
            name: "m".into(),
            args: "[]".into(),
            sub: String::new(),
            outcome: crate::Outcome::Applied,
        };
        j.append(&[entry(1)]).unwrap();
        assert_eq!(g.stats().covered, 1);
        fail.store(true, Ordering::SeqCst);
        let err = j.append(&[entry(2)]).unwrap_err();
        assert!(err.to_string().contains("EIO"), "{err}");
        // Poisoned, like after a failed fdatasync, even once the group syncs again.
        fail.store(false, Ordering::SeqCst);
        assert!(j.append(&[entry(3)]).is_err());
        drop(j);
        // The acked append is there; the refused one was never written. (The one whose
        // sync failed was written and may replay, as after a failed fdatasync: its mid
        // was not acked, so the client sends it again and the room consumes it once.)
        let replayed = FileJournal::open(&path).unwrap().replay().unwrap();
        let mids: Vec<u64> = replayed.iter().map(|e| e.mid).collect();
        assert_eq!(mids.first(), Some(&1));
        assert!(!mids.contains(&3), "{mids:?}");
    }

    #[test]
    fn a_file_on_the_group_filesystem_is_covered() {
        let d = dir();
        let g = GroupSync::with_op(&d, Box::new(|_| Ok(()))).unwrap();
        let f = File::create(d.join("j")).unwrap();
        assert!(g.covers(&f));
        if let Ok(proc_file) = File::open("/proc/self/status") {
            assert!(!g.covers(&proc_file));
        }
    }
}
