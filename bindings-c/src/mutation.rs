//! The keyed `MutationTx` a C mutator writes through while the host runs it
//! (`rindle_room_mutation_*`), and how the mutator's return value becomes the host's
//! [`MutatorOutcome`].
//!
//! Rows are JSON text in the core's conventions (`room-core` `write/keyed_json.rs`):
//! keyed rows and keys are objects of column values, positional rows and pk cells are
//! arrays. Every check and every message is the core's, so a C mutator is refused
//! exactly as a Rust or a JavaScript one.

use core::cell::RefCell;
use core::ffi::c_char;
use core::panic::AssertUnwindSafe;
use std::any::Any;
use std::panic::catch_unwind;

use rindle_room_core::host::MutatorOutcome;
use rindle_room_core::write::keyed::MutationTx;
use rindle_room_core::{Error, ErrorCode};

use crate::boundary::{message_of, panic_message, str_arg, Failure, Out};
use crate::buf::rindle_room_buf;
use crate::result::rindle_room_result;

/// The mutator completed: its staged writes commit.
pub const RINDLE_ROOM_MUTATOR_DONE: u32 = 0;
/// No mutator has that name: the mutation is rejected with ``unknown mutator `name` ``.
pub const RINDLE_ROOM_MUTATOR_UNKNOWN: u32 = 1;
/// A final rejection: the reason given to `rindle_room_mutation_reject()` (or, without
/// one, the last failed `rindle_room_mutation_*` call's message). Nothing applies.
pub const RINDLE_ROOM_MUTATOR_REJECTED: u32 = 2;
/// A `rindle_room_mutation_*` call failed and the mutator gives up with its error (C's
/// spelling of Rust's `?`): `RINDLE_ROOM_RESULT_ENVIRONMENT` becomes an `environment`
/// deopt, any other error a rejection with its message.
pub const RINDLE_ROOM_MUTATOR_FAILED: u32 = 3;

/// The open transaction of one mutator call. Opaque: the host hands it to the mutator
/// callback, and it is valid only until the callback returns (it lives on the host's
/// stack). Use it from the callback's thread only.
#[allow(non_camel_case_types)]
pub struct rindle_room_mutation_tx {
    /// The core's keyed transaction, lifetime erased (see [`with_tx`]).
    tx: *mut (),
    /// The last failed call's message, NUL-terminated.
    last_error: RefCell<Vec<u8>>,
    /// The last failed call's core error.
    failure: Option<Error>,
    /// The reason given to `rindle_room_mutation_reject()`.
    reason: Option<String>,
    /// A panic inside a call, resumed by the host once the callback returned.
    panic: Option<Box<dyn Any + Send>>,
}

impl core::fmt::Debug for rindle_room_mutation_tx {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("rindle_room_mutation_tx")
            .field("failure", &self.failure)
            .field("reason", &self.reason)
            .field("panicked", &self.panic.is_some())
            .finish_non_exhaustive()
    }
}

impl rindle_room_mutation_tx {
    /// Runs `callback` with a handle over `tx`, then reads its return code.
    pub(crate) fn run(
        tx: &mut MutationTx<'_>,
        name: &str,
        callback: impl FnOnce(*mut rindle_room_mutation_tx) -> u32,
    ) -> MutatorOutcome {
        let mut handle = rindle_room_mutation_tx {
            tx: core::ptr::from_mut(tx).cast(),
            last_error: RefCell::new(Vec::new()),
            failure: None,
            reason: None,
            panic: None,
        };
        let code = callback(&mut handle);
        if let Some(payload) = handle.panic.take() {
            // The C frames are gone: the host's own guard catches this.
            std::panic::resume_unwind(payload);
        }
        handle.outcome(code, name)
    }

    fn outcome(self, code: u32, name: &str) -> MutatorOutcome {
        let failed = |failure: Option<Error>| match failure {
            Some(e) if e.code() == ErrorCode::Environment => {
                MutatorOutcome::Environment(e.message().to_string())
            }
            Some(e) => MutatorOutcome::Rejected(e.message().to_string()),
            None => MutatorOutcome::Rejected(format!(
                "mutator `{name}` failed without a failed rindle_room_mutation_* call"
            )),
        };
        match code {
            RINDLE_ROOM_MUTATOR_DONE => MutatorOutcome::Done,
            RINDLE_ROOM_MUTATOR_UNKNOWN => MutatorOutcome::Unknown,
            RINDLE_ROOM_MUTATOR_REJECTED => match (self.reason, self.failure) {
                (Some(reason), _) => MutatorOutcome::Rejected(reason),
                (None, Some(e)) => MutatorOutcome::Rejected(e.message().to_string()),
                (None, None) => MutatorOutcome::Rejected(format!("rejected by mutator `{name}`")),
            },
            RINDLE_ROOM_MUTATOR_FAILED => failed(self.failure),
            other => MutatorOutcome::Rejected(format!(
                "mutator `{name}` returned {other}, which is not a RINDLE_ROOM_MUTATOR_* outcome"
            )),
        }
    }
}

/// Runs a `rindle_room_mutation_*` body on the open transaction, catching panics;
/// failures are recorded on the handle.
///
/// # Safety
///
/// `tx` is NULL or the handle passed to the running mutator callback.
unsafe fn with_tx(
    function: &'static str,
    tx: *mut rindle_room_mutation_tx,
    body: impl FnOnce(&mut MutationTx<'_>) -> Result<(), Failure>,
) -> rindle_room_result {
    // SAFETY: the caller passes NULL or the live handle of the running callback.
    let Some(handle) = (unsafe { tx.as_mut() }) else {
        return crate::boundary::fail_thread(
            function,
            &Failure::Boundary(
                rindle_room_result::NullArgument,
                String::from("no transaction (`tx` is NULL)"),
            ),
        );
    };
    if handle.panic.is_some() {
        let failure = Failure::Boundary(
            rindle_room_result::Panic,
            String::from("an earlier call on this transaction panicked; return from the mutator"),
        );
        failure.record(function, &handle.last_error);
        return failure.code();
    }
    // SAFETY: `handle.tx` was made from the `&mut MutationTx` that `run` borrows for
    // the whole callback; the handle does not outlive the callback (its contract), and
    // calls on it do not overlap (one thread).
    let tx = unsafe { &mut *handle.tx.cast::<MutationTx<'_>>() };
    let failure = match catch_unwind(AssertUnwindSafe(|| body(tx))) {
        Ok(Ok(())) => return rindle_room_result::Ok,
        Ok(Err(failure)) => failure,
        Err(payload) => {
            let failure = panic_message(function, &*payload);
            handle.panic = Some(payload);
            failure
        }
    };
    if let Failure::Room(e) = &failure {
        handle.failure = Some(e.clone());
    }
    failure.record(function, &handle.last_error);
    failure.code()
}

/// One keyed write: a table and one JSON text.
///
/// # Safety
///
/// As the exported functions: `tx` NULL or the running callback's handle, each text
/// NULL or readable for its length.
unsafe fn keyed_write(
    function: &'static str,
    tx: *mut rindle_room_mutation_tx,
    (table, table_len): (*const c_char, usize),
    (arg, json, json_len): (&'static str, *const c_char, usize),
    write: impl FnOnce(&mut MutationTx<'_>, &str, &str) -> Result<(), Error>,
) -> rindle_room_result {
    // SAFETY: forwarded from the exported function's contract.
    unsafe {
        with_tx(function, tx, |t| {
            let (table, json) = (
                str_arg("table", table, table_len)?,
                str_arg(arg, json, json_len)?,
            );
            Ok(write(t, table, json)?)
        })
    }
}

/// One read: a table and a key as JSON text; the row as JSON text, or absent.
///
/// # Safety
///
/// As [`keyed_write`], and each out-parameter NULL or writable.
unsafe fn read(
    function: &'static str,
    tx: *mut rindle_room_mutation_tx,
    (table, table_len): (*const c_char, usize),
    (pk_json, pk_len): (*const c_char, usize),
    (out_json, out_defined): (*mut rindle_room_buf, *mut bool),
    get: impl FnOnce(&mut MutationTx<'_>, &str, &str) -> Result<Option<String>, Error>,
) -> rindle_room_result {
    // SAFETY: forwarded from the exported function's contract.
    unsafe {
        with_tx(function, tx, |t| {
            let (table, pk, out, defined) = (
                str_arg("table", table, table_len)?,
                str_arg("pk_json", pk_json, pk_len)?,
                Out::new("out_json", out_json)?,
                Out::new("out_defined", out_defined)?,
            );
            let row = get(t, table, pk)?;
            defined.set(row.is_some());
            out.set(rindle_room_buf::from_option(row));
            Ok(())
        })
    }
}

/// `tx.row(table, pk)`: the row with primary key `pk_json` (a JSON object naming every
/// pk column), read-your-writes, as a JSON object of column values. Absent:
/// `*out_defined` is false and `*out_json` an empty buf.
///
/// # Safety
///
/// `tx` is NULL or the running callback's handle; each text is NULL or readable for its
/// length; the out-parameters are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_mutation_row(
    tx: *mut rindle_room_mutation_tx,
    table: *const c_char,
    table_len: usize,
    pk_json: *const c_char,
    pk_len: usize,
    out_json: *mut rindle_room_buf,
    out_defined: *mut bool,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        read(
            "rindle_room_mutation_row",
            tx,
            (table, table_len),
            (pk_json, pk_len),
            (out_json, out_defined),
            |t, a, b| t.row_json(a, b),
        )
    }
}

/// `tx.get(table, pk)`: the row with primary-key cells `pk_json` (a JSON array, pk
/// order) as a JSON array of cells, or absent (`*out_defined` false).
///
/// # Safety
///
/// As `rindle_room_mutation_row()`.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_mutation_get(
    tx: *mut rindle_room_mutation_tx,
    table: *const c_char,
    table_len: usize,
    pk_json: *const c_char,
    pk_len: usize,
    out_json: *mut rindle_room_buf,
    out_defined: *mut bool,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        read(
            "rindle_room_mutation_get",
            tx,
            (table, table_len),
            (pk_json, pk_len),
            (out_json, out_defined),
            |t, a, b| t.get_json(a, b),
        )
    }
}

/// `tx.insert(table, row)`: a full row as a JSON object naming every column; an
/// existing key is refused (`RINDLE_ROOM_RESULT_WRITE_REFUSED`).
///
/// # Safety
///
/// `tx` is NULL or the running callback's handle; each text is NULL or readable for its
/// length.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_mutation_insert(
    tx: *mut rindle_room_mutation_tx,
    table: *const c_char,
    table_len: usize,
    row_json: *const c_char,
    row_len: usize,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        keyed_write(
            "rindle_room_mutation_insert",
            tx,
            (table, table_len),
            ("row_json", row_json, row_len),
            |t, a, b| t.insert_json(a, b),
        )
    }
}

/// `tx.update(table, row)`: the pk columns and the columns to change, as a JSON
/// object; a missing row is a no-op.
///
/// # Safety
///
/// `tx` is NULL or the running callback's handle; each text is NULL or readable for its
/// length.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_mutation_update(
    tx: *mut rindle_room_mutation_tx,
    table: *const c_char,
    table_len: usize,
    row_json: *const c_char,
    row_len: usize,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        keyed_write(
            "rindle_room_mutation_update",
            tx,
            (table, table_len),
            ("row_json", row_json, row_len),
            |t, a, b| t.update_json(a, b),
        )
    }
}

/// `tx.upsert(table, row)`: a full row (JSON object) that replaces the existing one
/// or is inserted.
///
/// # Safety
///
/// `tx` is NULL or the running callback's handle; each text is NULL or readable for its
/// length.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_mutation_upsert(
    tx: *mut rindle_room_mutation_tx,
    table: *const c_char,
    table_len: usize,
    row_json: *const c_char,
    row_len: usize,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        keyed_write(
            "rindle_room_mutation_upsert",
            tx,
            (table, table_len),
            ("row_json", row_json, row_len),
            |t, a, b| t.upsert_json(a, b),
        )
    }
}

/// `tx.delete(table, pk)`: the pk as a JSON object; a missing row is a no-op.
///
/// # Safety
///
/// `tx` is NULL or the running callback's handle; each text is NULL or readable for its
/// length.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_mutation_delete(
    tx: *mut rindle_room_mutation_tx,
    table: *const c_char,
    table_len: usize,
    pk_json: *const c_char,
    pk_len: usize,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        keyed_write(
            "rindle_room_mutation_delete",
            tx,
            (table, table_len),
            ("pk_json", pk_json, pk_len),
            |t, a, b| t.delete_json(a, b),
        )
    }
}

/// `tx.add(table, cells)`: a positional insert of a full row (JSON array).
///
/// # Safety
///
/// `tx` is NULL or the running callback's handle; each text is NULL or readable for its
/// length.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_mutation_add(
    tx: *mut rindle_room_mutation_tx,
    table: *const c_char,
    table_len: usize,
    cells_json: *const c_char,
    cells_len: usize,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        keyed_write(
            "rindle_room_mutation_add",
            tx,
            (table, table_len),
            ("cells_json", cells_json, cells_len),
            |t, a, b| t.add_json(a, b),
        )
    }
}

/// `tx.remove(table, cells)`: a positional remove by a full row or its pk cells (JSON
/// array).
///
/// # Safety
///
/// `tx` is NULL or the running callback's handle; each text is NULL or readable for its
/// length.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_mutation_remove(
    tx: *mut rindle_room_mutation_tx,
    table: *const c_char,
    table_len: usize,
    cells_json: *const c_char,
    cells_len: usize,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        keyed_write(
            "rindle_room_mutation_remove",
            tx,
            (table, table_len),
            ("cells_json", cells_json, cells_len),
            |t, a, b| t.remove_json(a, b),
        )
    }
}

/// `tx.edit(table, old, new)`: a positional edit of an existing row (both JSON arrays of
/// every column, the pk unchanged); a `{"$keep":true}` cell in `new_json` keeps the
/// current value.
///
/// # Safety
///
/// `tx` is NULL or the running callback's handle; each text is NULL or readable for its
/// length.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_mutation_edit(
    tx: *mut rindle_room_mutation_tx,
    table: *const c_char,
    table_len: usize,
    old_json: *const c_char,
    old_len: usize,
    new_json: *const c_char,
    new_len: usize,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_tx("rindle_room_mutation_edit", tx, |t| {
            let (table, old, new) = (
                str_arg("table", table, table_len)?,
                str_arg("old_json", old_json, old_len)?,
                str_arg("new_json", new_json, new_len)?,
            );
            Ok(t.edit_json(table, old, new)?)
        })
    }
}

/// `tx.query()`: queries are not available in room mutators. Always fails with
/// `RINDLE_ROOM_RESULT_ENVIRONMENT`; return `RINDLE_ROOM_MUTATOR_FAILED` and the mutation
/// deopts with reason `environment`.
///
/// # Safety
///
/// `tx` is NULL or the running callback's handle.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_mutation_query(
    tx: *mut rindle_room_mutation_tx,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe { with_tx("rindle_room_mutation_query", tx, |t| Ok(t.query()?)) }
}

/// Gives the reason of a rejection: return `RINDLE_ROOM_MUTATOR_REJECTED` next, and the
/// client sees `reason` (UTF-8, pointer + length) in its `rejected` outcome.
///
/// # Safety
///
/// `tx` is NULL or the running callback's handle; `reason` is NULL or readable for
/// `reason_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_mutation_reject(
    tx: *mut rindle_room_mutation_tx,
    reason: *const c_char,
    reason_len: usize,
) -> rindle_room_result {
    // SAFETY: `reason` follows this function's contract; `tx` is checked by `with_tx`
    // first and then read again only on success, from the callback's thread.
    unsafe {
        let mut given = None;
        let rc = with_tx("rindle_room_mutation_reject", tx, |_| {
            given = Some(str_arg("reason", reason, reason_len)?.to_string());
            Ok(())
        });
        if let (Some(reason), Some(handle)) = (given, tx.as_mut()) {
            handle.reason = Some(reason);
        }
        rc
    }
}

/// The message of the last `rindle_room_mutation_*` call on `tx` that failed (the core's
/// message, as a Rust or JavaScript mutator would see it); empty before the first
/// failure. Valid until the next call on `tx` or the callback's return.
///
/// # Safety
///
/// `tx` is NULL or the running callback's handle; the out-parameters are NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_mutation_last_error(
    tx: *const rindle_room_mutation_tx,
    out_message: *mut *const c_char,
    out_len: *mut usize,
) -> rindle_room_result {
    crate::boundary::with_thread("rindle_room_mutation_last_error", || {
        // SAFETY: the pointers follow this function's contract.
        let (handle, message, len) = unsafe {
            (
                tx.as_ref(),
                Out::new("out_message", out_message)?,
                Out::new("out_len", out_len)?,
            )
        };
        let Some(handle) = handle else {
            return Err(Failure::Boundary(
                rindle_room_result::NullArgument,
                String::from("no transaction (`tx` is NULL)"),
            ));
        };
        let (ptr, n) = message_of(&handle.last_error);
        message.set(ptr);
        len.set(n);
        Ok(())
    })
}
