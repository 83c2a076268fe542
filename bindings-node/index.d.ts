// Typings of @rindle/room-native. The names, parameters and return types are those of
// @rindle/room 0.9's wasm `WasmRoom`, `initRoomWasm` and token helpers, so a
// shell type-checks unchanged after switching its import. Checked by
// `npm run typecheck` (test/typings.ts uses every declaration).

/**
 * One room: the upstream-fed base store, its downstream serving state (queries deduped
 * by query key, subscribers addressed by the host's own keys) and, after
 * `enableWrites`, the write plane with at most one mutation transaction open at a
 * time. JSON travels as text both ways, byte-identical to the wasm class.
 *
 * Errors are `Error`s whose `code` is the room's stable error name (see
 * {@link RoomError}); wrong argument types throw `TypeError`.
 */
export declare class WasmRoom {
  private constructor();
  /** Releases the room now; later calls throw (`code` `"ROOM_FREED"`). Idempotent. */
  free(): void;
  /** Same as {@link WasmRoom.free}, for `using room = WasmRoom.open(…)`. */
  [Symbol.dispose](): void;
  /** The ack: advance the ledger for `[{clientID, mid}]` (JSON text). Returns
   *  `{"headCv": n}` (drain `commitAll` next) or `{"headCv": null}`. */
  ack(entries_json: string): string;
  /** The ledger row's value for the client (0 if none). */
  ackedLmid(client_id: string): number;
  /** The highest mid applied to the head for the client (0 if none). */
  appliedMid(client_id: string): number;
  /** Apply one upstream `nbatch.batch` (JSON text). Returns `{applied: "snapshot", rows}`
   *  | `{applied: "live", ops}` | `{applied: "duplicate"}` |
   *  `{applied: "staleEpoch", expected, got}`. Drain `commitAll` after a live apply. */
  apply(batch_json: string): string;
  /** Build the net-effect flush batch `{changes, batchHash, lmids}` (JSON text), or
   *  `undefined` when nothing is dirty. One flush in flight at a time. */
  beginFlush(): string | undefined;
  /** Open the transaction for `(client_id, mid)`: `{"begin": "tx"}` or
   *  `{"begin": "dedup"}`. Throws `mutation gap for …` on a gap. `name` / `args_json`
   *  are echoed by a deopt's outcome row. */
  beginMutation(
    client_id: string,
    mid: number,
    name?: string | null,
    args_json?: string | null,
  ): string;
  /** Drain every query once: `[{sub, batch}, …]` (JSON text), `[]` when nothing changed. */
  commitAll(): string;
  /** Apply the open transaction: `{"headCv": n}`, or under `enableWritesV2`
   *  `{"deopt": {reason, table, pk, …}}` (nothing applied, mid consumed). */
  commitMutation(): string;
  /** The last-applied upstream commit version; `undefined` before the snapshot. */
  cv(): number | undefined;
  /** How many `(table, pk)` keys are dirty. */
  dirtyLen(): number;
  /** The highest mid the write authority committed for the client (0 if none). */
  durableLmid(client_id: string): number;
  /** Enable the write plane over a live store; `owned_json` is a JSON array of tables. */
  enableWrites(owned_json: string): void;
  /** Enable the write plane with per-table scope specs (the commit gate). The optional
   *  `owned_json` (this package's extension) bounds the writable tables. */
  enableWritesV2(specs_json: string, owned_json?: string | null): void;
  /** The upstream subscription epoch this store was opened under. */
  epoch(): number;
  /** The authority refused the in-flight batch on CAS: `[{table, pk, current}]` (JSON
   *  text). Returns `{"headCv": n | null}`. */
  flushConflict(conflicts_json: string): string;
  /** Whether a flush is in flight. */
  flushInFlight(): boolean;
  /** The authority committed the in-flight batch. Returns `{"retired": n, "dirty": n}`:
   *  the pending mutations it made durable, and the keys still dirty. */
  flushOk(): string;
  /** The room's own commit order, stamped on every downstream frame. */
  headCv(): number;
  /** Snapshot applied and not poisoned. */
  isLive(): boolean;
  /** A failed apply killed this incarnation: free it and re-subscribe upstream. */
  isPoisoned(): boolean;
  /** Subscribe `sub` to the client's lmid query; same result as `subscribe`. */
  lmidSubscribe(sub: string, epoch: number, client_id: string, now_ms: number): string;
  /** How many downstream queries are materialized. */
  materializationCount(): number;
  /** Open a room from the upstream `nhello.hello` (JSON text); `idle_ttl_ms` is how long
   *  a query without subscribers stays materialized. Throws on a malformed hello. */
  static open(hello_json: string, idle_ttl_ms: number): WasmRoom;
  /** Applied-but-not-retired mutations. */
  pendingLen(): number;
  /** Drop the open transaction and consume its mid; `kind` `"rejected"` (default) or
   *  `"deopt"`, with an optional `reason`. */
  rejectMutation(kind?: string | null, reason?: string | null): void;
  /** Seed the durable watermarks from `[{clientID, lmid}]` (JSON text). Returns
   *  `{"headCv": n | null}`. */
  seedDurable(seeds_json: string): string;
  /** Attach `sub` at `epoch` to the query for `ast_json`. Returns
   *  `{queryKey, reused, hello, snapshot}` (JSON text). */
  subscribe(sub: string, epoch: number, ast_json: string, now_ms: number): string;
  /** How many downstream subscribers are attached. */
  subscriberCount(): number;
  /** Reclaim queries idle past the TTL; returns how many. */
  sweep(now_ms: number): number;
  /** Stage an add of a full-width row (JSON-array text). */
  txAdd(table: string, row_json: string): void;
  /** Stage an edit of a full-width row (JSON-array text), keyed by its pk cells. */
  txEdit(table: string, row_json: string): void;
  /** The effective row for `pk_json` under the open transaction (JSON-array text), or
   *  `undefined` when absent. */
  txGet(table: string, pk_json: string): string | undefined;
  /** Stage a remove of the row keyed `pk_json` (JSON array of pk cells). */
  txRemove(table: string, pk_json: string): void;
  /** Detach `sub`; returns whether it was attached. */
  unsubscribe(sub: string, now_ms: number): boolean;
}

/** The same class as {@link WasmRoom}, under a name that says what it is. */
export declare const NativeRoom: typeof WasmRoom;
export type NativeRoom = WasmRoom;

/**
 * What a failing room call throws: an `Error` (`TypeError` for a wrong argument type)
 * whose `code` is stable. The room's own codes are the Rust core's error names
 * (`"MALFORMED_INPUT"`, `"MUTATION_GAP"`, `"TOKEN_REFUSED"`, …, message verbatim);
 * the boundary adds `"ERR_INVALID_ARG_TYPE"`, `"ROOM_FREED"` and `"PANIC"`.
 */
export interface RoomError extends Error {
  readonly code: string;
}

/** A no-op kept for drop-in use: the native room needs no initialization. */
export declare function initRoomWasm(moduleOrPath?: unknown): Promise<void>;

export interface MintRoomTokenOptions {
  /** The document the token authorizes. */
  doc: string;
  /** The approved wire AST. */
  ast: unknown;
  /** The subject (user id), the revocation key. */
  sub: string;
  /** The key id and its secret (used as UTF-8 bytes). */
  kid: string;
  key: string;
  /** Lifetime in ms from `now`. */
  ttlMs: number;
  /** Mint time in ms since the epoch; defaults to `Date.now()`. */
  now?: number;
  /** The scope fingerprint to stamp ({@link scopeSpecsHash}); omitted when absent. */
  scopesHash?: string;
}

/** Signs a room lease token: `rt1.<payload>.<signature>`. */
export declare function mintRoomToken(opts: MintRoomTokenOptions): Promise<string>;

/** A verified token's payload. */
export interface RoomTokenPayload {
  v: 1;
  doc: string;
  ast: unknown;
  sub: string;
  iat: number;
  exp: number;
  kid: string;
  /** The advisory scope fingerprint stamped at mint time, if any. */
  scopesHash?: string;
}

export interface VerifyRoomTokenOptions {
  /** This room's document id: tokens for any other document are refused. */
  doc: string;
  /** Key ring, `kid` → secret. Unknown kids are refused. */
  keys: Record<string, string>;
  /** Verification time in ms since the epoch; defaults to `Date.now()`. */
  now?: number;
}

/** Verifies a token and resolves to its payload; rejects with {@link RoomTokenError}. */
export declare function verifyRoomToken(
  token: string,
  opts: VerifyRoomTokenOptions,
): Promise<RoomTokenPayload>;

/** FNV-1a-32 over the canonical JSON of the scope specs: 8 lowercase hex characters. */
export declare function scopeSpecsHash(specs: readonly unknown[]): string;

/** A refused token. `message` is `lease token refused: <reason>`. */
export declare class RoomTokenError extends Error {
  readonly reason: string;
  constructor(reason: string);
}

// ---------------------------------------------------------------------------------
// The room shell (the published room's `createRoomShell`, its options and its Node
// shell's behaviour), driving the core's room host over the `ws` package.
// ---------------------------------------------------------------------------------

/** A bare wire cell. */
export type WireValue = number | string | boolean | null;

/** A row keyed by column name. */
export type KeyedRow = Record<string, WireValue>;

/**
 * The write handle a room mutator runs against. Keyed methods are checked against the
 * table's columns; positional methods take cells in column order (pk cells in
 * primary-key order). `query` is not available in room mutators: it throws, and the
 * shell answers the mutation with a deopt `environment`. The handle is valid only
 * while the mutator runs.
 */
export interface MutationTx {
  /** Read one row by primary key (read-your-writes), e.g. `tx.row("issue", { id: 1 })`. */
  row(table: string, pk: KeyedRow): KeyedRow | undefined;
  /** Insert a full row (every column named; missing or unknown columns throw). */
  insert(table: string, row: KeyedRow): void;
  /** Update the row identified by the pk columns; only the named non-pk columns
   *  change. A missing row is a no-op. */
  update(table: string, row: KeyedRow): void;
  /** Insert, or fully replace when the pk already exists (a full row). */
  upsert(table: string, row: KeyedRow): void;
  /** Delete the row identified by the pk columns. A missing row is a no-op. */
  delete(table: string, pk: KeyedRow): void;
  /** Not supported in room mutators: throws (→ deopt `environment`). */
  query(query: { ast(): unknown }): never;
  get(table: string, pk: WireValue[]): WireValue[] | undefined;
  add(table: string, row: WireValue[]): void;
  remove(table: string, row: WireValue[]): void;
  edit(table: string, oldRow: WireValue[], newRow: (WireValue | undefined)[]): void;
}

/** The ambient authorization context: the connection's lease-token subject (`""` on
 *  replay of an entry journaled without one). */
export interface RoomMutatorCtx {
  user: string;
}

/** A room mutator: plain, synchronous, deterministic (re-invoked on journal replay).
 *  A mutator returning a promise or a generator is refused (rejected). */
export type RoomMutator = (tx: MutationTx, args: never, ctx: RoomMutatorCtx) => void;

/** One table's scope spec (the boot wire's `scopes`), passed verbatim to
 *  `enableWritesV2`. */
export interface RoomScopeSpec {
  table: string;
  /** The footprint's row-local predicate for this table (a wire `Condition`). */
  footprintWhere?: unknown;
  writable:
    | { kind: "none" }
    | { kind: "predicate"; where?: unknown; joinKeyCols: string[] };
}

/**
 * One journal record: an opaque string the room produces — a journaled mutation, or a
 * clientID's subject kept past compaction. A journal stores records as they are and
 * hands them back in order; the room alone reads them.
 */
export type RoomJournalRecord = string;

/** A journaled mutation as journals of earlier releases stored it: still read back
 *  (from {@link RoomJournal.replay}) and by {@link journalEntryOutcome}. */
export interface RoomJournalEntry {
  clientID: string;
  mid: number;
  name: string;
  args: unknown;
  /** The connection's authenticated subject at push time (`""` = none). */
  sub: string;
  /** The recorded verdict; absent on legacy entries (read with
   *  {@link journalEntryOutcome}). */
  outcome?: "applied" | "rejected" | "deopt";
  /** Legacy flag, written (`true`) beside both non-applied outcomes. */
  rejected?: boolean;
}

/** One journaled flush batch: its seq, the placement epoch and the exact body. */
export interface RoomFlushRecord {
  seq: number;
  epoch: number;
  body: string;
}

/** The durable sidecar an ack means. */
export interface RoomJournal {
  /** Append `records` durably, in order; resolving is the ack gate, a rejection kills
   *  the incarnation. */
  append(records: RoomJournalRecord[]): Promise<void>;
  /** Every record still kept, in order (the boot replay source; the room derives each
   *  clientID's subject binding from them). Entries of an earlier release's journal
   *  may come back as {@link RoomJournalEntry} objects. */
  replay(): Promise<Array<RoomJournalRecord | RoomJournalEntry>>;
  /** Journal a built flush batch before its first send (same durability contract). */
  appendFlush(record: RoomFlushRecord): Promise<void>;
  /** The authority settled flush `seq`: drop it. */
  confirmFlush(seq: number): Promise<void>;
  /** Unconfirmed flush records in seq order, and the highest seq ever appended. */
  replayFlushes(): Promise<{ records: RoomFlushRecord[]; maxSeq: number }>;
  /** Optional: drop the records a durable lmid covers (`durable`: clientID → lmid) —
   *  keep what {@link compactJournalRecords} returns for the records held. The room
   *  asks whenever everything journaled is confirmed, before a drain answers, and every
   *  16 flushes. Without it the journal keeps every record. */
  compact?(durable: Record<string, number>): Promise<void>;
  /** @deprecated The room derives every clientID → subject binding from the records
   *  ({@link compactJournalRecords} keeps them past compaction). Still read when present:
   *  `[clientID, sub]` pairs a journal of an earlier release kept. */
  bindings?(): Promise<[string, string][]>;
}

/** The verdict of a journaled entry (an opaque record or a legacy entry object):
 *  `outcome`, else the legacy `rejected` flag, else applied. An unknown `outcome`
 *  throws: the room refuses to boot from such a journal. */
export declare function journalEntryOutcome(
  entry: RoomJournalRecord | RoomJournalEntry,
): "applied" | "rejected" | "deopt";

/** Compaction of a journal's records: the ones to keep once the authority holds every
 *  mid up to `durable[clientID]` — the entries it does not cover, with one record per
 *  client in front that keeps the clientID bound to its subject. For a
 *  {@link RoomJournal.compact} of your own. */
export declare function compactJournalRecords(
  records: Array<RoomJournalRecord | RoomJournalEntry>,
  durable: Record<string, number>,
): RoomJournalRecord[];

/** An in-process journal: survives incarnations (and a second shell handed the same
 *  object), nothing beyond the process. */
export declare function memoryJournal(): RoomJournal;

/** A {@link RoomJournal} in one file (this package's durable journal). */
export interface FileRoomJournal extends RoomJournal {
  /** The journal file's absolute path. */
  readonly path: string;
  /** Bytes of valid records on disk. */
  size(): number;
  /** Waits for pending writes, fsyncs and closes the file. */
  close(): Promise<void>;
}

/**
 * A durable journal in the file `path` (created if missing): every append is fsynced
 * before it resolves; each record carries a CRC-32; a torn tail is truncated when the
 * file is opened, and damage followed by valid records throws. One process at a time.
 */
export declare function fileJournal(path: string): FileRoomJournal;

/** One CAS rejection in the authority's 409 conflict body (`current: null` = absent). */
export interface AuthorityConflict {
  table: string;
  pk: unknown[];
  current: unknown[] | null;
}

/** The apply outcome; anything else is a throw (plain: retried with the same body;
 *  `fatal: true`: the incarnation dies loudly). */
export type AuthorityApplyResult =
  | { kind: "ok"; applied: boolean; cv?: number }
  | { kind: "conflict"; conflicts: AuthorityConflict[] }
  | { kind: "fenced"; currentEpoch?: number };

/** The write authority (the API server's `/apply-row-change-txn` host). */
export interface RoomAuthority {
  /** Claim the placement epoch for `doc`, once per shell process at boot. */
  claimEpoch(doc: string): Promise<number>;
  /** The authority's ledger lmid per client (0 = none): the boot probe. */
  lmids(doc: string, clients: string[]): Promise<Record<string, number>>;
  /** Apply one batch: `body` is the exact journaled body, sent verbatim. */
  applyRowChangeTxn(body: string): Promise<AuthorityApplyResult>;
}

/** An authority error the shell must not retry. */
export interface FatalAuthorityError extends Error {
  readonly fatal: true;
}

export declare function fatalAuthorityError(message: string): FatalAuthorityError;

/** The subset of `fetch` the HTTP authority uses (the global `fetch` fits). */
export type AuthorityFetch = (
  url: string,
  init: { method: string; headers: Record<string, string>; body: string },
) => Promise<{ ok: boolean; status: number; text(): Promise<string> }>;

export interface HttpAuthorityOptions {
  /** The apply endpoint, e.g. `http://…/api/rindle/apply-row-change-txn`. */
  applyUrl: string;
  /** The epoch-claim endpoint, e.g. `http://…/api/rindle/claim-room-epoch`. */
  claimUrl: string;
  /** The lmid-probe endpoint, e.g. `http://…/api/rindle/room-lmids`. */
  lmidsUrl: string;
  /** Extra headers on every call (the flush credential rides here). */
  headers?: Record<string, string>;
  /** The fetch to use (default: the global `fetch`). */
  fetch?: AuthorityFetch;
}

/** The HTTP {@link RoomAuthority}: 409 `fenced` / `conflict` map to their results, a 500
 *  naming a batch-identity mismatch (or a malformed 409) is fatal, anything else non-OK
 *  is a retryable throw. */
export declare function httpAuthority(opts: HttpAuthorityOptions): RoomAuthority;

/** Where rindled lives and what to follow. */
export interface UpstreamOptions {
  /** rindled's subscription plane, e.g. `ws://127.0.0.1:7601`. */
  wsUrl: string;
  /** rindled's control plane, e.g. `http://127.0.0.1:7600` (lease minting). */
  controlUrl: string;
  /** Bearer token for the control plane. */
  authToken?: string;
  /** The document footprint: a wire `Ast`. */
  footprintAst: unknown;
  /** Lease TTL passed to `/materialize`. */
  leaseTtlMs?: number;
  /** The `init` clientID upstream (default `room-shell-<bootId>`). */
  clientId?: string;
  /** How long the upstream link may stay silent — no frame, no pong, no bytes — before
   *  the room takes it as dead (default 45 s): a ping after a third of it, and past it
   *  the link is closed, the incarnation ends and the room reconnects. `0`: never. Not in
   *  the published options. */
  silenceTimeoutMs?: number;
  /** The largest websocket message taken from rindled, in bytes (default 256 MiB): a
   *  seq-0 snapshot is one message of the whole footprint. A larger one fails the link
   *  with a log line naming this option, and the room reconnects. Not in the published
   *  options (the published shell takes `ws`'s 100 MiB). */
  maxFrameBytes?: number;
}

/** The write plane: mutators over the owned tables. */
export interface WritesOptions {
  /** Named mutators: plain synchronous `(tx, args, ctx)` functions. */
  mutators: Record<string, RoomMutator>;
  /** The only tables mutators may write. */
  ownedTables: string[];
  /** Scope specs: present ⇒ the gated (v2) write plane; their writable tables must be
   *  a subset of {@link WritesOptions.ownedTables} (checked at construction). */
  scopes?: RoomScopeSpec[];
  /** The journal an ack means (default `memoryJournal()`). */
  journal?: RoomJournal;
  /** Group-commit window in ms (default 5). */
  groupCommitMs?: number;
  /** The write authority; absent = journal-only writes. */
  authority?: RoomAuthority;
  /** Flush debounce in ms (default 250). */
  flushDebounceMs?: number;
  /** Flush at once past this many dirty keys (default 512). */
  flushDirtyMax?: number;
}

/** How clients are authorized and served. */
export interface DownstreamOptions {
  /** This room's document id: lease tokens for any other doc are refused. */
  docId: string;
  /** Token key ring: `kid` → shared secret. */
  tokenKeys: Record<string, string>;
  /** Idle grace before an unsubscribed query is reclaimed (default 30 s). */
  idleTtlMs?: number;
  /** Lease-expiry / idle-sweep cadence (default 1 s). */
  sweepIntervalMs?: number;
  /** How long a revocation refuses pre-revocation tokens (default 30 min). */
  revocationWindowMs?: number;
  /** The private control plane (`GET /stats`, `POST /revoke`, `POST /drain`) on
   *  127.0.0.1; omit to run without one. */
  control?: { authToken: string; port?: number };
  /** The write plane; omit to run read-only. */
  writes?: WritesOptions;
  /** Per-socket send budget in bytes (default 4 MiB); a socket that would buffer past
   *  it is terminated. */
  sendBudgetBytes?: number;
  /** The largest message a client may send, in bytes (default 1 MiB): a larger one
   *  closes the socket with 1009. Not in the published options. */
  maxFrameBytes?: number;
  /** How long a TCP connection may take to send its upgrade request (default 5000 ms);
   *  then it is dropped. Not in the published options. */
  handshakeTimeoutMs?: number;
  /** How many downstream sockets may be open at once, upgraded or upgrading (default
   *  10,000); past it an upgrade is answered with HTTP 503. Not in the published options. */
  maxConnections?: number;
  /** How long start-up keeps trying the first lease mint and the placement epoch claim
   *  while rindled or the authority is unreachable or answers 408, 429 or a 5xx
   *  (default 60 s; 100 ms between tries, doubling to 5 s, each a log line); a refusal
   *  fails `createRoomShell` at once. `0`: fail at the first failure, as the published
   *  shell does. Not in the published options. */
  startupTimeoutMs?: number;
  /** How long a client socket may stay silent — no frame, no pong — before it is closed
   *  with 1011 (default 90 s): a ping after a third of it. Browsers and `ws` answer pings
   *  by themselves. `0`: never. Not in the published options. */
  silenceTimeoutMs?: number;
  /** The most bytes the room's materialized queries may hold beyond their rows, their
   *  canonical texts and compiled conditions: `IN` sets, LIKE matchers (default
   *  256 MiB). At the cap idle queries are reclaimed longest-idle first; past that a new
   *  query is a `queryError` naming `downstream.max_query_bytes`. Not in the published
   *  options. */
  maxQueryBytes?: number;
  /** The most rows the room's materialized queries may hold together, counted per query
   *  level (default 10,000,000; ~100 bytes each). A subscribe whose new query takes the
   *  room past it is taken back, idle queries reclaimed first, and answered with a
   *  `queryError` naming `downstream.max_held_rows`. Not in the published options. */
  maxHeldRows?: number;
}

export interface RoomShellOptions {
  upstream: UpstreamOptions;
  downstream: DownstreamOptions;
  /** Downstream ws port (default 0 = ephemeral; bound on 127.0.0.1). */
  port?: number;
  /** Diagnostic sink (default: silent). */
  log?: (line: string) => void;
}

export interface RoomShell {
  /** The bound downstream port. */
  readonly port: number;
  /** The bound control-plane port (0 without a control plane). */
  readonly controlPort: number;
  /** Resolves when the current incarnation is live (seq-0 snapshot applied). */
  awaitLive(): Promise<void>;
  /** The last-applied upstream commit version, if live. */
  cv(): number | undefined;
  /** The upstream subscription epoch of the current incarnation, if any. */
  upstreamEpoch(): number | undefined;
  /** This incarnation's downstream bootId (rotates on every re-subscribe). */
  bootId(): string;
  /** Fire the write-behind flush now and await its settlement (no-op without an
   *  authority). */
  flushNow(): Promise<void>;
  close(): Promise<void>;
}

/** Boots a room shell on the native room: binds the ports, claims the placement epoch
 *  (with an authority), mints the upstream lease and connects upstream. Await
 *  `shell.awaitLive()` for the upstream snapshot. */
export declare function createRoomShell(opts: RoomShellOptions): Promise<RoomShell>;

// Fleet placement (docs/fleet.md): the reference `locateRoom` for an API server.

/** The rendezvous score of `boxId` for `doc`: the first 8 bytes of SHA-256(doc + "\n" + boxId), big-endian. */
export declare function rendezvousScore(doc: string, boxId: string): bigint;
/** The box (among `liveBoxes`) that should serve `doc`: the highest score; `null` when none is live. */
export declare function locateRoom(doc: string, liveBoxes: readonly string[]): string | null;
/** The websocket path of `doc`'s room on a fleet box: `/rooms/<doc, percent-encoded>`. */
export declare function roomPath(doc: string): string;
