/*
 * rindle_room.h: the C ABI of the Rindle room (librindle_room.a / librindle_room.so).
 *
 * A room is one document's base rows (fed by the upstream daemon), the queries that
 * downstream clients subscribe, and the netted batches they receive. Each function
 * mirrors one method of the `WasmRoom` JSON contract (`open` is rindle_room_open,
 * `commitAll` is rindle_room_commit_all, ...) and produces the same JSON, byte for byte.
 *
 * THE LOOP A HOST RUNS (mutate, then drain)
 *   1. rindle_room_open() from the upstream nhello.hello.
 *   2. rindle_room_apply() every upstream nbatch.batch; the seq-0 snapshot makes the
 *      room live.
 *   3. rindle_room_subscribe() each downstream query; send its hello, then its seq-0
 *      snapshot.
 *   4. After every input that changed the head (a live batch, a committed mutation, an
 *      ack, a flush conflict), rindle_room_commit_all() and ship each subscriber's batch.
 *   5. rindle_room_unsubscribe() on detach; rindle_room_sweep(now) on a timer.
 *   The room reads no clock and does no I/O: times are arguments (ms since the epoch).
 *   A full example: tests/c/embed.c.
 *
 * ARGUMENTS
 *   - Text is UTF-8 given as pointer + length in bytes (no NUL needed; a NUL byte is
 *     text like any other). JSON-text arguments are whole JSON values.
 *   - A required pointer is never NULL: NULL returns RINDLE_ROOM_RESULT_NULL_ARGUMENT.
 *     Where an argument is optional (JavaScript `undefined`), NULL with length 0 means
 *     undefined; NULL with another length is RINDLE_ROOM_RESULT_INVALID_LENGTH.
 *   - Bytes that are not UTF-8 return RINDLE_ROOM_RESULT_INVALID_UTF8; a length above
 *     PTRDIFF_MAX returns RINDLE_ROOM_RESULT_INVALID_LENGTH. Otherwise the pointer must
 *     be readable for that many bytes: a wrong length that fits is not detectable.
 *   - Numbers are `double`, as JavaScript passes them; the room checks their range.
 *
 * RESULTS
 *   - Every fallible function returns a rindle_room_result: RINDLE_ROOM_RESULT_OK (0)
 *     or an error code. The numbers are stable (see rindle_room_result).
 *   - Out-parameters come last and are written only on success: after a failure they
 *     hold what they held before.
 *   - Returned text is a rindle_room_buf (pointer + length, NUL-terminated too), owned
 *     by the caller: free each one with rindle_room_buf_free().
 *   - Numbers come back as `double` (exactly the JavaScript number), booleans as `bool`.
 *     rindle_room_json_number() spells a number as JSON.stringify does.
 *   - UNDEFINED: cv() before the snapshot, txGet() of an absent row, and beginFlush()
 *     with nothing to flush return `undefined` in JavaScript. Here they return
 *     RINDLE_ROOM_RESULT_OK with `*out_defined == false`; the value out-parameter is then
 *     an empty buf (`data` NULL, `len` 0) or 0 (a number).
 *
 * ERRORS
 *   - A failed call on a room keeps its message in the room: rindle_room_last_error().
 *     The room's own refusals have exactly the contract's messages.
 *   - Calls with no room to keep it (rindle_room_open, the token functions, the JSON
 *     helpers, and any method called with a NULL room: "no room") keep it per thread:
 *     rindle_room_thread_last_error().
 *   - rindle_room_result_name() / rindle_room_result_message() describe a code.
 *   - Nothing unwinds into C: every function catches panics. A panic (a bug in the room)
 *     returns RINDLE_ROOM_RESULT_PANIC, and that room refuses every later call with the
 *     same code; free it and open a new one. An upstream batch that contradicts the
 *     store returns RINDLE_ROOM_RESULT_POISONED and the store refuses to serve
 *     (RINDLE_ROOM_RESULT_NOT_LIVE): open a new room from a new hello.
 *
 * THREADS
 *   A handle is used from one thread at a time: calls on one room must not overlap
 *   (lock around them if several threads share it); it may move between threads.
 *   Distinct handles are independent and may be used from different threads at once.
 *   The functions that take no room may be called from any thread at any time.
 *
 * LINKING
 *   Static:  cc app.c -Iinclude librindle_room.a -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
 *   Shared:  cc app.c -Iinclude -L<dir> -lrindle_room
 *   or pkg-config: rindle_room.pc (see the README).
 */

#ifndef RINDLE_ROOM_H
#define RINDLE_ROOM_H

/* Generated from bindings-c/src by cbindgen (scripts/gen-header.sh). Do not edit. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
/* The header's version as text, "MAJOR.MINOR.PATCH"; compare it with rindle_room_version(). */
#define RINDLE_ROOM_VERSION_TEXT_(x) #x
#define RINDLE_ROOM_VERSION_TEXT(x) RINDLE_ROOM_VERSION_TEXT_(x)
#define RINDLE_ROOM_VERSION                                                        \
  RINDLE_ROOM_VERSION_TEXT(RINDLE_ROOM_VERSION_MAJOR)                              \
  "." RINDLE_ROOM_VERSION_TEXT(RINDLE_ROOM_VERSION_MINOR)                          \
  "." RINDLE_ROOM_VERSION_TEXT(RINDLE_ROOM_VERSION_PATCH)


// The library's major version (the `MAJOR` of `Cargo.toml`'s version).
#define RINDLE_ROOM_VERSION_MAJOR 0

// The library's minor version.
#define RINDLE_ROOM_VERSION_MINOR 1

// The library's patch version. The header also defines `RINDLE_ROOM_VERSION`, the
// three as text (`"0.1.0"`); `rindle_room_version()` returns the linked library's.
#define RINDLE_ROOM_VERSION_PATCH 0

// A `claim-room-epoch` reply (the `authorityClaim` output).
#define RINDLE_ROOM_AUTHORITY_CLAIM 0

// A `room-lmids` reply (the `authorityLmids` output).
#define RINDLE_ROOM_AUTHORITY_LMIDS 1

// An `apply-row-change-txn` reply (the `authorityApply` output).
#define RINDLE_ROOM_AUTHORITY_APPLY 2

// The mutator completed: its staged writes commit.
#define RINDLE_ROOM_MUTATOR_DONE 0

// No mutator has that name: the mutation is rejected with ``unknown mutator `name` ``.
#define RINDLE_ROOM_MUTATOR_UNKNOWN 1

// A final rejection: the reason given to `rindle_room_mutation_reject()` (or, without
// one, the last failed `rindle_room_mutation_*` call's message). Nothing applies.
#define RINDLE_ROOM_MUTATOR_REJECTED 2

// A `rindle_room_mutation_*` call failed and the mutator gives up with its error (C's
// spelling of Rust's `?`): `RINDLE_ROOM_RESULT_ENVIRONMENT` becomes an `environment`
// deopt, any other error a rejection with its message.
#define RINDLE_ROOM_MUTATOR_FAILED 3

// What a call did. Every fallible function returns one of these.
//
// `RINDLE_ROOM_RESULT_OK` (0) is success. Codes 1–99 come from the C boundary (a NULL
// pointer, bytes that are not UTF-8, a bad length, a panic). Codes 100–199 are the
// room's own error codes, with the same numbers and names as the Rust core's
// `ErrorCode`. The numbers are stable: a code is never renumbered, new codes get new
// numbers. `rindle_room_result_name()` and `rindle_room_result_message()` describe a
// code; the last-error functions give the message of one failed call.
enum rindle_room_result
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  // Success.
  RINDLE_ROOM_RESULT_OK = 0,
  // A required pointer argument or out-parameter is NULL. For a method of a room,
  // a NULL `room` means "no room": there is no handle to act on.
  RINDLE_ROOM_RESULT_NULL_ARGUMENT = 1,
  // A text argument is not valid UTF-8.
  RINDLE_ROOM_RESULT_INVALID_UTF8 = 2,
  // A length is impossible: larger than `PTRDIFF_MAX`, or non-zero next to a NULL
  // optional pointer.
  RINDLE_ROOM_RESULT_INVALID_LENGTH = 3,
  // The call panicked: a bug in the room. A room handle that panicked is unusable
  // from then on; every later call on it returns this code. Free it and open a new
  // room.
  RINDLE_ROOM_RESULT_PANIC = 4,
  // Input text is not JSON, or a JSON value has the wrong shape or type.
  RINDLE_ROOM_RESULT_MALFORMED_INPUT = 100,
  // An argument is out of its documented range (a negative time, a NaN epoch, …).
  RINDLE_ROOM_RESULT_INVALID_ARGUMENT = 101,
  // The upstream hello breaks a rule of `open` (comparator version, table shape, …).
  RINDLE_ROOM_RESULT_INVALID_HELLO = 110,
  // A `normalizedFp` does not match the tables it describes.
  RINDLE_ROOM_RESULT_FINGERPRINT_MISMATCH = 111,
  // An upstream batch carries an epoch newer than the store's.
  RINDLE_ROOM_RESULT_EPOCH_AHEAD = 112,
  // An upstream batch skips sequence numbers (or the first batch is not seq 0).
  RINDLE_ROOM_RESULT_SEQUENCE_GAP = 113,
  // An upstream batch does not fit the store: the store is now poisoned. Open a new
  // room from a new upstream hello.
  RINDLE_ROOM_RESULT_POISONED = 114,
  // The store has no snapshot yet, or was poisoned earlier: it cannot serve.
  RINDLE_ROOM_RESULT_NOT_LIVE = 115,
  // A query the room refuses: a malformed AST (`ast: not a wire Ast: …`) or one it
  // cannot build (`subscribe: Query(…)`).
  RINDLE_ROOM_RESULT_UNSUPPORTED_QUERY = 120,
  // A write-plane call arrived in the wrong state (no write plane, a second
  // transaction, no open transaction, a flush already in flight, …).
  RINDLE_ROOM_RESULT_WRONG_STATE = 130,
  // A mutation id skipped ahead of the client's applied watermark.
  RINDLE_ROOM_RESULT_MUTATION_GAP = 131,
  // A staged write was refused; the head is untouched.
  RINDLE_ROOM_RESULT_WRITE_REFUSED = 132,
  // A write-plane specification (owned tables, scope specs) is invalid.
  RINDLE_ROOM_RESULT_INVALID_SCOPE = 133,
  // A mutator used a capability rooms lack: hosts answer with an `environment` deopt.
  RINDLE_ROOM_RESULT_ENVIRONMENT = 134,
  // A lease token was refused; the message is the `lease token refused: …` reason.
  RINDLE_ROOM_RESULT_TOKEN_REFUSED = 140,
  // An internal invariant failed: a bug in the room, reported instead of panicking.
  RINDLE_ROOM_RESULT_INTERNAL = 199,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum rindle_room_result rindle_room_result;
#else
typedef uint32_t rindle_room_result;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

// A room: one document's base rows, its live queries and its write plane, behind the
// `WasmRoom` JSON contract. Opaque: made by `rindle_room_open()`, freed by
// `rindle_room_free()`.
//
// A handle is used from one thread at a time (it may move between threads); distinct
// handles are independent and may be used from different threads at once.
typedef struct rindle_room rindle_room;

// A room host: one document's room plus every rule of its shell (upstream, leases,
// downstream connections, the write plane, journal, flush, control plane), with no
// I/O and no clock. Opaque: made by `rindle_room_host_new()`, freed by
// `rindle_room_host_free()`. One thread at a time, like a room.
typedef struct rindle_room_host rindle_room_host;

// The open transaction of one mutator call. Opaque: the host hands it to the mutator
// callback, and it is valid only until the callback returns (it lives on the host's
// stack). Use it from the callback's thread only.
typedef struct rindle_room_mutation_tx rindle_room_mutation_tx;

// UTF-8 text owned by the library: a JSON result, a token, a hash.
//
// `data` points to `len` bytes followed by one NUL byte that `len` does not count, so
// `data` is also a C string (JSON text, tokens and hashes never contain a NUL byte).
// Free it with `rindle_room_buf_free()`, once; do not change any field before. A buf
// with `data == NULL` holds nothing: an absent (`undefined`) result, or a buf already
// freed. Zero a buf you declare (`memset(&out, 0, sizeof out);`, which C and C++
// accept without warnings), so that freeing it is safe whether or not a call filled it.
//
// ```c
// rindle_room_buf out;
// memset(&out, 0, sizeof out);
// if (rindle_room_commit_all(room, &out) == RINDLE_ROOM_RESULT_OK) {
//   fwrite(out.data, 1, out.len, stdout);
//   rindle_room_buf_free(&out);
// }
// ```
typedef struct {
  // The bytes, NUL-terminated; NULL when the buf holds nothing.
  const char *data;
  // The number of bytes, without the NUL.
  size_t len;
  // The size of the allocation behind `data`, for `rindle_room_buf_free()` (the text
  // is handed over as the room wrote it, without a copy). Not for the host's use.
  size_t capacity;
} rindle_room_buf;

// A mutator: runs mutation `name` (UTF-8, `name_len` bytes, not NUL-terminated) with
// `args_json` (JSON text; NULL with length 0 when the envelope has no args) as subject
// `user` (empty: none), writing through `tx` with the `rindle_room_mutation_*()`
// functions. Returns a `RINDLE_ROOM_MUTATOR_*` outcome. Runs synchronously inside the
// host call that delivered the mutation; `tx` is valid until it returns. It must not
// call the host.
typedef uint32_t (*rindle_room_mutator_fn)(void *ctx, rindle_room_mutation_tx *tx, const char *name, size_t name_len, const char *args_json, size_t args_len, const char *user, size_t user_len);

// Optional: the room's tables are known (each incarnation, before writes are served),
// as a JSON array of `{name, columns, primaryKey}`. Return NULL to accept, or a
// NUL-terminated message (read before the call returns) to refuse: the incarnation
// dies with `write-plane boot failed: <message>`.
typedef const char *(*rindle_room_tables_fn)(void *ctx, const char *tables_json, size_t tables_len);

// Optional: connection `conn`'s backlog, the bytes its writer has not taken yet: live
// frames in `*out_live`, snapshot frames in `*out_snapshot` (both start at 0). The
// host adds what it output but you have not polled, and closes a connection whose
// backlog passes the send budget.
typedef void (*rindle_room_backlog_fn)(void *ctx, uint64_t conn, uint64_t *out_live, uint64_t *out_snapshot);

// What the host calls back while it handles an input. Copied by
// `rindle_room_host_new()`; `ctx` is passed to every callback as it is.
typedef struct {
  // Passed to every callback.
  void *ctx;
  // Required when the configuration has `writes`: runs one mutator.
  rindle_room_mutator_fn run_mutator;
  // Optional (NULL: accept any tables).
  rindle_room_tables_fn tables_known;
  // Optional (NULL: every backlog is what the host output and you have not polled).
  rindle_room_backlog_fn backlog;
} rindle_room_host_callbacks;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

// Frees the text of a buf and empties it (`data` NULL, `len` and `capacity` 0). A NULL `buf`, or a buf whose
// `data` is NULL (absent, or already freed through this same struct), is a no-op.
//
// # Safety
//
// `buf` is NULL or points to a buf filled by this library and not changed since (a
// copy of a buf that was freed through another copy must not be passed).
void rindle_room_buf_free(rindle_room_buf *buf);

// Spells a number exactly as JavaScript's `JSON.stringify` does (`3`, `0.5`, `1e+21`;
// `null` for NaN and infinities): the room's own formatter, for hosts that put the
// numbers this API returns (`cv`, `headCv`, …) into JSON they write.
//
// Fails only with `RINDLE_ROOM_RESULT_NULL_ARGUMENT` (the message goes to
// `rindle_room_thread_last_error()`).
//
// # Safety
//
// `out_json` is NULL or writable.
rindle_room_result rindle_room_json_number(double value, rindle_room_buf *out_json);

// Spells a string as a JSON string literal exactly as `JSON.stringify` does (quotes,
// `\"`, `\\`, control characters escaped; everything else verbatim).
//
// # Safety
//
// `text` is NULL or readable for `text_len` bytes; `out_json` is NULL or writable.
rindle_room_result rindle_room_json_string(const char *text, size_t text_len, rindle_room_buf *out_json);

// The library's version, `"MAJOR.MINOR.PATCH"`: compare it with the header's
// `RINDLE_ROOM_VERSION` to catch a header and a library from different builds. The
// string is static: never free it.
const char *rindle_room_version(void);

// Makes a host from its configuration (JSON text: `{docId, tokenKeys, entropy,
// writes?, …}`; see `docs/host.md`). Nothing happens until `rindle_room_host_start()`.
//
// `callbacks` is copied; its `ctx` must stay valid for the host's life. On failure
// `*out_host` is untouched and the message is in `rindle_room_thread_last_error()`
// (`RINDLE_ROOM_RESULT_MALFORMED_INPUT` for JSON, `RINDLE_ROOM_RESULT_INVALID_ARGUMENT`
// for a configuration the host refuses).
//
// # Safety
//
// `config_json` is NULL or readable for `config_len` bytes; `callbacks` is NULL or
// readable; `out_host` is NULL or writable.
rindle_room_result rindle_room_host_new(const char *config_json, size_t config_len, const rindle_room_host_callbacks *callbacks, rindle_room_host **out_host);

// Frees a host and everything it holds. NULL is a no-op.
//
// # Safety
//
// `host` is NULL or a handle from `rindle_room_host_new()` not yet freed, used by no
// other thread.
void rindle_room_host_free(rindle_room_host *host);

// The message of the last call on `host` that failed; empty before the first. Owned by
// the host: valid until the next call on it.
//
// # Safety
//
// `host` is NULL or a live handle; the out-parameters are NULL or writable.
rindle_room_result rindle_room_host_last_error(const rindle_room_host *host, const char **out_message, size_t *out_len);

// Starts the host at `now` (ms): its first outputs (a journal read, or the lease mint)
// are ready to poll.
//
// # Safety
//
// `host` is NULL or a live handle.
rindle_room_result rindle_room_host_start(rindle_room_host *host, double now);

// Hands the host one input at `now` (ms), as a JSON object `{"t": kind, …}`:
// `leaseMinted`, `upstreamOpened`, `upstreamFrame`, `upstreamClosed`, `upstreamHeard`,
// `connOpened`, `connFrame`, `connHeard`, `connClosed`, `journalRead`, `journalWritten`,
// `authority`, `control` (the shapes are in `docs/host.md`). Mutators run inside this call.
//
// # Safety
//
// `host` is NULL or a live handle; `input_json` is NULL or readable for `input_len`
// bytes.
rindle_room_result rindle_room_host_input(rindle_room_host *host, double now, const char *input_json, size_t input_len);

// One text frame from downstream connection `conn`, as received (no JSON wrapping):
// the same as the input `{"t":"connFrame","conn":…,"text":…}`, without the escaping.
//
// # Safety
//
// `host` is NULL or a live handle; `text` is NULL or readable for `text_len` bytes.
rindle_room_result rindle_room_host_conn_frame(rindle_room_host *host, double now, uint64_t conn, const char *text, size_t text_len);

// One text frame from upstream link `link`, as received: the same as the input
// `{"t":"upstreamFrame","link":…,"text":…}`, without the escaping.
//
// # Safety
//
// `host` is NULL or a live handle; `text` is NULL or readable for `text_len` bytes.
rindle_room_result rindle_room_host_upstream_frame(rindle_room_host *host, double now, uint64_t link, const char *text, size_t text_len);

// Fires every host timer due at `now` (call it at `rindle_room_host_next_deadline()`).
//
// # Safety
//
// `host` is NULL or a live handle.
rindle_room_result rindle_room_host_timeout(rindle_room_host *host, double now);

// When the host next wants `rindle_room_host_timeout()` (ms since the epoch). No timer
// pending (or a stopped host): `*out_defined` is false and `*out_ms` 0.
//
// # Safety
//
// `host` is NULL or a live handle; the out-parameters are NULL or writable.
rindle_room_result rindle_room_host_next_deadline(rindle_room_host *host, double *out_ms, bool *out_defined);

// The host's next output, as a JSON object `{"t": kind, …}` (`send`, `close`,
// `mintLease`, `openUpstream`, `journalAppend`, `authorityApply`, `log`, …; the shapes
// are in `docs/host.md`), in the order to carry them out. None left: `*out_defined` is
// false and `*out_json` an empty buf.
//
// # Safety
//
// `host` is NULL or a live handle; the out-parameters are NULL or writable.
rindle_room_result rindle_room_host_poll(rindle_room_host *host, rindle_room_buf *out_json, bool *out_defined);

// The host's state as a JSON object: `{"live", "stopped", "moved", "bootId",
// "placementEpoch"}` (`bootId` is the current incarnation's, `""` before the first).
//
// # Safety
//
// `host` is NULL or a live handle; `out_json` is NULL or writable.
rindle_room_result rindle_room_host_status(rindle_room_host *host, rindle_room_buf *out_json);

// Classifies the HTTP reply to an authority call: `call` is one of
// `RINDLE_ROOM_AUTHORITY_*`, `url` names the endpoint in messages, `status` and `body`
// are the reply's. `*out_json` is the result to hand back as
// `{"t":"authority","io":…,"result":<it>}`: `{"claimed"}`, `{"lmids"}`,
// `{"applied":{"kind",…}}`, `{"retryable"}` or `{"fatal"}`. A network failure or
// timeout has no reply: send `{"retryable":"<what failed>"}` yourself.
//
// # Safety
//
// `url` is NULL or readable for `url_len` bytes, `body` for `body_len`; `out_json` is
// NULL or writable.
rindle_room_result rindle_room_authority_reply(uint32_t call, const char *url, size_t url_len, uint16_t status, const char *body, size_t body_len, rindle_room_buf *out_json);

// `tx.row(table, pk)`: the row with primary key `pk_json` (a JSON object naming every
// pk column), read-your-writes, as a JSON object of column values. Absent:
// `*out_defined` is false and `*out_json` an empty buf.
//
// # Safety
//
// `tx` is NULL or the running callback's handle; each text is NULL or readable for its
// length; the out-parameters are NULL or writable.
rindle_room_result rindle_room_mutation_row(rindle_room_mutation_tx *tx, const char *table, size_t table_len, const char *pk_json, size_t pk_len, rindle_room_buf *out_json, bool *out_defined);

// `tx.get(table, pk)`: the row with primary-key cells `pk_json` (a JSON array, pk
// order) as a JSON array of cells, or absent (`*out_defined` false).
//
// # Safety
//
// As `rindle_room_mutation_row()`.
rindle_room_result rindle_room_mutation_get(rindle_room_mutation_tx *tx, const char *table, size_t table_len, const char *pk_json, size_t pk_len, rindle_room_buf *out_json, bool *out_defined);

// `tx.insert(table, row)`: a full row as a JSON object naming every column; an
// existing key is refused (`RINDLE_ROOM_RESULT_WRITE_REFUSED`).
//
// # Safety
//
// `tx` is NULL or the running callback's handle; each text is NULL or readable for its
// length.
rindle_room_result rindle_room_mutation_insert(rindle_room_mutation_tx *tx, const char *table, size_t table_len, const char *row_json, size_t row_len);

// `tx.update(table, row)`: the pk columns and the columns to change, as a JSON
// object; a missing row is a no-op.
//
// # Safety
//
// `tx` is NULL or the running callback's handle; each text is NULL or readable for its
// length.
rindle_room_result rindle_room_mutation_update(rindle_room_mutation_tx *tx, const char *table, size_t table_len, const char *row_json, size_t row_len);

// `tx.upsert(table, row)`: a full row (JSON object) that replaces the existing one
// or is inserted.
//
// # Safety
//
// `tx` is NULL or the running callback's handle; each text is NULL or readable for its
// length.
rindle_room_result rindle_room_mutation_upsert(rindle_room_mutation_tx *tx, const char *table, size_t table_len, const char *row_json, size_t row_len);

// `tx.delete(table, pk)`: the pk as a JSON object; a missing row is a no-op.
//
// # Safety
//
// `tx` is NULL or the running callback's handle; each text is NULL or readable for its
// length.
rindle_room_result rindle_room_mutation_delete(rindle_room_mutation_tx *tx, const char *table, size_t table_len, const char *pk_json, size_t pk_len);

// `tx.add(table, cells)`: a positional insert of a full row (JSON array).
//
// # Safety
//
// `tx` is NULL or the running callback's handle; each text is NULL or readable for its
// length.
rindle_room_result rindle_room_mutation_add(rindle_room_mutation_tx *tx, const char *table, size_t table_len, const char *cells_json, size_t cells_len);

// `tx.remove(table, cells)`: a positional remove by a full row or its pk cells (JSON
// array).
//
// # Safety
//
// `tx` is NULL or the running callback's handle; each text is NULL or readable for its
// length.
rindle_room_result rindle_room_mutation_remove(rindle_room_mutation_tx *tx, const char *table, size_t table_len, const char *cells_json, size_t cells_len);

// `tx.edit(table, old, new)`: a positional edit of an existing row (both JSON arrays of
// every column, the pk unchanged); a `{"$keep":true}` cell in `new_json` keeps the
// current value.
//
// # Safety
//
// `tx` is NULL or the running callback's handle; each text is NULL or readable for its
// length.
rindle_room_result rindle_room_mutation_edit(rindle_room_mutation_tx *tx, const char *table, size_t table_len, const char *old_json, size_t old_len, const char *new_json, size_t new_len);

// `tx.query()`: queries are not available in room mutators. Always fails with
// `RINDLE_ROOM_RESULT_ENVIRONMENT`; return `RINDLE_ROOM_MUTATOR_FAILED` and the mutation
// deopts with reason `environment`.
//
// # Safety
//
// `tx` is NULL or the running callback's handle.
rindle_room_result rindle_room_mutation_query(rindle_room_mutation_tx *tx);

// Gives the reason of a rejection: return `RINDLE_ROOM_MUTATOR_REJECTED` next, and the
// client sees `reason` (UTF-8, pointer + length) in its `rejected` outcome.
//
// # Safety
//
// `tx` is NULL or the running callback's handle; `reason` is NULL or readable for
// `reason_len` bytes.
rindle_room_result rindle_room_mutation_reject(rindle_room_mutation_tx *tx, const char *reason, size_t reason_len);

// The message of the last `rindle_room_mutation_*` call on `tx` that failed (the core's
// message, as a Rust or JavaScript mutator would see it); empty before the first
// failure. Valid until the next call on `tx` or the callback's return.
//
// # Safety
//
// `tx` is NULL or the running callback's handle; the out-parameters are NULL or
// writable.
rindle_room_result rindle_room_mutation_last_error(const rindle_room_mutation_tx *tx, const char **out_message, size_t *out_len);

// The name of a result code (`"OK"`, `"MALFORMED_INPUT"`, …), or `"UNKNOWN"` for a
// number that is no code. The string is static: never free it.
//
// Takes a plain `uint32_t` so that any number is safe to pass.
const char *rindle_room_result_name(uint32_t code);

// One sentence that says what a result code means, or `"unknown result code"`. The
// string is static: never free it. The message of one failed call (which names the
// argument or the rule) comes from `rindle_room_last_error()` or
// `rindle_room_thread_last_error()`.
const char *rindle_room_result_message(uint32_t code);

// `WasmRoom.open(helloJson, idleTtlMs)`: opens a room from the upstream
// `nhello.hello` (JSON text). Queries idle for `idle_ttl_ms` are reclaimed by
// `rindle_room_sweep()`.
//
// On success `*out_room` is a new handle; free it with `rindle_room_free()`. On
// failure `*out_room` is untouched and the message is in
// `rindle_room_thread_last_error()` (`RINDLE_ROOM_RESULT_INVALID_HELLO`,
// `RINDLE_ROOM_RESULT_FINGERPRINT_MISMATCH`, `RINDLE_ROOM_RESULT_MALFORMED_INPUT`,
// `RINDLE_ROOM_RESULT_INVALID_ARGUMENT`, …).
//
// # Safety
//
// `hello_json` is NULL or readable for `hello_len` bytes; `out_room` is NULL or
// writable.
rindle_room_result rindle_room_open(const char *hello_json, size_t hello_len, double idle_ttl_ms, rindle_room **out_room);

// Frees a room and everything it holds. NULL is a no-op. The handle (and any message
// pointer borrowed from it) must not be used afterwards.
//
// # Safety
//
// `room` is NULL or a handle from `rindle_room_open()` not yet freed, and no other
// thread is using it.
void rindle_room_free(rindle_room *room);

// The message of the last call on `room` that did not return
// `RINDLE_ROOM_RESULT_OK` (the room's own messages are exactly the contract's error
// messages). An empty string before the first failure; successful calls leave it as it
// is.
//
// `*out_message` points to `*out_len` bytes of UTF-8 followed by a NUL, owned by the
// room: valid until the next call on `room` or `rindle_room_free()`. Do not free it.
//
// # Safety
//
// `room` is NULL or a live handle; `out_message` and `out_len` are NULL or writable.
rindle_room_result rindle_room_last_error(const rindle_room *room, const char **out_message, size_t *out_len);

// The message of the last failed call on this thread that had no room to keep it:
// `rindle_room_open()`, the token functions, the JSON helpers, and any method called
// with a NULL `room` (whose message says `no room`). Empty before the first such
// failure.
//
// `*out_message` points to `*out_len` bytes of UTF-8 followed by a NUL, owned by the
// thread: valid until the next failed call of that kind on this thread. Do not free it.
//
// # Safety
//
// `out_message` and `out_len` are NULL or writable.
rindle_room_result rindle_room_thread_last_error(const char **out_message, size_t *out_len);

// `WasmRoom.apply(batchJson)`: applies one upstream `nbatch.batch` (JSON text).
//
// `*out_json` is `{"applied":"snapshot","rows":N}`, `{"applied":"live","ops":N}`,
// `{"applied":"duplicate"}` or `{"applied":"staleEpoch","expected":E,"got":G}`. The
// seq-0 snapshot makes the room live; a live batch changes the head: drain with
// `rindle_room_commit_all()` next. A batch that contradicts the store returns
// `RINDLE_ROOM_RESULT_POISONED`: open a new room from a new hello.
//
// # Safety
//
// `room` is NULL or a live handle; `batch_json` is NULL or readable for `batch_len`
// bytes; `out_json` is NULL or writable.
rindle_room_result rindle_room_apply(rindle_room *room, const char *batch_json, size_t batch_len, rindle_room_buf *out_json);

// `WasmRoom.subscribe(sub, epoch, astJson, nowMs)`: attaches subscriber `sub` (a
// downstream key) to the query `ast_json`, replacing its previous subscription.
//
// `*out_json` is `{"queryKey":…,"reused":…,"hello":…,"snapshot":…}`: send the hello,
// then the seq-0 snapshot, to that subscriber at once.
//
// # Safety
//
// `room` is NULL or a live handle; each text is NULL or readable for its length;
// `out_json` is NULL or writable.
rindle_room_result rindle_room_subscribe(rindle_room *room, const char *sub, size_t sub_len, double epoch, const char *ast_json, size_t ast_len, double now_ms, rindle_room_buf *out_json);

// `WasmRoom.unsubscribe(sub, nowMs)`: detaches `sub`. `*out_attached` says whether it
// was attached.
//
// # Safety
//
// `room` is NULL or a live handle; `sub` is NULL or readable for `sub_len` bytes;
// `out_attached` is NULL or writable.
rindle_room_result rindle_room_unsubscribe(rindle_room *room, const char *sub, size_t sub_len, double now_ms, bool *out_attached);

// `WasmRoom.sweep(nowMs)`: reclaims the queries idle past the TTL at `now_ms`.
// `*out_reclaimed` is how many.
//
// # Safety
//
// `room` is NULL or a live handle; `out_reclaimed` is NULL or writable.
rindle_room_result rindle_room_sweep(rindle_room *room, double now_ms, double *out_reclaimed);

// `WasmRoom.commitAll()`: the drain. `*out_json` is `[{"sub":…,"batch":…},…]`, at most
// one net batch per subscriber, in byte order of the subscriber key (`[]` when nothing
// changed). Call it after every input that changed the head.
//
// # Safety
//
// `room` is NULL or a live handle; `out_json` is NULL or writable.
rindle_room_result rindle_room_commit_all(rindle_room *room, rindle_room_buf *out_json);

// `WasmRoom.cv()`: the last upstream cv. Before the snapshot it is `undefined`:
// `*out_defined` is false and `*out_cv` is 0.
//
// # Safety
//
// `room` is NULL or a live handle; `out_cv` and `out_defined` are NULL or writable.
rindle_room_result rindle_room_cv(const rindle_room *room, double *out_cv, bool *out_defined);

// `WasmRoom.headCv()`: the head's commit version (one more per applied batch and per
// committed mutation).
//
// # Safety
//
// `room` is NULL or a live handle; `out` is NULL or writable.
rindle_room_result rindle_room_head_cv(const rindle_room *room, double *out);

// `WasmRoom.epoch()`: the upstream epoch of the store.
//
// # Safety
//
// `room` is NULL or a live handle; `out` is NULL or writable.
rindle_room_result rindle_room_epoch(const rindle_room *room, double *out);

// `WasmRoom.isLive()`: whether the room has its snapshot and is not poisoned.
//
// # Safety
//
// `room` is NULL or a live handle; `out` is NULL or writable.
rindle_room_result rindle_room_is_live(const rindle_room *room, bool *out);

// `WasmRoom.isPoisoned()`: whether an upstream batch contradicted the store.
//
// # Safety
//
// `room` is NULL or a live handle; `out` is NULL or writable.
rindle_room_result rindle_room_is_poisoned(const rindle_room *room, bool *out);

// `WasmRoom.materializationCount()`: how many distinct queries are maintained.
//
// # Safety
//
// `room` is NULL or a live handle; `out` is NULL or writable.
rindle_room_result rindle_room_materialization_count(const rindle_room *room, double *out);

// `WasmRoom.subscriberCount()`: how many subscribers are attached.
//
// # Safety
//
// `room` is NULL or a live handle; `out` is NULL or writable.
rindle_room_result rindle_room_subscriber_count(const rindle_room *room, double *out);

// `mintRoomToken(opts)`: mints an `rt1` lease token. `opts_json` is
// `{"doc","ast","sub","kid","key","ttlMs","now","scopesHash"?}` (`now` is required:
// the room reads no clock). `*out_token` is the token text (not JSON-quoted).
//
// # Safety
//
// `opts_json` is NULL or readable for `opts_len` bytes; `out_token` is NULL or
// writable.
rindle_room_result rindle_room_mint_room_token(const char *opts_json, size_t opts_len, rindle_room_buf *out_token);

// `verifyRoomToken(token, opts)`: checks a lease token. `opts_json` is
// `{"doc","keys":{kid: secret},"now"}`. `*out_json` is the token's payload as JSON
// text. A refusal returns `RINDLE_ROOM_RESULT_TOKEN_REFUSED` with the
// `lease token refused: <reason>` message.
//
// # Safety
//
// Each text is NULL or readable for its length; `out_json` is NULL or writable.
rindle_room_result rindle_room_verify_room_token(const char *token, size_t token_len, const char *opts_json, size_t opts_len, rindle_room_buf *out_json);

// `scopeSpecsHash(specs)`: the 8-hex FNV-1a-32 hash of the scope specs (JSON text),
// as tokens carry it in `scopesHash`. `*out_hash` is the hash text (not JSON-quoted).
//
// # Safety
//
// `specs_json` is NULL or readable for `specs_len` bytes; `out_hash` is NULL or
// writable.
rindle_room_result rindle_room_scope_specs_hash(const char *specs_json, size_t specs_len, rindle_room_buf *out_hash);

// `WasmRoom.enableWrites(ownedJson)`: turns the write plane on (v1) for the tables
// named in the JSON array `owned_json`. Needs the snapshot.
//
// # Safety
//
// `room` is NULL or a live handle; `owned_json` is NULL or readable for `owned_len`
// bytes.
rindle_room_result rindle_room_enable_writes(rindle_room *room, const char *owned_json, size_t owned_len);

// `WasmRoom.enableWritesV2(specsJson, ownedJson?)`: turns the write plane on with
// scope specs. `owned_json` may be NULL (with `owned_len` 0): `undefined`, no bound on
// the writable tables.
//
// # Safety
//
// `room` is NULL or a live handle; each text is NULL or readable for its length.
rindle_room_result rindle_room_enable_writes_v2(rindle_room *room, const char *specs_json, size_t specs_len, const char *owned_json, size_t owned_len);

// `WasmRoom.beginMutation(client, mid, name?, argsJson?)`: opens the transaction of
// mutation `mid` of `client`. `name` and `args_json` may be NULL (length 0):
// `undefined`. `*out_json` is `{"begin":"tx"}` (stage with `rindle_room_tx_*()`, then
// commit or reject) or `{"begin":"dedup"}` (already applied: nothing to do).
//
// # Safety
//
// `room` is NULL or a live handle; each text is NULL or readable for its length;
// `out_json` is NULL or writable.
rindle_room_result rindle_room_begin_mutation(rindle_room *room, const char *client, size_t client_len, double mid, const char *name, size_t name_len, const char *args_json, size_t args_len, rindle_room_buf *out_json);

// `WasmRoom.txGet(table, pkJson)`: reads a row as the open transaction sees it. If
// there is none (`undefined`), `*out_defined` is false and `*out_json` is
// empty (`data` NULL); otherwise `*out_json` is the row as a JSON array.
//
// # Safety
//
// `room` is NULL or a live handle; each text is NULL or readable for its length;
// `out_json` and `out_defined` are NULL or writable.
rindle_room_result rindle_room_tx_get(rindle_room *room, const char *table, size_t table_len, const char *pk_json, size_t pk_len, rindle_room_buf *out_json, bool *out_defined);

// `WasmRoom.txAdd(table, rowJson)`: stages an insert of a full row (JSON array).
//
// # Safety
//
// `room` is NULL or a live handle; each text is NULL or readable for its length.
rindle_room_result rindle_room_tx_add(rindle_room *room, const char *table, size_t table_len, const char *row_json, size_t row_len);

// `WasmRoom.txEdit(table, rowJson)`: stages a replacement of the row with the same
// primary key (a full row, JSON array).
//
// # Safety
//
// `room` is NULL or a live handle; each text is NULL or readable for its length.
rindle_room_result rindle_room_tx_edit(rindle_room *room, const char *table, size_t table_len, const char *row_json, size_t row_len);

// `WasmRoom.txRemove(table, pkJson)`: stages a delete by primary key (JSON array of
// the key cells).
//
// # Safety
//
// `room` is NULL or a live handle; each text is NULL or readable for its length.
rindle_room_result rindle_room_tx_remove(rindle_room *room, const char *table, size_t table_len, const char *pk_json, size_t pk_len);

// `WasmRoom.commitMutation()`: commits the open transaction. `*out_json` is
// `{"headCv":N}` (applied: drain with `rindle_room_commit_all()` next) or
// `{"deopt":{"reason":…,"table":…,"pk":…,…}}` (refused by the commit gate: nothing
// changed; the host answers with a deopt).
//
// # Safety
//
// `room` is NULL or a live handle; `out_json` is NULL or writable.
rindle_room_result rindle_room_commit_mutation(rindle_room *room, rindle_room_buf *out_json);

// `WasmRoom.rejectMutation(kind?, reason?)`: drops the open transaction and records
// a rejected outcome. `kind` and `reason` may be NULL (length 0): `undefined`.
//
// # Safety
//
// `room` is NULL or a live handle; each text is NULL or readable for its length.
rindle_room_result rindle_room_reject_mutation(rindle_room *room, const char *kind, size_t kind_len, const char *reason, size_t reason_len);

// `WasmRoom.ack(entriesJson)`: `[{"clientID":…,"mid":…}]`, the mutations the authority
// made durable. `*out_json` is `{"headCv":N}` (drain next) or `{"headCv":null}`.
//
// # Safety
//
// `room` is NULL or a live handle; `entries_json` is NULL or readable for
// `entries_len` bytes; `out_json` is NULL or writable.
rindle_room_result rindle_room_ack(rindle_room *room, const char *entries_json, size_t entries_len, rindle_room_buf *out_json);

// `WasmRoom.ackedLmid(client)`: the client's acked mutation id.
//
// # Safety
//
// `room` is NULL or a live handle; `client` is NULL or readable for `client_len`
// bytes; `out` is NULL or writable.
rindle_room_result rindle_room_acked_lmid(const rindle_room *room, const char *client, size_t client_len, double *out);

// `WasmRoom.appliedMid(client)`: the client's last applied mutation id.
//
// # Safety
//
// `room` is NULL or a live handle; `client` is NULL or readable for `client_len`
// bytes; `out` is NULL or writable.
rindle_room_result rindle_room_applied_mid(const rindle_room *room, const char *client, size_t client_len, double *out);

// `WasmRoom.durableLmid(client)`: the client's durable mutation id.
//
// # Safety
//
// `room` is NULL or a live handle; `client` is NULL or readable for `client_len`
// bytes; `out` is NULL or writable.
rindle_room_result rindle_room_durable_lmid(const rindle_room *room, const char *client, size_t client_len, double *out);

// `WasmRoom.lmidSubscribe(sub, epoch, client, nowMs)`: subscribes `sub` to the
// client's mutation-ledger row. `*out_json` has the shape of
// `rindle_room_subscribe()`'s.
//
// # Safety
//
// `room` is NULL or a live handle; each text is NULL or readable for its length;
// `out_json` is NULL or writable.
rindle_room_result rindle_room_lmid_subscribe(rindle_room *room, const char *sub, size_t sub_len, double epoch, const char *client, size_t client_len, double now_ms, rindle_room_buf *out_json);

// `WasmRoom.seedDurable(seedsJson)`: `[{"clientID":…,"lmid":…}]`, the durable
// watermarks read back from the authority at boot. `*out_json` is `{"headCv":N}`
// (drain next) or `{"headCv":null}`.
//
// # Safety
//
// `room` is NULL or a live handle; `seeds_json` is NULL or readable for `seeds_len`
// bytes; `out_json` is NULL or writable.
rindle_room_result rindle_room_seed_durable(rindle_room *room, const char *seeds_json, size_t seeds_len, rindle_room_buf *out_json);

// `WasmRoom.pendingLen()`: how many committed mutations wait for their ack.
//
// # Safety
//
// `room` is NULL or a live handle; `out` is NULL or writable.
rindle_room_result rindle_room_pending_len(const rindle_room *room, double *out);

// `WasmRoom.dirtyLen()`: how many keys hold writes not yet flushed.
//
// # Safety
//
// `room` is NULL or a live handle; `out` is NULL or writable.
rindle_room_result rindle_room_dirty_len(const rindle_room *room, double *out);

// `WasmRoom.beginFlush()`: takes the dirty keys into one flight
// `{"changes":…,"batchHash":…,"lmids":…}` for the authority. With nothing to flush the
// result is `undefined`: `*out_defined` is false and `*out_json` is empty (`data` NULL).
// Settle a flight with `rindle_room_flush_ok()` or `rindle_room_flush_conflict()`.
//
// # Safety
//
// `room` is NULL or a live handle; `out_json` and `out_defined` are NULL or writable.
rindle_room_result rindle_room_begin_flush(rindle_room *room, rindle_room_buf *out_json, bool *out_defined);

// `WasmRoom.flushOk()`: the authority applied the flight. `*out_json` is
// `{"retired":N,"dirty":N}`: the pending mutations the flight made durable, and the
// keys still dirty (written during the flight: flush again).
//
// # Safety
//
// `room` is NULL or a live handle; `out_json` is NULL or writable.
rindle_room_result rindle_room_flush_ok(rindle_room *room, rindle_room_buf *out_json);

// `WasmRoom.flushConflict(conflictsJson)`: the authority refused the flight;
// `[{"table":…,"pk":…,"current":…}]` are its current rows. `*out_json` is
// `{"headCv":N}` (corrective frames: drain next) or `{"headCv":null}`.
//
// # Safety
//
// `room` is NULL or a live handle; `conflicts_json` is NULL or readable for
// `conflicts_len` bytes; `out_json` is NULL or writable.
rindle_room_result rindle_room_flush_conflict(rindle_room *room, const char *conflicts_json, size_t conflicts_len, rindle_room_buf *out_json);

// `WasmRoom.flushInFlight()`: whether a flight awaits its settlement.
//
// # Safety
//
// `room` is NULL or a live handle; `out` is NULL or writable.
rindle_room_result rindle_room_flush_in_flight(const rindle_room *room, bool *out);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* RINDLE_ROOM_H */
