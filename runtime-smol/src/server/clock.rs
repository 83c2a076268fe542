//! Time and spawning behind two tiny traits, so the room task can run on a fake clock.
//!
//! The core never reads a clock: every `now_ms` it takes comes from a [`Clock`]. The
//! server reads **wall-clock milliseconds since the Unix epoch** (lease tokens carry
//! `iat`/`exp` in that unit) and sleeps until a deadline on the same scale.
//!
//! - [`SystemClock`]: the real clock and smol timers.
//! - [`ManualClock`]: a clock that only moves when a test calls [`ManualClock::advance`];
//!   sleepers wake when time passes their deadline.
//!
//! ```
//! use rindle_room_smol::server::{Clock, ManualClock};
//!
//! let clock = ManualClock::new(1_000);
//! let wake = clock.sleep_until(1_500);
//! clock.advance(600);
//! smol::block_on(wake); // already due: returns at once
//! assert_eq!(clock.now_ms(), 1_600);
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A boxed, sendable future (what the traits hand out).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The server's notion of time.
pub trait Clock: Send + Sync + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
    /// Resolves once `now_ms() >= deadline_ms`.
    fn sleep_until(&self, deadline_ms: u64) -> BoxFuture<'static, ()>;
    /// Resolves after `ms` milliseconds of this clock's time.
    fn sleep(&self, ms: u64) -> BoxFuture<'static, ()> {
        self.sleep_until(self.now_ms().saturating_add(ms))
    }
}

/// Runs background tasks (connections, journal appends, flushes) to completion.
pub trait Spawner: Send + Sync + 'static {
    /// Runs `fut` in the background; its result is dropped.
    fn spawn(&self, fut: BoxFuture<'static, ()>);
}

/// The system clock: `SystemTime` for now, smol timers for sleeping.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }

    fn sleep_until(&self, deadline_ms: u64) -> BoxFuture<'static, ()> {
        let wait = deadline_ms.saturating_sub(self.now_ms());
        let at = Instant::now() + Duration::from_millis(wait);
        Box::pin(async move {
            smol::Timer::at(at).await;
        })
    }
}

/// Spawns on smol's global executor.
#[derive(Clone, Copy, Debug, Default)]
pub struct SmolSpawner;

impl Spawner for SmolSpawner {
    fn spawn(&self, fut: BoxFuture<'static, ()>) {
        smol::spawn(fut).detach();
    }
}

#[derive(Debug)]
struct ManualState {
    now: u64,
    next_id: u64,
    /// `(deadline, sleeper id, waker)`.
    sleepers: Vec<(u64, u64, Waker)>,
}

/// A clock that moves only when told to: deterministic timers for tests.
#[derive(Clone, Debug)]
pub struct ManualClock {
    state: Arc<Mutex<ManualState>>,
}

impl ManualClock {
    /// A clock reading `start_ms`.
    pub fn new(start_ms: u64) -> ManualClock {
        ManualClock {
            state: Arc::new(Mutex::new(ManualState {
                now: start_ms,
                next_id: 0,
                sleepers: Vec::new(),
            })),
        }
    }

    /// A clock starting at the current wall-clock time (tokens minted against the real
    /// clock still verify).
    pub fn starting_now() -> ManualClock {
        ManualClock::new(SystemClock.now_ms())
    }

    /// Moves time forward by `ms` and wakes every sleeper whose deadline passed.
    pub fn advance(&self, ms: u64) {
        let due: Vec<Waker> = {
            let mut s = lock(&self.state);
            s.now = s.now.saturating_add(ms);
            let now = s.now;
            let (due, keep): (Vec<_>, Vec<_>) =
                s.sleepers.drain(..).partition(|(d, _, _)| *d <= now);
            s.sleepers = keep;
            due.into_iter().map(|(_, _, w)| w).collect()
        };
        for w in due {
            w.wake();
        }
    }
}

fn lock(m: &Mutex<ManualState>) -> std::sync::MutexGuard<'_, ManualState> {
    // A poisoned lock only means a panicking test thread; the state is plain data.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        lock(&self.state).now
    }

    fn sleep_until(&self, deadline_ms: u64) -> BoxFuture<'static, ()> {
        let id = {
            let mut s = lock(&self.state);
            s.next_id += 1;
            s.next_id
        };
        Box::pin(ManualSleep {
            state: self.state.clone(),
            deadline: deadline_ms,
            id,
        })
    }
}

struct ManualSleep {
    state: Arc<Mutex<ManualState>>,
    deadline: u64,
    id: u64,
}

impl Drop for ManualSleep {
    fn drop(&mut self) {
        let id = self.id;
        lock(&self.state).sleepers.retain(|(_, i, _)| *i != id);
    }
}

impl Future for ManualSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut s = lock(&self.state);
        if s.now >= self.deadline {
            return Poll::Ready(());
        }
        let (deadline, id) = (self.deadline, self.id);
        s.sleepers.retain(|(_, i, _)| *i != id);
        s.sleepers.push((deadline, id, cx.waker().clone()));
        Poll::Pending
    }
}

/// Shared handles to the clock and the spawner.
#[derive(Clone)]
pub struct Env {
    /// The clock.
    pub clock: Arc<dyn Clock>,
    /// The spawner.
    pub spawner: Arc<dyn Spawner>,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env").finish_non_exhaustive()
    }
}

impl Env {
    /// The system clock on smol's executor.
    pub fn system() -> Env {
        Env {
            clock: Arc::new(SystemClock),
            spawner: Arc::new(SmolSpawner),
        }
    }

    /// Spawns a future.
    pub fn spawn(&self, fut: impl Future<Output = ()> + Send + 'static) {
        self.spawner.spawn(Box::pin(fut));
    }

    /// Milliseconds since the Unix epoch, on this environment's clock.
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_sleepers_wake_only_past_their_deadline() {
        let clock = ManualClock::new(0);
        let woke = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = woke.clone();
        let sleep = clock.sleep_until(100);
        let task = smol::spawn(async move {
            sleep.await;
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(20));
        assert!(!woke.load(std::sync::atomic::Ordering::SeqCst));
        clock.advance(100);
        smol::block_on(task);
        assert!(woke.load(std::sync::atomic::Ordering::SeqCst));
    }
}
