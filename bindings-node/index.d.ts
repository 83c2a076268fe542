// Typings of @rindle/room-native. The names, parameters and return types are those of
// @rindle/room's wasm `WasmRoom`, `initRoomWasm` and token helpers (seed 000), so a
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
  /** The authority committed the in-flight batch; `cv` (optional, this package's
   *  extension) is its commit version. Returns `{"retired": n, "dirty": n}`. */
  flushOk(cv?: number | null): string;
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
