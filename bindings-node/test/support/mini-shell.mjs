// A minimal room shell written against the wasm WasmRoom's calling pattern, exactly as
// @rindle/room's Node shell (shell.js) calls it: `WasmRoom.open(JSON.stringify(hello), …)`
// on nhello, `JSON.parse(room.apply(JSON.stringify(batch)))` on nbatch, one
// `commitAll` drain after every change, `verifyRoomToken` + `subscribe` for
// downstream queries, `beginMutation` → mutator over `tx*` → `commitMutation` →
// journal → `ack`, and `beginFlush` → authority → `flushOk` / `flushConflict`.
// Sockets are replaced by plain objects with a `sent` array, the journal by an array.
//
// The only line that differs from a wasm shell is the import below (the published
// shell imports from "./wasm.js" and "./token.js").
import {
  initRoomWasm,
  WasmRoom,
  verifyRoomToken,
  RoomTokenError,
  scopeSpecsHash,
} from "@rindle/room-native";

export class MiniShell {
  constructor(opts) {
    this.opts = opts; // { docId, tokenKeys, idleTtlMs?, writes?: {mutators, ownedTables, scopes?}, authority? }
    this.room = null;
    this.live = false;
    this.subs = new Map(); // subKey → { conn, clientQid }
    this.journal = [];
    this.log = [];
    this.nextConn = 1;
    this.armedScopesHash = undefined;
  }

  async start() {
    await initRoomWasm();
  }

  connect() {
    return { id: this.nextConn++, sent: [], queries: new Map(), clientID: null, sub: null };
  }

  // ------------------------------ upstream leg ------------------------------

  onUpstreamFrame(frame) {
    switch (frame.t) {
      case "nhello":
        if (this.room) this.incarnationDead("superseded by a new upstream hello");
        try {
          this.room = WasmRoom.open(JSON.stringify(frame.hello), this.opts.idleTtlMs ?? 30_000);
          this.log.push(`upstream hello: epoch ${this.room.epoch()}`);
        } catch (e) {
          this.incarnationDead(`upstream hello rejected: ${String(e)}`);
        }
        break;
      case "nbatch": {
        if (!this.room) return;
        let status;
        try {
          status = JSON.parse(this.room.apply(JSON.stringify(frame.batch)));
        } catch (e) {
          this.incarnationDead(`upstream apply failed: ${String(e)}`);
          return;
        }
        if (status.applied === "snapshot") {
          this.log.push(`upstream snapshot: ${status.rows} rows @ cv ${this.room.cv()}`);
          this.finishBoot(this.room);
        } else if (status.applied === "live") {
          this.drainDownstream();
        } else if (status.applied === "staleEpoch") {
          this.log.push("dropped stale-epoch upstream frame");
        }
        break;
      }
      default:
        break;
    }
  }

  finishBoot(room) {
    const writes = this.opts.writes;
    if (writes) {
      if (writes.scopes) {
        room.enableWritesV2(JSON.stringify(writes.scopes));
        this.armedScopesHash = scopeSpecsHash(writes.scopes);
      } else {
        room.enableWrites(JSON.stringify(writes.ownedTables));
      }
    }
    this.live = true;
  }

  incarnationDead(reason) {
    this.log.push(`incarnation dead: ${reason}`);
    if (this.room) {
      this.room.free();
      this.room = null;
    }
    this.live = false;
    for (const { conn } of this.subs.values()) conn.sent.push({ t: "close", code: 1012 });
    this.subs.clear();
  }

  drainDownstream() {
    if (!this.room) return;
    const frames = JSON.parse(this.room.commitAll());
    const touched = new Set();
    for (const { sub, batch } of frames) {
      const meta = this.subs.get(sub);
      if (meta) {
        meta.conn.sent.push({ t: "nbatch", queryId: meta.clientQid, batch });
        touched.add(meta.conn);
      }
    }
    for (const conn of touched) this.sendProgress(conn);
  }

  sendProgress(conn) {
    if (!this.room) return;
    conn.sent.push({ t: "progress", frame: { cvMin: this.room.headCv() } });
  }

  // ----------------------------- downstream leg -----------------------------

  async handleSubscribe(conn, msg) {
    if (!this.room) return;
    const queryError = (message) => conn.sent.push({ t: "queryError", queryId: msg.queryId, message });
    if (msg.name === "_rindle/clientLmid") {
      const prev = conn.queries.get(msg.queryId);
      const epoch = prev ? prev.epoch + 1 : 1;
      const subKey = `${conn.id}:${msg.queryId}`;
      let res;
      try {
        res = JSON.parse(this.room.lmidSubscribe(subKey, epoch, conn.clientID, Date.now()));
      } catch (e) {
        queryError(`materialize failed: ${String(e?.message ?? e)}`);
        return;
      }
      conn.queries.set(msg.queryId, { subKey, epoch });
      this.subs.set(subKey, { conn, clientQid: msg.queryId });
      conn.sent.push({ t: "nhello", queryId: msg.queryId, hello: res.hello });
      conn.sent.push({ t: "nbatch", queryId: msg.queryId, batch: res.snapshot });
      this.sendProgress(conn);
      return;
    }
    const now = msg.now ?? Date.now();
    let payload;
    try {
      payload = await verifyRoomToken(msg.leaseToken, {
        doc: this.opts.docId,
        keys: this.opts.tokenKeys,
        now,
      });
    } catch (e) {
      queryError(e instanceof RoomTokenError ? e.message : "lease token refused");
      return;
    }
    if (conn.sub === null) conn.sub = payload.sub;
    const prev = conn.queries.get(msg.queryId);
    const epoch = prev ? prev.epoch + 1 : 1;
    const subKey = `${conn.id}:${msg.queryId}`;
    if (prev) this.subs.delete(prev.subKey);
    let res;
    try {
      res = JSON.parse(this.room.subscribe(subKey, epoch, JSON.stringify(payload.ast), now));
    } catch (e) {
      queryError(`materialize failed: ${String(e?.message ?? e)}`);
      return;
    }
    conn.queries.set(msg.queryId, { subKey, epoch });
    this.subs.set(subKey, { conn, clientQid: msg.queryId });
    conn.sent.push({ t: "nhello", queryId: msg.queryId, hello: res.hello });
    conn.sent.push({ t: "nbatch", queryId: msg.queryId, batch: res.snapshot });
    this.sendProgress(conn);
  }

  handleUnsubscribe(conn, queryId, now) {
    const q = conn.queries.get(queryId);
    if (!q) return;
    conn.queries.delete(queryId);
    this.subs.delete(q.subKey);
    this.room?.unsubscribe(q.subKey, now);
  }

  sweep(now) {
    if (this.room && this.live) return this.room.sweep(now);
    return 0;
  }

  // ------------------------------ the write path ------------------------------

  runMutation(room, entry) {
    const begin = JSON.parse(
      room.beginMutation(
        entry.clientID,
        entry.mid,
        entry.name,
        entry.args === undefined ? undefined : JSON.stringify(entry.args),
      ),
    );
    if (begin.begin === "dedup") return { outcome: "dedup" };
    const mutator = this.opts.writes?.mutators[entry.name];
    if (!mutator) {
      const reason = `unknown mutator \`${entry.name}\``;
      room.rejectMutation("rejected", reason);
      return { outcome: "rejected", reason };
    }
    try {
      mutator(mutationTx(room), entry.args, { user: entry.sub ?? "" });
    } catch (e) {
      const message = String(e?.message ?? e);
      room.rejectMutation("rejected", message);
      return { outcome: "rejected", reason: message };
    }
    const out = JSON.parse(room.commitMutation());
    if (out.deopt !== undefined) return { outcome: "deopt", reason: out.deopt.reason };
    return { outcome: "applied", applyCv: out.headCv };
  }

  handlePushMutation(conn, envelope) {
    const fail = (message) => conn.sent.push({ t: "error", message });
    if (!this.live || !this.room) return fail("not live");
    const room = this.room;
    let result;
    try {
      result = this.runMutation(room, { ...envelope, sub: conn.sub });
    } catch (e) {
      const message = String(e?.message ?? e);
      if (room.isPoisoned()) this.incarnationDead(`mutation commit tore the head: ${message}`);
      else fail(message);
      return result;
    }
    if (result.outcome === "dedup") return result;
    if (result.outcome === "applied") this.drainDownstream();
    // The journal append, then the ack (the ledger advance) and its lmid frames.
    this.journal.push({ ...envelope, outcome: result.outcome });
    const out = JSON.parse(room.ack(JSON.stringify([{ clientID: envelope.clientID, mid: envelope.mid }])));
    if (out.headCv !== null) this.drainDownstream();
    return result;
  }

  /** One write-behind flush against `this.opts.authority` (synchronous here). */
  flushNow() {
    const room = this.room;
    const out = room.beginFlush();
    if (out === undefined) return null;
    const body = JSON.parse(out);
    const res = this.opts.authority(body);
    if (res.kind === "ok") {
      return JSON.parse(room.flushOk(res.cv));
    }
    const conflict = JSON.parse(room.flushConflict(JSON.stringify(res.conflicts)));
    if (conflict.headCv !== null) this.drainDownstream();
    return conflict;
  }

  close() {
    if (this.room) {
      this.room.free();
      this.room = null;
    }
  }
}

/** The positional MutationTx (`get`, `add`, `remove` by pk, `edit` with a full new row). */
function mutationTx(room) {
  return {
    get: (table, pk) => {
      const row = room.txGet(table, JSON.stringify(pk));
      return row === undefined ? undefined : JSON.parse(row);
    },
    add: (table, row) => room.txAdd(table, JSON.stringify(row)),
    remove: (table, pk) => room.txRemove(table, JSON.stringify(pk)),
    edit: (table, _oldRow, newRow) => room.txEdit(table, JSON.stringify(newRow)),
  };
}
