//! Process-wide settings the server depends on: the open-file limit (every socket is a
//! descriptor, and `server.max_connections` defaults from it), `SIGXFSZ`, and handing
//! freed heap pages back to the OS. The crate's only unsafe code: five `unsafe` blocks
//! around six libc calls (the inventory is in the crate root, `lib.rs`).

#![allow(unsafe_code)]

/// Raises the soft open-file limit to the hard one and returns the resulting soft limit
/// (`None` where it cannot be read). Call once at start-up, before listening.
pub fn raise_nofile_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `lim` is a valid, writable rlimit for the duration of the call.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
            return None;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            // SAFETY: `raised` is a valid rlimit; failure leaves the limit unchanged.
            if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
                lim = raised;
            }
        }
        Some(lim.rlim_cur)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The soft open-file limit, if it can be read.
pub fn nofile_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `lim` is a valid, writable rlimit for the duration of the call.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
            return None;
        }
        Some(lim.rlim_cur)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Ignores `SIGXFSZ`, so a write past a file-size limit (`ulimit -f`) fails with
/// `EFBIG` — an append error the journal reports like `ENOSPC` (the incarnation dies,
/// nothing acknowledged is lost) — instead of killing the process.
pub fn ignore_sigxfsz() {
    #[cfg(unix)]
    // SAFETY: installing SIG_IGN for SIGXFSZ has no preconditions and no handler runs.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Hands the heap's free pages back to the OS. glibc keeps what a thread freed in that
/// thread's arena for reuse, so without this a fleet's RSS never falls after a wave of
/// rooms hibernates, and with a thread per core each thread keeps its own high-water
/// mark. No-op elsewhere.
/// Returns the heap bytes in use afterwards, where the allocator tells.
pub fn return_free_memory() -> Option<u64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `malloc_trim` only walks the allocator's own free lists; any pad is
        // valid. `mallinfo` reads counters (its int fields wrap past 2 GiB: a log hint).
        let info = unsafe {
            libc::malloc_trim(0);
            libc::mallinfo()
        };
        Some(info.uordblks as u32 as u64 + info.hblkhd as u32 as u64)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    None
}
