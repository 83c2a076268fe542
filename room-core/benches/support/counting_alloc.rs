//! The counting global allocator shared by the benches (`#[path]`-included).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, Ordering};

/// Wraps the system allocator; while [`COUNTING`] is on it counts allocation calls and
/// the net requested bytes. Off, it costs one relaxed load per call, so the timed runs
/// (which keep it off) are not skewed by the counters.
pub struct Counting;

pub static COUNTING: AtomicBool = AtomicBool::new(false);
pub static ALLOCS: AtomicU64 = AtomicU64::new(0);
pub static LIVE: AtomicIsize = AtomicIsize::new(0);
/// The highest [`LIVE`] reached since it was last reset (by storing the current `LIVE`).
pub static PEAK: AtomicIsize = AtomicIsize::new(0);

#[inline]
fn note(allocs: u64, grown: isize) {
    if COUNTING.load(Ordering::Relaxed) {
        ALLOCS.fetch_add(allocs, Ordering::Relaxed);
        let live = LIVE.fetch_add(grown, Ordering::Relaxed) + grown;
        if grown > 0 {
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
    }
}

// SAFETY: every method forwards its arguments unchanged to `System`, which implements
// `GlobalAlloc` correctly; the counters have no influence on the returned memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(1, layout.size() as isize);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract for `layout`.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(1, layout.size() as isize);
        // SAFETY: the caller upholds `GlobalAlloc::alloc_zeroed`'s contract for `layout`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(0, -(layout.size() as isize));
        // SAFETY: `ptr` was allocated by `System` (through this wrapper) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(1, new_size as isize - layout.size() as isize);
        // SAFETY: `ptr` was allocated by `System` with `layout`; the caller upholds the
        // rest of `GlobalAlloc::realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
