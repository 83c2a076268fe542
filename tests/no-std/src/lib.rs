//! Build-only proof that `rindle-room-core` is `#![no_std]` all the way down.
//!
//! This staticlib has no std: it brings its own `#[panic_handler]` and `#[global_allocator]`
//! and exports one C function that drives the core's JSON contract. It is never linked into
//! an executable, so the allocator's `malloc`/`free` stay unresolved symbols; what matters is
//! that it compiles.
//!
//! Why a std dependency breaks the build: std defines the `panic_impl` lang item (its own
//! panic handler). If the core, or anything the core depends on, links std, rustc sees two
//! panic handlers and stops with
//!
//! ```text
//! error[E0152]: found duplicate lang item `panic_impl`
//!   = note: the lang item is first defined in crate `std` (which `…` depends on)
//! ```
//!
//! Checked on rustc 1.95, each change made in a scratch copy and then dropped (the scratch
//! copy builds again once it is undone):
//! 1. `extern crate std;` added to this file fails with E0152, "first defined in crate `std`
//!    (which `rindle_room_no_std_check` depends on)";
//! 2. a scratch copy of the core whose `serde_json` dependency has its default (`std`)
//!    features on fails with E0152, "first defined in crate `std` (which `serde_json`
//!    depends on)" — the regression this crate exists to catch;
//! 3. a dependency of this crate on a path crate without `#![no_std]`, named here with
//!    `extern crate`, fails with E0152 naming that crate.
//!
//! A dependency that is declared but never used is not linked, so it does not trip the
//! check; only crates the core really links count, which is the property we want.

#![no_std]

extern crate alloc;

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::{c_int, c_void};
use core::panic::PanicInfo;

use rindle_room_core::contract::JsonRoom;
use rindle_room_core::Error;

extern "C" {
    fn malloc(size: usize) -> *mut c_void;
    fn free(ptr: *mut c_void);
    fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int;
    fn abort() -> !;
}

/// The C heap as the global allocator.
struct CHeap;

/// The alignment every C `malloc` guarantees on the platforms we target.
const MALLOC_ALIGN: usize = 8;

// SAFETY: `alloc` returns null or a block of at least `layout.size()` bytes aligned to
// `layout.align()` (malloc's guarantee, or posix_memalign's with the requested alignment);
// `dealloc` returns it to the same C heap with `free`, which accepts blocks from both.
unsafe impl GlobalAlloc for CHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= MALLOC_ALIGN {
            // SAFETY: malloc has no preconditions; a null result reports the failure.
            return unsafe { malloc(layout.size()) }.cast();
        }
        let mut out: *mut c_void = core::ptr::null_mut();
        // posix_memalign wants a power of two that is a multiple of the pointer size.
        let align = layout.align().max(core::mem::size_of::<usize>());
        // SAFETY: `out` is a valid place for the result; `align` is a power of two (Layout
        // guarantees it) and at least the pointer size.
        let rc = unsafe { posix_memalign(&mut out, align, layout.size()) };
        if rc == 0 {
            out.cast()
        } else {
            core::ptr::null_mut()
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: the caller passes a block `alloc` returned, which came from the C heap.
        unsafe { free(ptr.cast()) }
    }
}

#[global_allocator]
static HEAP: CHeap = CHeap;

#[panic_handler]
fn panic(_info: &PanicInfo<'_>) -> ! {
    // SAFETY: abort has no preconditions and never returns.
    unsafe { abort() }
}

const HELLO: &str = concat!(
    r#"{"epoch":1,"comparatorVersion":2,"#,
    r#""tables":[{"name":"note","columns":["id","body"],"primaryKey":[0]}],"#,
    r#""normalizedFp":"d0ffe1b66912a02b"}"#
);
const SNAPSHOT: &str = concat!(
    r#"{"epoch":1,"seq":0,"normalizedFp":"d0ffe1b66912a02b","cv":1,"ops":["#,
    r#"{"table":"note","op":"add","row":[1,"a"]},"#,
    r#"{"table":"note","op":"add","row":[2,"b"]}]}"#
);
const QUERY: &str = r#"{"table":"note","orderBy":[["body","desc"]],"limit":5}"#;
const LIVE: &str = concat!(
    r#"{"epoch":1,"seq":1,"normalizedFp":"d0ffe1b66912a02b","cv":2,"ops":["#,
    r#"{"table":"note","op":"add","row":[3,"c"]},"#,
    r#"{"table":"note","op":"edit","old":[1,"a"],"new":[1,"z"]}]}"#
);

/// Opens a room, applies a snapshot, subscribes, applies a live batch and drains: returns
/// the total length of the JSON the room answered, or 0 if any step failed.
#[no_mangle]
pub extern "C" fn rindle_room_no_std_smoke() -> usize {
    smoke().unwrap_or(0)
}

fn smoke() -> Result<usize, Error> {
    let mut room = JsonRoom::open(HELLO, 30_000.0)?;
    let mut len = room.apply(SNAPSHOT)?.len();
    len += room.subscribe("c1:1", 1.0, QUERY, 0.0)?.len();
    len += room.apply(LIVE)?.len();
    len += room.commit_all().len();
    Ok(len)
}
