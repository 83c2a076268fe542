"use strict";
// The room shell of @rindle/room-native: the behaviour of @rindle/room 0.5.0's Node
// shell (seed 002), driving the native `WasmRoom` over the `ws` package.
//
//   rindled ──ws (normalized protocol)──▶ WasmRoom (base store) ──serving──▶ subscribers
//            upstream leg                                        downstream leg
//
// Every room rule is the native room's; this file moves frames, keeps time, journals,
// retries. In order of appearance:
//
// - Upstream leg: mint the footprint lease on rindled's control plane
//   (`POST /materialize`), `init` + `subscribe {queryId: 1, leaseToken}`, open the room
//   from the `nhello`, apply every `nbatch`; the seq-0 snapshot makes the incarnation
//   live. Any violation (non-JSON, a failed apply, a new hello, an upstream
//   `queryError`, the socket dropping) kills the incarnation: the room is freed, the
//   bootId rotates, every subscribed downstream socket closes with 1012, and the shell
//   re-subscribes (same socket after 250 ms, or a fresh one with backoff to 5 s; a
//   `queryError` re-mints the lease first).
// - Downstream leg: `init {clientID}`, lease-token subscribes (verify → revocation →
//   scope-skew log → subject binding → `nhello`, seq-0 `nbatch`, `progress`), the
//   reserved `_rindle/clientLmid` query by name, `unsubscribe`, `pushMutation`. Per
//   connection, messages are handled strictly in order.
// - Leases and revocation: a sweep drops subscriptions past `exp`; `POST /revoke` on
//   the control plane drops a user's subscriptions, closes their sockets (1008) and
//   refuses their older tokens for the revocation window.
// - The write path: dedup / gap → the JS mutator over the keyed MutationTx → commit (or
//   reject / deopt, the mid consumed) → fan-out now → `mutationOutcome` for a
//   non-applied mid → the journal append under a group commit → the ack (ledger rows)
//   and the author's release. On every live boot the journal replays (re-invoking
//   applied entries) after the durable-lmid probe.
// - The write-behind flush (with an authority): `beginFlush` → journal the exact body
//   → send (retrying the same bytes) → `flushOk(cv)` + drain / `flushConflict` + drain /
//   fenced → 4009 `room_moved` and stop.
// - Backpressure: a socket whose buffered bytes would pass the send budget is
//   terminated (no close frame); the client repairs by re-subscribing.
// - Control plane (optional, bearer token): `GET /stats`, `POST /revoke`, `POST /drain`.
//
// Deviations from the seed (each sound where the seed was not, or where Node differs):
// non-object JSON frames are ignored downstream and are a violation upstream (the seed
// threw inside its handlers); a socket close always detaches every subscription of the
// connection from the room; the send budget counts UTF-8 bytes; socket `error` events
// are logged (an unhandled one would crash the process); `flushOk` gets the authority's
// commit cv and is followed by a drain (docs/decisions-local.md, settlement).
const http = require("node:http");
const { randomUUID } = require("node:crypto");
const { WebSocket, WebSocketServer } = require("ws");

const native = require("../index.js");
const { journalEntryOutcome, memoryJournal } = require("./journal.js");
const {
  assertSyncMutatorReturn,
  isEnvironmentShortfall,
  mutationTx,
  shapesOf,
} = require("./mutation-tx.js");

const { WasmRoom, verifyRoomToken, RoomTokenError, scopeSpecsHash, initRoomWasm } = native;

const UPSTREAM_QID = 1;
const RESUBSCRIBE_DELAY_MS = 250;
const RECONNECT_MAX_MS = 5_000;
const DEFAULT_IDLE_TTL_MS = 30_000;
const DEFAULT_SWEEP_INTERVAL_MS = 1_000;
const DEFAULT_REVOCATION_WINDOW_MS = 30 * 60_000;
const DEFAULT_GROUP_COMMIT_MS = 5;
const DEFAULT_SEND_BUDGET_BYTES = 4 * 1024 * 1024;
const DEFAULT_FLUSH_DEBOUNCE_MS = 250;
const DEFAULT_FLUSH_DIRTY_MAX = 512;
const DRAIN_MAX_ITERATIONS = 100;
const FLUSH_RETRY_MIN_MS = 100;
const FLUSH_RETRY_MAX_MS = 2_000;
const LMID_QUERY_NAME = "_rindle/clientLmid";
/** Recorded non-applied outcomes kept per client (oldest evicted first). */
const MAX_RECORDED_OUTCOMES_PER_CLIENT = 512;
/** How long `close()` waits for a client to answer the close handshake. */
const CLOSE_GRACE_MS = 1_000;
/** The largest message a client may send (`ws`'s `maxPayload`; past it `ws` closes the
 *  socket with 1009), as the smol server's `server.max_frame_bytes`. */
const DEFAULT_MAX_FRAME_BYTES = 1024 * 1024;
/** How long a TCP connection may take to send its upgrade request, as the smol
 *  server's `server.handshake_timeout_ms`. */
const DEFAULT_HANDSHAKE_TIMEOUT_MS = 5_000;

const boundElsewhere = (clientID) =>
  `clientID \`${clientID}\` is bound to another subject: a clientID belongs to the subject ` +
  "of the first lease presented with it";
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const message = (e) => String(e?.message ?? e);

/** Mints the room's upstream footprint lease on rindled's control plane. */
async function mintLease(up) {
  const res = await fetch(new URL("/materialize", up.controlUrl), {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(up.authToken ? { authorization: `Bearer ${up.authToken}` } : {}),
    },
    body: JSON.stringify({
      ast: up.footprintAst,
      ...(up.leaseTtlMs !== undefined ? { leaseTtlMs: up.leaseTtlMs } : {}),
    }),
  });
  if (!res.ok) {
    throw new Error(`upstream /materialize failed: ${res.status} ${await res.text()}`);
  }
  const out = await res.json();
  if (!isObject(out) || typeof out.leaseToken !== "string") {
    throw new Error("upstream /materialize returned no leaseToken");
  }
  return out.leaseToken;
}

function send(ws, frame) {
  if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame));
}

/** Runs `fn` with the socket under `ws` corked, so its sends leave in one write. (`ws`
 *  corks around every frame itself; corks nest. `_socket` is ws 8's, pinned exactly.) */
function corked(ws, fn) {
  const sock = ws._socket;
  if (!sock || typeof sock.cork !== "function") return fn();
  sock.cork();
  try {
    return fn();
  } finally {
    if (!sock.destroyed) sock.uncork();
  }
}

function padOffset(seq) {
  return String(seq).padStart(20, "0");
}

const sleep = (ms) =>
  new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    t.unref?.();
  });

/** Retries `op` on network-class failures (same inputs) until it settles, `stop()`
 *  says quit, or the error is fatal. */
async function withNetRetry(op, stop, log) {
  let delay = FLUSH_RETRY_MIN_MS;
  for (;;) {
    try {
      return await op();
    } catch (e) {
      if (e?.fatal === true || stop()) throw e;
      log(`authority call failed (retrying in ${delay}ms): ${String(e)}`);
      await sleep(delay);
      if (stop()) throw e;
      delay = Math.min(delay * 2, FLUSH_RETRY_MAX_MS);
    }
  }
}

function checkOptions(opts) {
  if (!isObject(opts)) throw new TypeError("createRoomShell: `opts` must be an object");
  const up = opts.upstream;
  const down = opts.downstream;
  if (!isObject(up) || typeof up.wsUrl !== "string" || typeof up.controlUrl !== "string") {
    throw new TypeError("createRoomShell: `upstream` needs `wsUrl` and `controlUrl` strings");
  }
  if (!isObject(down) || typeof down.docId !== "string" || !isObject(down.tokenKeys)) {
    throw new TypeError("createRoomShell: `downstream` needs a `docId` string and a `tokenKeys` object");
  }
  const writes = down.writes;
  if (writes !== undefined) {
    if (!isObject(writes) || !isObject(writes.mutators) || !Array.isArray(writes.ownedTables)) {
      throw new TypeError("createRoomShell: `writes` needs a `mutators` object and an `ownedTables` array");
    }
    for (const [name, fn] of Object.entries(writes.mutators)) {
      if (typeof fn !== "function") {
        throw new TypeError(`createRoomShell: mutator \`${name}\` is not a function`);
      }
    }
  }
}

class Shell {
  constructor(opts) {
    checkOptions(opts);
    this.opts = opts;
    this.log = opts.log ?? (() => {});
    this.control = null;
    this.room = null;
    this.live = false;
    this.incarnationBootId = randomUUID();
    this.liveWaiters = [];
    this.upstream = null;
    this.leaseToken = "";
    this.subscribeInFlight = false;
    this.reconnectDelayMs = RESUBSCRIBE_DELAY_MS;
    this.closed = false;
    this.closing = null;
    this.nextConnId = 1;
    this.sweepTimer = null;
    /** subKey → {ws, conn, clientQid, user, exp}. */
    this.subs = new Map();
    this.conns = new Set();
    /** userId → revocation time. */
    this.revoked = new Map();
    this.pendingSubs = [];
    /** clientID → the subject it is bound to (the first lease verified on a connection
     *  that inits it); seeded from the journal's entries at boot. */
    this.clientSubjects = new Map();
    // write plane
    this.armedScopesHash = undefined;
    this.loggedScopeSkew = new Set();
    this.journal = null;
    this.tableShapes = new Map();
    this.pendingMutes = [];
    /** clientID → [{mid, applyCv}] applied but not acked, oldest first. */
    this.unacked = new Map();
    /** clientID → Map(mid → recorded non-applied outcome). */
    this.outcomes = new Map();
    this.ackQueue = [];
    this.ackTimer = null;
    this.ackChain = Promise.resolve();
    // flush
    this.placementEpoch = 0;
    this.flushSeq = 1;
    this.flushTimer = null;
    this.flushBusy = false;
    this.flushChain = Promise.resolve();
    this.flushesConfirmed = 0;
    this.lastCommittedFlushSeq = 0;
    this.moved = false;
    // upstream absorption advert
    this.upstreamBoot = undefined;
    this.upstreamCvMin = undefined;

    const writes = opts.downstream.writes;
    if (writes) {
      if (writes.ownedTables.length === 0) {
        throw new Error("writes.ownedTables must name at least one table");
      }
      const scopes = writes.scopes;
      if (scopes !== undefined) {
        if (!Array.isArray(scopes)) throw new TypeError("writes.scopes must be an array");
        const owned = new Set(writes.ownedTables);
        const rogue = scopes
          .filter((s) => s?.writable?.kind !== "none" && !owned.has(s?.table))
          .map((s) => s?.table);
        if (rogue.length > 0) {
          throw new Error(
            `writes.scopes marks ${rogue.map((t) => `\`${t}\``).join(", ")} writable, but the ` +
              `host's writes.ownedTables does not include ${rogue.length === 1 ? "it" : "them"} — ` +
              "the boot-wire scopes may only ever narrow the host's owned set, never extend it",
          );
        }
        this.armedScopesHash = scopeSpecsHash(scopes);
      }
      this.journal = writes.journal ?? memoryJournal();
    }
    // Our own HTTP server, so the upgrade request is bounded in time (`ws` has no
    // handshake timeout of its own): a socket that never sends a complete request is
    // dropped after the handshake timeout.
    const handshakeMs = opts.downstream.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS;
    this.httpServer = http.createServer((_req, res) => {
      res.writeHead(426, { "content-type": "text/plain" });
      res.end("this is a websocket endpoint\n");
    });
    this.httpServer.headersTimeout = handshakeMs;
    this.httpServer.requestTimeout = handshakeMs;
    this.httpServer.setTimeout(handshakeMs, (socket) => socket.destroy());
    this.httpServer.on("upgrade", (_req, socket) => socket.setTimeout(0));
    this.wss = new WebSocketServer({
      server: this.httpServer,
      perMessageDeflate: false,
      maxPayload: opts.downstream.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
    });
    this.httpServer.listen(opts.port ?? 0, "127.0.0.1");
    this.wss.on("connection", (ws) => this.serveDownstream(ws));
  }

  async start() {
    await initRoomWasm();
    await new Promise((resolve, reject) => {
      if (this.httpServer.listening) return resolve();
      this.httpServer.once("listening", resolve);
      this.httpServer.once("error", reject);
    });
    this.wss.on("error", (e) => this.log(`downstream server error: ${String(e)}`));
    if (this.opts.downstream.control) await this.startControl(this.opts.downstream.control);
    const interval = this.opts.downstream.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS;
    this.sweepTimer = setInterval(() => {
      try {
        this.sweep();
      } catch (e) {
        this.log(`sweep failed: ${message(e)}`);
      }
    }, interval);
    this.sweepTimer.unref?.();
    const authority = this.opts.downstream.writes?.authority;
    if (authority && this.journal) {
      // Seed the flush stream past everything this journal numbered, then claim the
      // placement epoch — once per process, before anything else touches the authority.
      const { maxSeq } = await this.journal.replayFlushes();
      this.flushSeq = maxSeq + 1;
      this.lastCommittedFlushSeq = maxSeq;
      this.placementEpoch = await authority.claimEpoch(this.opts.downstream.docId);
      this.log(`placement epoch ${this.placementEpoch}`);
    }
    this.leaseToken = await mintLease(this.opts.upstream);
    this.connectUpstream();
  }

  get port() {
    const addr = this.wss.address();
    return typeof addr === "object" && addr !== null ? addr.port : 0;
  }

  get controlPort() {
    const addr = this.control?.address();
    return typeof addr === "object" && addr !== null ? addr.port : 0;
  }

  awaitLive() {
    if (this.live) return Promise.resolve();
    return new Promise((resolve) => this.liveWaiters.push(resolve));
  }

  cv() {
    return this.room?.cv();
  }

  upstreamEpoch() {
    return this.room?.epoch();
  }

  bootId() {
    return this.incarnationBootId;
  }

  close() {
    if (this.closing) return this.closing;
    this.closing = this.doClose();
    return this.closing;
  }

  async doClose() {
    this.closed = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    if (this.ackTimer !== null) {
      clearTimeout(this.ackTimer);
      this.ackTimer = null;
    }
    if (this.flushTimer !== null) {
      clearTimeout(this.flushTimer);
      this.flushTimer = null;
    }
    if (this.upstream) {
      const up = this.upstream;
      if (up.readyState === WebSocket.CONNECTING) up.terminate();
      else up.close();
      const t = setTimeout(() => up.terminate(), CLOSE_GRACE_MS);
      t.unref?.();
    }
    for (const client of this.wss.clients) {
      client.close(1001, "room shutting down");
      const t = setTimeout(() => client.terminate(), CLOSE_GRACE_MS);
      t.unref?.();
    }
    await new Promise((resolve) => this.wss.close(() => resolve()));
    await new Promise((resolve) => {
      this.httpServer.close(() => resolve());
      this.httpServer.closeAllConnections?.();
    });
    if (this.control) {
      const control = this.control;
      await new Promise((resolve) => {
        control.close(() => resolve());
        control.closeAllConnections?.();
      });
    }
    if (this.room) {
      this.room.free();
      this.room = null;
    }
    this.live = false;
  }

  // ------------------------------ upstream leg ------------------------------

  connectUpstream() {
    if (this.closed) return;
    const ws = new WebSocket(this.opts.upstream.wsUrl, { perMessageDeflate: false });
    this.upstream = ws;
    ws.on("open", () => {
      this.reconnectDelayMs = RESUBSCRIBE_DELAY_MS;
      send(ws, {
        t: "init",
        clientID: this.opts.upstream.clientId ?? `room-shell-${this.incarnationBootId}`,
      });
      this.sendSubscribe();
    });
    ws.on("message", (data) => {
      if (this.upstream !== ws) return;
      try {
        this.onUpstreamFrame(data);
      } catch (e) {
        this.violation(`upstream frame handling failed: ${message(e)}`);
      }
    });
    ws.on("error", (err) => this.log(`upstream socket error: ${String(err)}`));
    ws.on("close", () => {
      if (this.closed || this.upstream !== ws) return;
      // A subscribe may have died with the socket: the next connection sends its own.
      this.subscribeInFlight = false;
      this.incarnationDead("upstream socket closed");
      const delay = this.reconnectDelayMs;
      this.reconnectDelayMs = Math.min(delay * 2, RECONNECT_MAX_MS);
      this.log(`upstream reconnect in ${delay}ms`);
      setTimeout(() => this.connectUpstream(), delay).unref?.();
    });
  }

  /** (Re-)sends the upstream subscribe; on an open socket rindled treats a re-send as
   *  gap recovery (new epoch, fresh snapshot). */
  sendSubscribe() {
    if (this.closed || this.subscribeInFlight) return;
    if (this.upstream?.readyState !== WebSocket.OPEN) return; // the reconnect re-enters
    this.subscribeInFlight = true;
    send(this.upstream, { t: "subscribe", queryId: UPSTREAM_QID, leaseToken: this.leaseToken });
  }

  onUpstreamFrame(data) {
    if (this.closed) return;
    let frame;
    try {
      frame = JSON.parse(String(data));
    } catch {
      this.violation("upstream frame is not JSON");
      return;
    }
    if (!isObject(frame)) {
      this.violation("upstream frame is not a JSON object");
      return;
    }
    if (frame.queryId !== undefined && frame.queryId !== UPSTREAM_QID) return;
    switch (frame.t) {
      case "nhello": {
        this.subscribeInFlight = false;
        const boot = typeof frame.bootId === "string" ? frame.bootId : undefined;
        if (boot !== this.upstreamBoot) {
          this.upstreamBoot = boot;
          this.upstreamCvMin = undefined;
        }
        if (this.room) this.incarnationDead("superseded by a new upstream hello");
        try {
          this.room = WasmRoom.open(
            JSON.stringify(frame.hello),
            this.opts.downstream.idleTtlMs ?? DEFAULT_IDLE_TTL_MS,
          );
          this.tableShapes = shapesOf(frame.hello);
          this.log(`upstream hello: epoch ${this.room.epoch()}`);
        } catch (e) {
          this.violation(`upstream hello rejected: ${String(e)}`);
        }
        break;
      }
      case "nbatch": {
        if (!this.room) return; // pre-hello or post-death stragglers
        let status;
        try {
          status = JSON.parse(this.room.apply(JSON.stringify(frame.batch)));
        } catch (e) {
          this.violation(`upstream apply failed: ${String(e)}`);
          return;
        }
        if (status.applied === "snapshot") {
          this.log(`upstream snapshot: ${status.rows} rows @ cv ${this.room.cv()}`);
          const room = this.room;
          this.finishBoot(room).catch((e) => {
            if (this.room === room) this.violation(`boot failed: ${message(e)}`);
          });
        } else if (status.applied === "live") {
          this.drainDownstream();
        } else if (status.applied === "staleEpoch") {
          this.log("dropped stale-epoch upstream frame");
        }
        break;
      }
      case "progress": {
        // The daemon's release point: everything at or below it was sent, and on this
        // ordered socket already applied. Re-advertise to every subscribed connection.
        const cvMin = frame.frame?.cvMin;
        if (typeof cvMin === "number" && cvMin > (this.upstreamCvMin ?? -1)) {
          this.upstreamCvMin = cvMin;
          const touched = new Set();
          for (const meta of this.subs.values()) touched.add(meta.conn);
          for (const conn of touched) this.sendProgress(conn);
        }
        break;
      }
      case "queryError": {
        // The lease died: re-mint, re-subscribe on the same socket.
        this.subscribeInFlight = false;
        this.incarnationDead(`upstream queryError: ${String(frame.message)}`);
        mintLease(this.opts.upstream).then(
          (token) => {
            this.leaseToken = token;
            setTimeout(() => this.sendSubscribe(), RESUBSCRIBE_DELAY_MS).unref?.();
          },
          (e) => {
            this.log(`lease re-mint failed: ${String(e)}`);
            setTimeout(() => {
              if (!this.closed) this.onUpstreamFrame(data);
            }, RECONNECT_MAX_MS).unref?.();
          },
        );
        break;
      }
      default:
        break;
    }
  }

  /** A violation: kill the incarnation and re-subscribe (never patch up). */
  violation(reason) {
    this.incarnationDead(reason);
    setTimeout(() => this.sendSubscribe(), RESUBSCRIBE_DELAY_MS).unref?.();
  }

  incarnationDead(reason) {
    this.log(`incarnation dead: ${reason}`);
    if (this.room) {
      this.room.free();
      this.room = null;
    }
    this.live = false;
    this.incarnationBootId = randomUUID();
    for (const meta of this.subs.values()) meta.ws.close(1012, "room re-subscribing");
    this.subs.clear();
    this.pendingSubs = [];
    this.pendingMutes = [];
    this.unacked.clear();
    this.outcomes.clear();
    this.ackQueue = [];
    if (this.ackTimer !== null) {
      clearTimeout(this.ackTimer);
      this.ackTimer = null;
    }
    if (this.flushTimer !== null) {
      clearTimeout(this.flushTimer);
      this.flushTimer = null;
    }
  }

  /** After the seq-0 snapshot: enable writes, settle unconfirmed flushes, probe the
   *  durable lmids, replay the journal onto the fresh base, then serve. */
  async finishBoot(room) {
    const writes = this.opts.downstream.writes;
    if (writes && this.journal) {
      let entries;
      try {
        if (writes.scopes !== undefined) {
          room.enableWritesV2(JSON.stringify(writes.scopes), JSON.stringify(writes.ownedTables));
        } else {
          room.enableWrites(JSON.stringify(writes.ownedTables));
        }
        entries = await this.journal.replay();
        for (const e of entries) {
          if (e.sub && !this.clientSubjects.has(e.clientID)) {
            this.clientSubjects.set(e.clientID, e.sub);
          }
        }
      } catch (e) {
        if (this.room === room) this.violation(`write-plane boot failed: ${String(e)}`);
        return;
      }
      if (this.room !== room) return; // an incarnation death raced the replay
      if (writes.authority) {
        try {
          await this.settleUnconfirmedFlushes(writes.authority);
        } catch (e) {
          if (this.moved || this.closed || this.room !== room) return;
          this.violation(`flush resubmission failed: ${String(e)}`);
          return;
        }
        if (this.room !== room) return;
        const clients = [...new Set(entries.map((e) => e.clientID))];
        if (clients.length > 0) {
          let lmids;
          try {
            lmids = await withNetRetry(
              () => writes.authority.lmids(this.opts.downstream.docId, clients),
              () => this.closed || this.room !== room,
              this.log,
            );
          } catch (e) {
            if (this.room !== room || this.closed) return;
            this.violation(`durable-lmid probe failed: ${String(e)}`);
            return;
          }
          if (this.room !== room) return;
          const seeds = Object.entries(lmids)
            .filter(([, lmid]) => lmid > 0)
            .map(([clientID, lmid]) => ({ clientID, lmid }));
          if (seeds.length > 0) {
            try {
              room.seedDurable(JSON.stringify(seeds));
              room.commitAll(); // nobody is subscribed yet
            } catch (e) {
              this.violation(`durable seed failed: ${String(e)}`);
              return;
            }
            this.log(`durable seed: ${seeds.map((s) => `${s.clientID}→${s.lmid}`).join(", ")}`);
          }
        }
      }
      try {
        for (const entry of entries) {
          const res = this.runMutation(room, entry);
          if (res.outcome === "rejected" || res.outcome === "deopt") {
            this.recordOutcome(entry.clientID, entry.mid, {
              kind: res.outcome,
              ...(res.reason !== undefined ? { reason: res.reason } : {}),
              ...(res.outcome === "deopt" ? { name: entry.name, args: entry.args } : {}),
            });
            if (journalEntryOutcome(entry) === "applied") {
              this.log(
                `replayed APPLIED mutation ${entry.clientID}:${entry.mid} (\`${entry.name}\`) ` +
                  `now ${res.outcome}s against the moved base — mid stays burnt, no effects`,
              );
            }
          }
        }
        if (entries.length > 0) {
          room.ack(JSON.stringify(entries.map(({ clientID, mid }) => ({ clientID, mid }))));
          room.commitAll(); // nobody is subscribed yet
        }
      } catch (e) {
        this.violation(`journal replay failed: ${String(e)}`);
        return;
      }
      if (entries.length > 0) {
        this.log(`journal replay: ${entries.length} mutation(s) re-invoked and acked`);
      }
    }
    if (this.room !== room || this.closed) return;
    this.becomeLive();
    this.scheduleFlush();
  }

  /** Resubmits every unconfirmed journaled flush batch verbatim, in seq order. */
  async settleUnconfirmedFlushes(authority) {
    if (!this.journal) return;
    const { records } = await this.journal.replayFlushes();
    for (const record of records) {
      if (this.closed || this.moved) return;
      let res;
      try {
        res = await withNetRetry(
          () => authority.applyRowChangeTxn(record.body),
          () => this.closed || this.moved,
          this.log,
        );
      } catch (e) {
        if (e?.fatal !== true) throw e;
        this.log(`flush ${record.seq} DROPPED: batch identity mismatch: ${String(e)}`);
        await this.journal.confirmFlush(record.seq);
        continue;
      }
      await this.journal.confirmFlush(record.seq);
      if (res.kind === "ok") {
        this.log(`flush ${record.seq} settled at boot: ${res.applied ? "applied" : "already applied"}`);
      } else if (res.kind === "conflict") {
        this.log(`flush ${record.seq} dropped at boot: conflict (replay supersedes)`);
      } else if (record.epoch === this.placementEpoch) {
        this.roomMoved(`flush ${record.seq} fenced under our epoch`);
        return;
      } else {
        this.log(`flush ${record.seq} (old epoch ${record.epoch}) fenced: dropped`);
      }
    }
  }

  becomeLive() {
    this.live = true;
    this.log(`live (bootId ${this.incarnationBootId})`);
    const waiters = this.liveWaiters;
    this.liveWaiters = [];
    for (const w of waiters) w();
    const queued = this.pendingSubs;
    this.pendingSubs = [];
    for (const { ws, conn, msg } of queued) {
      if (ws.readyState === WebSocket.OPEN) {
        conn.busy = conn.busy.then(() => this.handleSubscribe(ws, conn, msg)).catch((e) =>
          send(ws, { t: "error", queryId: msg.queryId, message: message(e) }),
        );
      }
    }
    const mutes = this.pendingMutes;
    this.pendingMutes = [];
    for (const { ws, conn, envelope } of mutes) {
      if (ws.readyState === WebSocket.OPEN) {
        conn.busy = conn.busy.then(() => this.handlePushMutation(ws, conn, envelope)).catch((e) =>
          send(ws, { t: "error", message: message(e) }),
        );
      }
    }
  }

  /** One `commitAll` after any commit: each subscriber's net batch, then one
   *  `progress` per touched connection. */
  drainDownstream() {
    if (!this.room) return;
    const frames = JSON.parse(this.room.commitAll());
    if (frames.length === 0) return;
    // Grouped per connection (its frames keep their order, then its progress), each
    // connection's frames written in one go: one write per socket per drain instead of
    // one per frame.
    const byConn = new Map();
    for (const { sub, batch } of frames) {
      const meta = this.subs.get(sub);
      if (!meta) continue;
      const list = byConn.get(meta.conn);
      const frame = { t: "nbatch", queryId: meta.clientQid, batch };
      if (list) list.push(frame);
      else byConn.set(meta.conn, [frame]);
    }
    for (const [conn, list] of byConn) {
      corked(conn.ws, () => {
        for (const frame of list) this.sendBudgeted(conn, frame);
        this.sendProgress(conn);
      });
    }
  }

  /** The connection's release point: `headCv`, held below an author's oldest un-acked
   *  mutation; plus the upstream-absorption advert once known. */
  sendProgress(conn) {
    if (!this.room) return;
    let cvMin = this.room.headCv();
    if (conn.clientID) {
      const held = this.unacked.get(conn.clientID);
      if (held && held.length > 0) cvMin = Math.min(cvMin, held[0].applyCv - 1);
    }
    const frame = { cvMin };
    if (this.upstreamCvMin !== undefined) {
      frame.upstreamCv = this.upstreamCvMin;
      if (this.upstreamBoot !== undefined) frame.upstreamBoot = this.upstreamBoot;
    }
    this.sendBudgeted(conn, { t: "progress", frame });
  }

  /** The per-socket send budget: a socket that would buffer past it is terminated. */
  sendBudgeted(conn, frame) {
    const ws = conn.ws;
    if (ws.readyState !== WebSocket.OPEN) return;
    const text = JSON.stringify(frame);
    const budget = this.opts.downstream.sendBudgetBytes ?? DEFAULT_SEND_BUDGET_BYTES;
    if (ws.bufferedAmount + Buffer.byteLength(text) > budget) {
      this.log(`send budget exceeded (conn ${conn.id}): closed with a gap`);
      ws.terminate();
      return;
    }
    ws.send(text);
  }

  // ------------------------------ the write path ------------------------------

  /** One envelope against the room: dedup → mutator over the staged tx → commit, or
   *  reject / deopt (the mid consumed). Throws only when the room is torn (a mid gap,
   *  a poisoned commit). */
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
    // A journaled non-applied entry replays its recorded verdict without running.
    const journaled = journalEntryOutcome(entry);
    if (journaled !== "applied") {
      room.rejectMutation(journaled, undefined);
      return { outcome: journaled };
    }
    const mutators = this.opts.downstream.writes?.mutators;
    const mutator = mutators && Object.hasOwn(mutators, entry.name) ? mutators[entry.name] : undefined;
    if (typeof mutator !== "function") {
      const reason = `unknown mutator \`${entry.name}\``;
      room.rejectMutation("rejected", reason);
      this.log(`mutation ${entry.clientID}:${entry.mid} rejected: ${reason}`);
      return { outcome: "rejected", reason };
    }
    let open = true;
    try {
      const tx = mutationTx(room, this.tableShapes, () => open);
      const returned = mutator(tx, entry.args, { user: entry.sub ?? "" });
      open = false;
      assertSyncMutatorReturn(returned, entry.name);
    } catch (e) {
      open = false;
      const reason = message(e);
      if (isEnvironmentShortfall(e)) {
        room.rejectMutation("deopt", "environment");
        this.log(
          `mutation \`${entry.name}\` (${entry.clientID}:${entry.mid}) deopted: ` +
            `environment shortfall: ${reason}`,
        );
        return { outcome: "deopt", reason: "environment" };
      }
      room.rejectMutation("rejected", reason);
      this.log(`mutation \`${entry.name}\` (${entry.clientID}:${entry.mid}) rejected: ${reason}`);
      return { outcome: "rejected", reason };
    }
    const out = JSON.parse(room.commitMutation());
    if (out.deopt !== undefined) {
      // The gate consumed the tx itself: no rejectMutation here.
      this.log(
        `mutation \`${entry.name}\` (${entry.clientID}:${entry.mid}) deopted: ` +
          `${out.deopt.reason} on \`${out.deopt.table}\` pk ${JSON.stringify(out.deopt.pk)}`,
      );
      return { outcome: "deopt", reason: out.deopt.reason };
    }
    return { outcome: "applied", applyCv: out.headCv };
  }

  /** The live `pushMutation` path: apply → fan out now → journal → ack. */
  handlePushMutation(ws, conn, envelope) {
    const fail = (text) => send(ws, { t: "error", message: text });
    if (!this.opts.downstream.writes || !this.journal) {
      fail("this room is read-only (no write plane configured)");
      return;
    }
    if (!conn.clientID) {
      fail("init with a clientID before pushMutation");
      return;
    }
    if (envelope.clientID !== conn.clientID) {
      fail("envelope clientID does not match the connection identity");
      return;
    }
    if (!this.live || !this.room) {
      this.pendingMutes.push({ ws, conn, envelope });
      return;
    }
    if (conn.sub === null) {
      fail("pushMutation requires an authenticated subject — subscribe with a lease token first");
      return;
    }
    if (!this.bindClient(conn.clientID, conn.sub)) {
      fail(boundElsewhere(conn.clientID));
      return;
    }
    const room = this.room;
    let result;
    try {
      result = this.runMutation(room, { ...envelope, sub: conn.sub });
    } catch (e) {
      if (room.isPoisoned()) this.violation(`mutation commit tore the head: ${message(e)}`);
      else fail(message(e)); // e.g. the exact `mutation gap for …` text
      return;
    }
    if (result.outcome === "dedup") {
      const recorded = this.outcomes.get(conn.clientID)?.get(envelope.mid);
      if (recorded !== undefined) this.sendOutcome(conn, envelope.mid, recorded);
      return;
    }
    if (result.outcome === "applied") {
      const held = this.unacked.get(conn.clientID) ?? [];
      held.push({ mid: envelope.mid, applyCv: result.applyCv });
      this.unacked.set(conn.clientID, held);
      this.drainDownstream(); // never gated on durability
    } else {
      // Answered now, before the journal enqueue: the outcome precedes the lmid ack.
      const recorded = {
        kind: result.outcome,
        ...(result.reason !== undefined ? { reason: result.reason } : {}),
        ...(result.outcome === "deopt" ? { name: envelope.name, args: envelope.args } : {}),
      };
      this.recordOutcome(conn.clientID, envelope.mid, recorded);
      this.sendOutcome(conn, envelope.mid, recorded);
    }
    this.enqueueJournal({
      clientID: envelope.clientID,
      mid: envelope.mid,
      name: envelope.name,
      args: envelope.args,
      sub: conn.sub,
      outcome: result.outcome,
      ...(result.outcome !== "applied" ? { rejected: true } : {}),
    });
    this.scheduleFlush();
  }

  recordOutcome(clientID, mid, outcome) {
    let byMid = this.outcomes.get(clientID);
    if (byMid === undefined) {
      byMid = new Map();
      this.outcomes.set(clientID, byMid);
    }
    byMid.delete(mid);
    byMid.set(mid, outcome);
    while (byMid.size > MAX_RECORDED_OUTCOMES_PER_CLIENT) byMid.delete(byMid.keys().next().value);
  }

  sendOutcome(conn, mid, o) {
    this.sendBudgeted(conn, {
      t: "mutationOutcome",
      mid,
      kind: o.kind,
      ...(o.reason !== undefined ? { reason: o.reason } : {}),
      ...(o.kind === "deopt" ? { name: o.name, args: o.args } : {}),
    });
  }

  enqueueJournal(entry) {
    this.ackQueue.push(entry);
    if (this.ackTimer === null) {
      const window = this.opts.downstream.writes?.groupCommitMs ?? DEFAULT_GROUP_COMMIT_MS;
      this.ackTimer = setTimeout(() => this.flushJournal(), window);
      this.ackTimer.unref?.();
    }
  }

  flushJournal() {
    this.ackTimer = null;
    const batch = this.ackQueue;
    this.ackQueue = [];
    if (batch.length === 0 || !this.journal) return;
    const journal = this.journal;
    const bootAtFlush = this.incarnationBootId;
    this.ackChain = this.ackChain.then(async () => {
      try {
        await journal.append(batch);
      } catch (e) {
        // An ack that might not survive is never sent: the incarnation dies instead.
        if (this.incarnationBootId === bootAtFlush && !this.closed) {
          this.violation(`journal append failed: ${String(e)}`);
        }
        return;
      }
      if (this.incarnationBootId !== bootAtFlush || !this.room || this.closed) return;
      this.applyAck(this.room, batch);
    }).catch((e) => {
      if (this.incarnationBootId === bootAtFlush && !this.closed) this.violation(`ack failed: ${message(e)}`);
    });
  }

  /** The ack: ledger rows advance, lmid frames ship, authors' release points rise. */
  applyAck(room, batch) {
    let headCv;
    try {
      headCv = JSON.parse(room.ack(JSON.stringify(batch.map(({ clientID, mid }) => ({ clientID, mid })))))
        .headCv;
    } catch (e) {
      this.violation(`ack failed: ${String(e)}`);
      return;
    }
    const authors = new Set();
    for (const { clientID, mid } of batch) {
      authors.add(clientID);
      const held = this.unacked.get(clientID);
      if (held) {
        const rest = held.filter((u) => u.mid > mid);
        if (rest.length > 0) this.unacked.set(clientID, rest);
        else this.unacked.delete(clientID);
      }
    }
    if (headCv !== null) this.drainDownstream();
    for (const meta of this.subs.values()) {
      if (meta.conn.clientID && authors.has(meta.conn.clientID)) {
        this.sendProgress(meta.conn);
        authors.delete(meta.conn.clientID);
      }
    }
  }

  // --------------------------- the write-behind flush ---------------------------

  scheduleFlush() {
    const writes = this.opts.downstream.writes;
    if (!writes?.authority || this.flushBusy || this.flushTimer !== null) return;
    if (this.closed || this.moved || !this.live || !this.room) return;
    const dirtyMax = writes.flushDirtyMax ?? DEFAULT_FLUSH_DIRTY_MAX;
    const delay =
      this.room.dirtyLen() >= dirtyMax ? 0 : (writes.flushDebounceMs ?? DEFAULT_FLUSH_DEBOUNCE_MS);
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null;
      this.fireFlush();
    }, delay);
    this.flushTimer.unref?.();
  }

  flushNow() {
    if (this.flushTimer !== null) {
      clearTimeout(this.flushTimer);
      this.flushTimer = null;
    }
    this.fireFlush();
    return this.flushChain;
  }

  /** Flushes until nothing is dirty or pending; the last committed flush seq. */
  async drainForDowngrade() {
    const writes = this.opts.downstream.writes;
    let iterations = 0;
    while (
      writes?.authority &&
      this.live &&
      !this.moved &&
      !this.closed &&
      this.room !== null &&
      (this.room.dirtyLen() > 0 || this.room.pendingLen() > 0)
    ) {
      if (++iterations > DRAIN_MAX_ITERATIONS) {
        throw new Error(
          `drain: room ${this.opts.downstream.docId} failed to quiesce after ${DRAIN_MAX_ITERATIONS} flushes ` +
            `(dirty=${this.room.dirtyLen()}, pending=${this.room.pendingLen()})`,
        );
      }
      await this.flushNow();
    }
    return this.lastCommittedFlushSeq;
  }

  /** Builds the batch (the build is the snapshot), journals its exact body, settles it. */
  fireFlush() {
    const authority = this.opts.downstream.writes?.authority;
    if (!authority || !this.journal || this.flushBusy) return;
    if (this.closed || this.moved || !this.live || !this.room) return;
    const room = this.room;
    let out;
    try {
      out = room.beginFlush();
    } catch (e) {
      this.violation(`beginFlush failed: ${String(e)}`);
      return;
    }
    if (!out) return;
    const { changes, batchHash } = JSON.parse(out);
    const seq = this.flushSeq++;
    const docId = this.opts.downstream.docId;
    const epoch = this.placementEpoch;
    // Composed once; journaled and sent as this exact string forever.
    const body = JSON.stringify({
      source: `room:${docId}:${epoch}`,
      offset: padOffset(seq),
      doc: docId,
      epoch,
      batchHash,
      cas: true,
      changes,
    });
    const journal = this.journal;
    const bootAtFlush = this.incarnationBootId;
    this.flushBusy = true;
    this.flushChain = (async () => {
      try {
        await journal.appendFlush({ seq, epoch, body });
      } catch (e) {
        this.flushBusy = false;
        if (this.incarnationBootId === bootAtFlush && !this.closed) {
          this.violation(`flush journal append failed: ${String(e)}`);
        }
        return;
      }
      let res;
      try {
        res = await withNetRetry(
          () => authority.applyRowChangeTxn(body),
          () => this.closed || this.moved,
          this.log,
        );
      } catch (e) {
        this.flushBusy = false;
        if (this.closed || this.moved) return;
        if (this.incarnationBootId === bootAtFlush) {
          this.violation(`flush apply failed fatally: ${String(e)}`);
        }
        return;
      }
      this.flushBusy = false;
      const same = () => this.incarnationBootId === bootAtFlush && this.room === room && !this.closed;
      if (res.kind === "ok") {
        this.flushesConfirmed += 1;
        this.lastCommittedFlushSeq = Math.max(this.lastCommittedFlushSeq, seq);
        await journal.confirmFlush(seq).catch((e) => this.log(`flush ${seq} confirm failed: ${String(e)}`));
        if (!same()) {
          this.scheduleFlush();
          return;
        }
        try {
          room.flushOk(typeof res.cv === "number" ? res.cv : undefined);
        } catch (e) {
          this.violation(`flushOk failed: ${String(e)}`);
          return;
        }
        // Settlement can move the head (an authority image logged during the flight).
        this.drainDownstream();
        this.scheduleFlush();
      } else if (res.kind === "conflict") {
        await journal.confirmFlush(seq).catch((e) => this.log(`flush ${seq} confirm failed: ${String(e)}`));
        if (!same()) {
          this.scheduleFlush();
          return;
        }
        try {
          const fixed = JSON.parse(room.flushConflict(JSON.stringify(res.conflicts)));
          if (fixed.headCv !== null) this.drainDownstream();
        } catch (e) {
          this.violation(`flushConflict failed: ${String(e)}`);
          return;
        }
        this.log(`flush ${seq} CAS-conflicted: converged to the authority, retrying the rest`);
        this.scheduleFlush();
      } else {
        await journal.confirmFlush(seq).catch((e) => this.log(`flush ${seq} confirm failed: ${String(e)}`));
        this.roomMoved(`flush ${seq} fenced (authority epoch ${res.currentEpoch ?? "?"})`);
      }
    })().catch((e) => {
      this.flushBusy = false;
      if (this.incarnationBootId === bootAtFlush && !this.closed) this.violation(`flush failed: ${message(e)}`);
    });
  }

  /** Fenced: another placement owns the doc. Subscribed sockets close 4009
   *  `room_moved`, the shell stops, nothing reconnects. */
  roomMoved(reason) {
    if (this.moved) return;
    this.moved = true;
    this.log(`room moved: ${reason}`);
    for (const meta of this.subs.values()) meta.ws.close(4009, "room_moved");
    void this.close();
  }

  // ----------------------------- downstream leg -----------------------------

  serveDownstream(ws) {
    const conn = {
      id: this.nextConnId++,
      ws,
      queries: new Map(),
      busy: Promise.resolve(),
      clientID: null,
      sub: null,
    };
    this.conns.add(conn);
    ws.on("error", (err) => this.log(`downstream socket error (conn ${conn.id}): ${String(err)}`));
    ws.on("message", (data) => {
      let msg;
      try {
        msg = JSON.parse(String(data));
      } catch {
        return;
      }
      if (!isObject(msg)) return;
      // Strictly in order per connection; a throw stays on this connection.
      conn.busy = conn.busy.then(async () => {
        try {
          await this.handleDownstreamMsg(ws, conn, msg);
        } catch (err) {
          send(ws, { t: "error", queryId: msg.queryId, message: message(err) });
        }
      });
    });
    ws.on("close", () => {
      const now = Date.now();
      for (const q of conn.queries.values()) {
        if (this.subs.get(q.subKey)?.ws === ws) this.subs.delete(q.subKey);
        try {
          this.room?.unsubscribe(q.subKey, now);
        } catch (e) {
          this.log(`unsubscribe failed: ${String(e)}`);
        }
      }
      conn.queries.clear();
      this.conns.delete(conn);
    });
  }

  async handleDownstreamMsg(ws, conn, msg) {
    switch (msg.t) {
      case "init": {
        // No reply frame, exactly rindled's wire. One identity per connection.
        if (typeof msg.clientID !== "string" || msg.clientID.length === 0) break;
        if (conn.clientID === null) {
          conn.clientID = msg.clientID;
          if (conn.sub !== null) this.bindClient(conn.clientID, conn.sub);
        } else if (conn.clientID !== msg.clientID) {
          const text =
            `this connection already has clientID \`${conn.clientID}\`: one init identity per ` +
            "connection (open another socket for another clientID)";
          send(ws, { t: "error", message: text });
          ws.close(1008, text.slice(0, 120));
        }
        break;
      }
      case "subscribe":
        if (typeof msg.queryId !== "number") return;
        if (!this.live || !this.room) {
          this.pendingSubs.push({ ws, conn, msg });
          return;
        }
        await this.handleSubscribe(ws, conn, msg);
        break;
      case "unsubscribe": {
        if (typeof msg.queryId !== "number") return;
        const prev = conn.queries.get(msg.queryId);
        if (prev) {
          conn.queries.delete(msg.queryId);
          this.subs.delete(prev.subKey);
          this.room?.unsubscribe(prev.subKey, Date.now());
        }
        break;
      }
      case "pushMutation": {
        const e = msg.envelope;
        if (
          !isObject(e) ||
          typeof e.clientID !== "string" ||
          typeof e.mid !== "number" ||
          !Number.isFinite(e.mid) ||
          typeof e.name !== "string"
        ) {
          send(ws, { t: "error", message: "malformed pushMutation envelope" });
          break;
        }
        this.handlePushMutation(ws, conn, { clientID: e.clientID, mid: e.mid, name: e.name, args: e.args });
        break;
      }
      case "mutate":
        send(ws, {
          t: "error",
          queryId: msg.queryId,
          message: "this room accepts named mutators only (pushMutation)",
        });
        break;
      default:
        break;
    }
  }

  /** Binds `clientID` to `subject` unless it is bound; whether it is (now) bound to
   *  `subject`. A clientID is an idempotency key the client picks: another subject
   *  pushing under it would have the owner's next mutation absorbed as a duplicate. */
  bindClient(clientID, subject) {
    const bound = this.clientSubjects.get(clientID);
    if (bound === undefined) {
      this.clientSubjects.set(clientID, subject);
      return true;
    }
    return bound === subject;
  }

  /** A connection just bound its subject: bind its clientID, or — when the clientID
   *  belongs to another subject — drop its lmid subscriptions. */
  onConnSubject(conn) {
    if (conn.clientID === null || this.bindClient(conn.clientID, conn.sub)) return;
    const now = Date.now();
    for (const [qid, q] of [...conn.queries]) {
      const meta = this.subs.get(q.subKey);
      if (!meta || meta.user !== "") continue;
      send(conn.ws, { t: "queryError", queryId: qid, message: boundElsewhere(conn.clientID) });
      this.subs.delete(q.subKey);
      conn.queries.delete(qid);
      this.room?.unsubscribe(q.subKey, now);
    }
  }

  async handleSubscribe(ws, conn, msg) {
    if (!this.room) return; // raced an incarnation death: the socket is closing
    const queryError = (text) => send(ws, { t: "queryError", queryId: msg.queryId, message: text });
    if (typeof msg.name === "string") {
      if (msg.name !== LMID_QUERY_NAME) {
        queryError("subscribe requires a lease token");
        return;
      }
      if (!this.opts.downstream.writes) {
        queryError("this room is read-only (no write plane configured)");
        return;
      }
      if (!conn.clientID) {
        queryError("subscribe lmid query before init");
        return;
      }
      if (conn.sub !== null && !this.bindClient(conn.clientID, conn.sub)) {
        queryError(boundElsewhere(conn.clientID));
        return;
      }
      const prev = conn.queries.get(msg.queryId);
      const epoch = prev ? prev.epoch + 1 : 1;
      const subKey = `${conn.id}:${msg.queryId}`;
      if (prev) this.subs.delete(prev.subKey);
      let res;
      try {
        res = JSON.parse(this.room.lmidSubscribe(subKey, epoch, conn.clientID, Date.now()));
      } catch (e) {
        queryError(`materialize failed: ${message(e)}`);
        return;
      }
      conn.queries.set(msg.queryId, { subKey, epoch });
      this.subs.set(subKey, {
        ws,
        conn,
        clientQid: msg.queryId,
        user: "", // not lease-gated: lives as long as the connection
        exp: Number.POSITIVE_INFINITY,
      });
      send(ws, { t: "nhello", queryId: msg.queryId, hello: res.hello, bootId: this.incarnationBootId });
      send(ws, { t: "nbatch", queryId: msg.queryId, batch: res.snapshot });
      this.sendProgress(conn);
      return;
    }
    if (typeof msg.leaseToken !== "string") {
      queryError("subscribe requires a lease token");
      return;
    }
    const now = Date.now();
    let payload;
    try {
      payload = await verifyRoomToken(msg.leaseToken, {
        doc: this.opts.downstream.docId,
        keys: this.opts.downstream.tokenKeys,
        now,
      });
    } catch (e) {
      queryError(e instanceof RoomTokenError ? e.message : "lease token refused");
      return;
    }
    if (!this.room || ws.readyState !== WebSocket.OPEN) return;
    const revokedAt = this.revoked.get(payload.sub);
    if (revokedAt !== undefined && payload.iat <= revokedAt) {
      queryError("lease token refused: revoked");
      return;
    }
    if (
      this.armedScopesHash !== undefined &&
      payload.scopesHash !== undefined &&
      payload.scopesHash !== this.armedScopesHash
    ) {
      const key = `${payload.scopesHash}→${this.armedScopesHash}`;
      if (!this.loggedScopeSkew.has(key)) {
        this.loggedScopeSkew.add(key);
        this.log(
          `scope skew: this room's gate armed with scopes ${this.armedScopesHash} but a lease ` +
            `proves against ${payload.scopesHash} — a room profile was edited under this live ` +
            "room. Routed writes will deopt (safe, but degraded) until the room re-boots.",
        );
      }
    }
    // The first verified lease binds the connection's subject.
    if (conn.sub === null) {
      conn.sub = payload.sub;
      this.onConnSubject(conn);
    } else if (conn.sub !== payload.sub) {
      queryError("lease token refused: connection is bound to another subject");
      return;
    }
    const prev = conn.queries.get(msg.queryId);
    const epoch = prev ? prev.epoch + 1 : 1;
    const subKey = `${conn.id}:${msg.queryId}`;
    if (prev) this.subs.delete(prev.subKey);
    let res;
    try {
      res = JSON.parse(this.room.subscribe(subKey, epoch, JSON.stringify(payload.ast), now));
    } catch (e) {
      queryError(`materialize failed: ${message(e)}`);
      return;
    }
    conn.queries.set(msg.queryId, { subKey, epoch });
    this.subs.set(subKey, { ws, conn, clientQid: msg.queryId, user: payload.sub, exp: payload.exp });
    send(ws, { t: "nhello", queryId: msg.queryId, hello: res.hello, bootId: this.incarnationBootId });
    send(ws, { t: "nbatch", queryId: msg.queryId, batch: res.snapshot });
    this.sendProgress(conn);
  }

  /** The enforcement tick: expired leases, idle pipelines, old revocations. */
  sweep() {
    const now = Date.now();
    for (const [subKey, meta] of [...this.subs]) {
      if (meta.exp <= now) {
        send(meta.ws, {
          t: "queryError",
          queryId: meta.clientQid,
          message: "expired lease — renew through the API server",
        });
        this.dropSub(subKey, meta, now);
      }
    }
    if (this.room && this.live) this.room.sweep(now);
    const window = this.opts.downstream.revocationWindowMs ?? DEFAULT_REVOCATION_WINDOW_MS;
    for (const [user, at] of [...this.revoked]) {
      if (now - at > window) this.revoked.delete(user);
    }
  }

  dropSub(subKey, meta, now) {
    this.subs.delete(subKey);
    meta.conn.queries.delete(meta.clientQid);
    this.room?.unsubscribe(subKey, now);
  }

  /** Synchronous revocation: drop the user's subscriptions, close their sockets, refuse
   *  their older tokens. */
  revokeUser(user) {
    const now = Date.now();
    this.revoked.set(user, now);
    const sockets = new Set();
    let dropped = 0;
    for (const [subKey, meta] of [...this.subs]) {
      if (meta.user !== user) continue;
      send(meta.ws, { t: "queryError", queryId: meta.clientQid, message: "lease revoked" });
      this.dropSub(subKey, meta, now);
      sockets.add(meta.ws);
      dropped++;
    }
    for (const conn of this.conns) {
      if (conn.sub === user) sockets.add(conn.ws);
    }
    for (const ws of sockets) ws.close(1008, "revoked");
    this.log(`revoked ${user}: ${dropped} subscription(s)`);
    return dropped;
  }

  // ----------------------------- control plane ------------------------------

  stats() {
    return {
      live: this.live,
      connections: this.wss.clients.size,
      subscriptions: this.subs.size,
      materializations: this.room?.materializationCount() ?? 0,
      pendingMutations: this.room?.pendingLen() ?? 0,
      dirtyKeys: this.room?.dirtyLen() ?? 0,
      placementEpoch: this.placementEpoch,
      flushesConfirmed: this.flushesConfirmed,
      flushInFlight: this.flushBusy,
    };
  }

  startControl(control) {
    const server = http.createServer((req, res) => {
      const reply = (status, body) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      };
      if (req.headers.authorization !== `Bearer ${control.authToken}`) {
        req.resume();
        return reply(401, { error: "unauthorized" });
      }
      if (req.method === "GET" && req.url === "/stats") {
        req.resume();
        return reply(200, this.stats());
      }
      if (req.method === "POST" && req.url === "/revoke") {
        let body = "";
        req.setEncoding("utf8");
        req.on("data", (c) => (body += c));
        req.on("end", () => {
          let userId;
          try {
            ({ userId } = JSON.parse(body));
          } catch {
            return reply(400, { error: "invalid JSON" });
          }
          if (typeof userId !== "string" || userId.length === 0) {
            return reply(400, { error: "userId required" });
          }
          reply(200, { revoked: this.revokeUser(userId) });
        });
        return;
      }
      if (req.method === "POST" && req.url === "/drain") {
        req.resume();
        this.drainForDowngrade().then(
          (finalFlushSeq) => reply(200, { finalFlushSeq, drained: true }),
          (e) => reply(500, { error: message(e) }),
        );
        return;
      }
      req.resume();
      reply(404, { error: "unknown endpoint" });
    });
    this.control = server;
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(control.port ?? 0, "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
  }
}

/** Boots a room shell: binds the ports, claims the placement epoch (with an authority),
 *  mints the upstream lease and connects upstream. Await `shell.awaitLive()` for the
 *  seq-0 snapshot. */
async function createRoomShell(opts) {
  const shell = new Shell(opts);
  try {
    await shell.start();
  } catch (e) {
    await shell.close();
    throw e;
  }
  return shell;
}

module.exports = { createRoomShell, Shell };
