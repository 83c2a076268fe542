//! The room host (`rindle_room_host_*`): the core's sans-IO host (`room-core`
//! `host/`) behind the C ABI. The C program is the driver: it carries inputs in (socket
//! frames, journal and authority results, timer fires), polls outputs (JSON objects)
//! and carries them out. Every rule is the core's; this module converts and transports.
//!
//! The JSON shapes are `rindle_room_core::host::json`'s (the Node addon speaks the same).

use core::cell::{Cell, RefCell};
use core::ffi::{c_char, c_void, CStr};
use core::panic::AssertUnwindSafe;
use std::panic::catch_unwind;

use rindle_room_core::host::json::{config_from_json, output_json, with_input_json};
use rindle_room_core::host::{Backlog, Driver, Host, Input, MutatorOutcome};
use rindle_room_core::schema::TableSchema;
use rindle_room_core::write::keyed::MutationTx;

use crate::boundary::{
    fail_thread, message_of, refuse_if_panicked, settle, str_arg, with_thread, Failure, Guarded,
    Out, Outcome,
};
use crate::buf::rindle_room_buf;
use crate::mutation::rindle_room_mutation_tx;
use crate::result::rindle_room_result;

/// A mutator: runs mutation `name` (UTF-8, `name_len` bytes, not NUL-terminated) with
/// `args_json` (JSON text; NULL with length 0 when the envelope has no args) as subject
/// `user` (empty: none), writing through `tx` with the `rindle_room_mutation_*()`
/// functions. Returns a `RINDLE_ROOM_MUTATOR_*` outcome. Runs synchronously inside the
/// host call that delivered the mutation; `tx` is valid until it returns. It must not
/// call the host.
#[allow(non_camel_case_types)]
pub type rindle_room_mutator_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        tx: *mut rindle_room_mutation_tx,
        name: *const c_char,
        name_len: usize,
        args_json: *const c_char,
        args_len: usize,
        user: *const c_char,
        user_len: usize,
    ) -> u32,
>;

/// Optional: the room's tables are known (each incarnation, before writes are served),
/// as a JSON array of `{name, columns, primaryKey}`. Return NULL to accept, or a
/// NUL-terminated message (read before the call returns) to refuse: the incarnation
/// dies with `write-plane boot failed: <message>`.
#[allow(non_camel_case_types)]
pub type rindle_room_tables_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        tables_json: *const c_char,
        tables_len: usize,
    ) -> *const c_char,
>;

/// Optional: connection `conn`'s backlog, the bytes its writer has not taken yet: live
/// frames in `*out_live`, snapshot frames in `*out_snapshot` (both start at 0). The
/// host adds what it output but you have not polled, and closes a connection whose
/// backlog passes the send budget.
#[allow(non_camel_case_types)]
pub type rindle_room_backlog_fn = Option<
    unsafe extern "C" fn(ctx: *mut c_void, conn: u64, out_live: *mut u64, out_snapshot: *mut u64),
>;

/// What the host calls back while it handles an input. Copied by
/// `rindle_room_host_new()`; `ctx` is passed to every callback as it is.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rindle_room_host_callbacks {
    /// Passed to every callback.
    pub ctx: *mut c_void,
    /// Required when the configuration has `writes`: runs one mutator.
    pub run_mutator: rindle_room_mutator_fn,
    /// Optional (NULL: accept any tables).
    pub tables_known: rindle_room_tables_fn,
    /// Optional (NULL: every backlog is what the host output and you have not polled).
    pub backlog: rindle_room_backlog_fn,
}

/// The host's calls into the C program.
struct CDriver(rindle_room_host_callbacks);

impl Driver for CDriver {
    fn run_mutator(
        &mut self,
        name: &str,
        tx: &mut MutationTx<'_>,
        args: Option<&str>,
        user: &str,
    ) -> MutatorOutcome {
        let Some(f) = self.0.run_mutator else {
            return MutatorOutcome::Unknown;
        };
        let (args_ptr, args_len) = args.map_or((core::ptr::null(), 0), |a| (a.as_ptr(), a.len()));
        rindle_room_mutation_tx::run(tx, name, |handle| {
            // SAFETY: the callback's contract (rindle_room_mutator_fn); every pointer is
            // valid for its length during the call.
            unsafe {
                f(
                    self.0.ctx,
                    handle,
                    name.as_ptr().cast(),
                    name.len(),
                    args_ptr.cast(),
                    args_len,
                    user.as_ptr().cast(),
                    user.len(),
                )
            }
        })
    }

    fn tables_known(
        &mut self,
        tables: &[TableSchema],
    ) -> Result<(), rindle_room_core::host::TablesError> {
        let Some(f) = self.0.tables_known else {
            return Ok(());
        };
        let mut json = String::from("[");
        for (i, t) in tables.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            t.write_json(&mut json);
        }
        json.push(']');
        // SAFETY: the callback's contract (rindle_room_tables_fn).
        let refusal = unsafe { f(self.0.ctx, json.as_ptr().cast(), json.len()) };
        if refusal.is_null() {
            return Ok(());
        }
        // SAFETY: a non-NULL answer is a NUL-terminated string, readable until we return.
        Err(unsafe { CStr::from_ptr(refusal) }
            .to_string_lossy()
            .into_owned()
            .into())
    }

    fn backlog(&self, conn: u64) -> Backlog {
        let Some(f) = self.0.backlog else {
            return Backlog::default();
        };
        let (mut live, mut snapshot) = (0u64, 0u64);
        // SAFETY: the callback's contract (rindle_room_backlog_fn); both out-pointers
        // are valid for the call.
        unsafe { f(self.0.ctx, conn, &mut live, &mut snapshot) };
        Backlog {
            live: usize::try_from(live).unwrap_or(usize::MAX),
            snapshot: usize::try_from(snapshot).unwrap_or(usize::MAX),
        }
    }
}

/// A room host: one document's room plus every rule of its shell (upstream, leases,
/// downstream connections, the write plane, journal, flush, control plane), with no
/// I/O and no clock. Opaque: made by `rindle_room_host_new()`, freed by
/// `rindle_room_host_free()`. One thread at a time, like a room.
#[allow(non_camel_case_types)]
pub struct rindle_room_host {
    host: Host,
    driver: CDriver,
    last_error: RefCell<Vec<u8>>,
    panicked: Cell<bool>,
}

impl core::fmt::Debug for rindle_room_host {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("rindle_room_host")
            .field("boot_id", &self.host.boot_id())
            .field("live", &self.host.is_live())
            .field("panicked", &self.panicked.get())
            .finish_non_exhaustive()
    }
}

impl Guarded for rindle_room_host {
    const REMEDY: &'static str =
        "an earlier call on this host panicked; free it and make a new one";
    fn last_error(&self) -> &RefCell<Vec<u8>> {
        &self.last_error
    }
    fn panicked(&self) -> &Cell<bool> {
        &self.panicked
    }
}

/// Runs a body on a host, catching panics; failures go to the host's last error.
///
/// # Safety
///
/// `host` is NULL or a live handle used by no other thread during the call.
unsafe fn with_host(
    function: &'static str,
    host: *mut rindle_room_host,
    body: impl FnOnce(&mut Host, &mut CDriver) -> Outcome,
) -> rindle_room_result {
    // SAFETY: the caller's contract.
    let Some(handle) = (unsafe { host.as_mut() }) else {
        return fail_thread(
            function,
            &Failure::Boundary(
                rindle_room_result::NullArgument,
                String::from("no host (`host` is NULL)"),
            ),
        );
    };
    if let Some(refused) = refuse_if_panicked(handle, function) {
        return refused;
    }
    let result = catch_unwind(AssertUnwindSafe(|| {
        body(&mut handle.host, &mut handle.driver)
    }));
    settle(handle, function, result)
}

fn malformed(e: rindle_room_core::host::JsonError) -> Failure {
    Failure::Boundary(rindle_room_result::MalformedInput, e.to_string())
}

/// A time argument: milliseconds since the epoch, finite and not negative.
fn time_arg(now: f64) -> Result<u64, Failure> {
    if now.is_finite() && now >= 0.0 {
        Ok(now as u64)
    } else {
        Err(Failure::Boundary(
            rindle_room_result::InvalidArgument,
            format!("`now` must be a time in ms since the epoch, got {now}"),
        ))
    }
}

/// Makes a host from its configuration (JSON text: `{docId, tokenKeys, entropy,
/// writes?, …}`; see `docs/host.md`). Nothing happens until `rindle_room_host_start()`.
///
/// `callbacks` is copied; its `ctx` must stay valid for the host's life. On failure
/// `*out_host` is untouched and the message is in `rindle_room_thread_last_error()`
/// (`RINDLE_ROOM_RESULT_MALFORMED_INPUT` for JSON, `RINDLE_ROOM_RESULT_INVALID_ARGUMENT`
/// for a configuration the host refuses).
///
/// # Safety
///
/// `config_json` is NULL or readable for `config_len` bytes; `callbacks` is NULL or
/// readable; `out_host` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_host_new(
    config_json: *const c_char,
    config_len: usize,
    callbacks: *const rindle_room_host_callbacks,
    out_host: *mut *mut rindle_room_host,
) -> rindle_room_result {
    with_thread("rindle_room_host_new", || {
        // SAFETY: the pointers follow the function's contract.
        let (config, callbacks, out) = unsafe {
            (
                str_arg("config_json", config_json, config_len)?,
                callbacks.as_ref().copied(),
                Out::new("out_host", out_host)?,
            )
        };
        let Some(callbacks) = callbacks else {
            return Err(Failure::Boundary(
                rindle_room_result::NullArgument,
                String::from("`callbacks` is NULL"),
            ));
        };
        let cfg = config_from_json(config).map_err(malformed)?;
        if cfg.writes.is_some() && callbacks.run_mutator.is_none() {
            return Err(Failure::Boundary(
                rindle_room_result::NullArgument,
                String::from("the configuration has `writes` but `callbacks.run_mutator` is NULL"),
            ));
        }
        let host = Host::new(cfg)
            .map_err(|e| Failure::Boundary(rindle_room_result::InvalidArgument, e.to_string()))?;
        out.set(Box::into_raw(Box::new(rindle_room_host {
            host,
            driver: CDriver(callbacks),
            last_error: RefCell::new(Vec::new()),
            panicked: Cell::new(false),
        })));
        Ok(())
    })
}

/// Frees a host and everything it holds. NULL is a no-op.
///
/// # Safety
///
/// `host` is NULL or a handle from `rindle_room_host_new()` not yet freed, used by no
/// other thread.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_host_free(host: *mut rindle_room_host) {
    if host.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: made by `Box::into_raw` in `rindle_room_host_new`, freed once.
        drop(unsafe { Box::from_raw(host) });
    }));
}

/// The message of the last call on `host` that failed; empty before the first. Owned by
/// the host: valid until the next call on it.
///
/// # Safety
///
/// `host` is NULL or a live handle; the out-parameters are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_host_last_error(
    host: *const rindle_room_host,
    out_message: *mut *const c_char,
    out_len: *mut usize,
) -> rindle_room_result {
    with_thread("rindle_room_host_last_error", || {
        // SAFETY: the pointers follow the function's contract.
        let (handle, message, len) = unsafe {
            (
                host.as_ref(),
                Out::new("out_message", out_message)?,
                Out::new("out_len", out_len)?,
            )
        };
        let handle = handle.ok_or_else(|| {
            Failure::Boundary(
                rindle_room_result::NullArgument,
                String::from("no host (`host` is NULL)"),
            )
        })?;
        let (ptr, n) = message_of(&handle.last_error);
        message.set(ptr);
        len.set(n);
        Ok(())
    })
}

/// Starts the host at `now` (ms): its first outputs (a journal read, or the lease mint)
/// are ready to poll.
///
/// # Safety
///
/// `host` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_host_start(
    host: *mut rindle_room_host,
    now: f64,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_host("rindle_room_host_start", host, |h, _| {
            h.start(time_arg(now)?);
            Ok(())
        })
    }
}

/// Hands the host one input at `now` (ms), as a JSON object `{"t": kind, …}`:
/// `leaseMinted`, `upstreamOpened`, `upstreamFrame`, `upstreamClosed`, `upstreamHeard`,
/// `connOpened`, `connFrame`, `connHeard`, `connClosed`, `journalRead`, `journalWritten`,
/// `authority`, `control` (the shapes are in `docs/host.md`). Mutators run inside this call.
///
/// # Safety
///
/// `host` is NULL or a live handle; `input_json` is NULL or readable for `input_len`
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_host_input(
    host: *mut rindle_room_host,
    now: f64,
    input_json: *const c_char,
    input_len: usize,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_host("rindle_room_host_input", host, |h, driver| {
            let (now, json) = (
                time_arg(now)?,
                str_arg("input_json", input_json, input_len)?,
            );
            with_input_json(json, |input| h.handle(now, input, driver)).map_err(malformed)
        })
    }
}

/// One text frame from downstream connection `conn`, as received (no JSON wrapping):
/// the same as the input `{"t":"connFrame","conn":…,"text":…}`, without the escaping.
///
/// # Safety
///
/// `host` is NULL or a live handle; `text` is NULL or readable for `text_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_host_conn_frame(
    host: *mut rindle_room_host,
    now: f64,
    conn: u64,
    text: *const c_char,
    text_len: usize,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_host("rindle_room_host_conn_frame", host, |h, driver| {
            let (now, text) = (time_arg(now)?, str_arg("text", text, text_len)?);
            h.handle(now, Input::ConnFrame { conn, text }, driver);
            Ok(())
        })
    }
}

/// One text frame from upstream link `link`, as received: the same as the input
/// `{"t":"upstreamFrame","link":…,"text":…}`, without the escaping.
///
/// # Safety
///
/// `host` is NULL or a live handle; `text` is NULL or readable for `text_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_host_upstream_frame(
    host: *mut rindle_room_host,
    now: f64,
    link: u64,
    text: *const c_char,
    text_len: usize,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_host("rindle_room_host_upstream_frame", host, |h, driver| {
            let (now, text) = (time_arg(now)?, str_arg("text", text, text_len)?);
            h.handle(now, Input::UpstreamFrame { link, text }, driver);
            Ok(())
        })
    }
}

/// Fires every host timer due at `now` (call it at `rindle_room_host_next_deadline()`).
///
/// # Safety
///
/// `host` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_host_timeout(
    host: *mut rindle_room_host,
    now: f64,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_host("rindle_room_host_timeout", host, |h, driver| {
            h.handle_timeout(time_arg(now)?, driver);
            Ok(())
        })
    }
}

/// When the host next wants `rindle_room_host_timeout()` (ms since the epoch). No timer
/// pending (or a stopped host): `*out_defined` is false and `*out_ms` 0.
///
/// # Safety
///
/// `host` is NULL or a live handle; the out-parameters are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_host_next_deadline(
    host: *mut rindle_room_host,
    out_ms: *mut f64,
    out_defined: *mut bool,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_host("rindle_room_host_next_deadline", host, |h, _| {
            let (out, defined) = (
                Out::new("out_ms", out_ms)?,
                Out::new("out_defined", out_defined)?,
            );
            let deadline = h.next_deadline();
            defined.set(deadline.is_some());
            out.set(deadline.map_or(0.0, |d| d as f64));
            Ok(())
        })
    }
}

/// The host's next output, as a JSON object `{"t": kind, …}` (`send`, `close`,
/// `mintLease`, `openUpstream`, `journalAppend`, `authorityApply`, `log`, …; the shapes
/// are in `docs/host.md`), in the order to carry them out. None left: `*out_defined` is
/// false and `*out_json` an empty buf.
///
/// # Safety
///
/// `host` is NULL or a live handle; the out-parameters are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_host_poll(
    host: *mut rindle_room_host,
    out_json: *mut rindle_room_buf,
    out_defined: *mut bool,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_host("rindle_room_host_poll", host, |h, _| {
            let (out, defined) = (
                Out::new("out_json", out_json)?,
                Out::new("out_defined", out_defined)?,
            );
            let next = h.poll_output().map(output_json);
            defined.set(next.is_some());
            out.set(rindle_room_buf::from_option(next));
            Ok(())
        })
    }
}

/// The host's state as a JSON object: `{"live", "stopped", "moved", "bootId",
/// "placementEpoch"}` (`bootId` is the current incarnation's, `""` before the first).
///
/// # Safety
///
/// `host` is NULL or a live handle; `out_json` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_host_status(
    host: *mut rindle_room_host,
    out_json: *mut rindle_room_buf,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_host("rindle_room_host_status", host, |h, _| {
            let out = Out::new("out_json", out_json)?;
            let mut s = format!(
                "{{\"live\":{},\"stopped\":{},\"moved\":{},\"bootId\":",
                h.is_live(),
                h.is_stopped(),
                h.is_moved()
            );
            rindle_room_core::json::write::write_str(&mut s, h.boot_id());
            s.push_str(&format!(",\"placementEpoch\":{}}}", h.placement_epoch()));
            out.set(rindle_room_buf::from_string(s));
            Ok(())
        })
    }
}
