"use strict";
// The room shell of @rindle/room-native (the published room's `createRoomShell`): a
// driver of the core's room host (`RoomHost`, the same host the smol server drives).
// Every room rule — incarnations, leases and revocation, the lmid query, limits, the
// write path with its group commit and acks, outcomes, the write-behind flush, drain,
// the control plane's answers — is the host's. This file is plumbing:
//
// - sockets: the downstream listener is native (the smol server's websocket layer, in
//   the addon, off the JS thread: `RoomHost.listen`): frames to clients never pass
//   through JavaScript, and client events come back in batches (`pumpSockets`). The
//   upstream link is a `ws` client; each of its events becomes a host input;
// - the journal (the published `RoomJournal` interface: `fileJournal(path)` — the
//   server's own format —, `memoryJournal()`, or the host application's), one
//   operation at a time, in order;
// - the authority (the published `RoomAuthority` interface) and the upstream lease
//   mint (`fetch`);
// - mutators: the host calls `runMutator` synchronously, with the keyed `MutationTx`
//   served by the core (`tx*` in the addon);
// - one timer, set to the host's next deadline; the control plane's HTTP server, routed
//   by the host's router.
//
// After every input the shell carries out the host's outputs (`RoomHost.poll`).
const http = require("node:http");
const crypto = require("node:crypto");
const { WebSocket } = require("ws");

const native = require("../binding.js");
const { memoryJournal } = require("./journal.js");
const { NATIVE_JOURNAL } = require("./file-journal.js");

const { RoomHost, routeControl, controlHttp, controlLimits } = native;
/** The control plane's bounds, the core's (the smol server applies the same). */
const CONTROL_LIMITS = JSON.parse(controlLimits());

/** `RoomHost.poll` output kinds, `{name: number}`: the core's (`OutputKind`), read from
 *  the addon. Each kind's fields follow it in a fixed order (the core's `host::encode`). */
const KIND = Object.freeze(JSON.parse(native.outputKinds()));

/** The core's defaults (`RoomHost` fills every option left out; the shell reads the
 *  close grace, which it also gives the upstream link). */
const DEFAULTS = Object.freeze(JSON.parse(native.hostDefaults()));
/** The most often bytes of an unfinished upstream frame are reported as a sign of life. */
const HEARD_EVERY_MS = DEFAULTS.heardEveryMs;

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const message = (e) => String(e?.message ?? e);

/** Asks rindled's control plane for the room's upstream footprint lease: the answer's
 *  status and body (the body is the core's, and so is reading the answer, as in the
 *  server). */
async function mintLease(up) {
  const res = await fetch(new URL("/materialize", up.controlUrl), {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(up.authToken ? { authorization: `Bearer ${up.authToken}` } : {}),
    },
    body: native.materializeBody(JSON.stringify(up.footprintAst), up.leaseTtlMs ?? null),
  });
  return { status: res.status, body: await res.text() };
}

function checkOptions(opts) {
  if (!isObject(opts)) throw new TypeError("createRoomShell: `opts` must be an object");
  const up = opts.upstream;
  const down = opts.downstream;
  if (!isObject(up) || typeof up.wsUrl !== "string" || typeof up.controlUrl !== "string") {
    throw new TypeError("createRoomShell: `upstream` needs `wsUrl` and `controlUrl` strings");
  }
  if (up.footprintAst === undefined) {
    throw new TypeError("createRoomShell: `upstream.footprintAst` is required (the footprint query's AST)");
  }
  // The lease mint's body is built now, so that a bad footprint or TTL fails here.
  try {
    native.materializeBody(JSON.stringify(up.footprintAst), up.leaseTtlMs ?? null);
  } catch (e) {
    throw new TypeError(`createRoomShell: upstream: ${message(e)}`);
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
    if (writes.scopes !== undefined && !Array.isArray(writes.scopes)) {
      throw new TypeError("writes.scopes must be an array");
    }
  }
}

/** The host's configuration (bindings-node/src/host.rs, `config`); an option left out
 *  takes the core's default. */
function hostConfig(opts) {
  const d = opts.downstream;
  const w = d.writes;
  return JSON.stringify({
    docId: d.docId,
    tokenKeys: Object.entries(d.tokenKeys),
    idleTtlMs: d.idleTtlMs,
    sweepIntervalMs: d.sweepIntervalMs,
    revocationWindowMs: d.revocationWindowMs,
    sendBudgetBytes: d.sendBudgetBytes,
    firstFrameTimeoutMs: d.firstFrameTimeoutMs,
    startupTimeoutMs: d.startupTimeoutMs,
    maxSubscriptionsPerConn: d.maxSubscriptionsPerConn,
    maxSnapshotBytes: d.maxSnapshotBytes,
    maxMaterializations: d.maxMaterializations,
    maxQueryBytes: d.maxQueryBytes,
    maxHeldRows: d.maxHeldRows,
    upstreamClientId: opts.upstream.clientId,
    upstreamSilenceTimeoutMs: opts.upstream.silenceTimeoutMs,
    silenceTimeoutMs: d.silenceTimeoutMs,
    entropy: crypto.randomBytes(32).toString("hex"),
    writes: w
      ? {
          ownedTables: w.ownedTables,
          scopes: w.scopes ?? null,
          groupCommitMs: w.groupCommitMs,
          flushDebounceMs: w.flushDebounceMs,
          flushDirtyMax: w.flushDirtyMax,
          authority: w.authority !== undefined && w.authority !== null,
        }
      : null,
  });
}

/**
 * Room mutators are plain synchronous functions. A mutator that returned a promise (an
 * `async` function) or a generator (a `shared(...)` registry body) did not run as a room
 * mutator: refuse it, so its staged writes are discarded with the transaction.
 */
function assertSyncMutatorReturn(returned, name) {
  if (returned === null || (typeof returned !== "object" && typeof returned !== "function")) {
    return;
  }
  if (typeof returned.then === "function") {
    Promise.resolve(returned).catch(() => {}); // no unhandled rejection
    throw new Error(
      `mutator \`${name}\` returned a promise: room mutators must be plain synchronous functions`,
    );
  }
  if (typeof returned.next === "function" && typeof returned[Symbol.iterator] === "function") {
    throw new Error(
      `mutator \`${name}\` returned a generator: generator (shared) registries do not run in the room — ` +
        "register plain synchronous (tx, args, ctx) functions",
    );
  }
}

/** `undefined` in an `edit`'s new cells keeps the current value. */
const KEEP = { $keep: true };

/** The keyed `MutationTx` a mutator writes through (the published room's): the core's
 *  keyed layer, on the host's open transaction (its checks, its messages). */
const TX = Object.freeze({
  row: (table, pk) => {
    const text = native.txRow(table, JSON.stringify(pk));
    return text === null ? undefined : JSON.parse(text);
  },
  insert: (table, row) => native.txInsert(table, JSON.stringify(row)),
  update: (table, row) => native.txUpdate(table, JSON.stringify(row)),
  upsert: (table, row) => native.txUpsert(table, JSON.stringify(row)),
  delete: (table, pk) => native.txDelete(table, JSON.stringify(pk)),
  query: (_query) => native.txQuery(),
  get: (table, pk) => {
    const text = native.txGet(table, JSON.stringify(pk));
    return text === null ? undefined : JSON.parse(text);
  },
  add: (table, row) => native.txAdd(table, JSON.stringify(row)),
  remove: (table, row) => native.txRemove(table, JSON.stringify(row)),
  edit: (table, oldRow, newRow) =>
    native.txEdit(
      table,
      JSON.stringify(oldRow),
      JSON.stringify(Array.isArray(newRow) ? newRow.map((v) => (v === undefined ? KEEP : v)) : newRow),
    ),
});

/** An authority failure for the host: `fatal: true` errors kill the incarnation, the
 *  rest are retried (same body). */
function authorityFailure(e) {
  return JSON.stringify(e?.fatal === true ? { fatal: message(e) } : { retryable: message(e) });
}

class Shell {
  constructor(opts) {
    checkOptions(opts);
    this.opts = opts;
    this.log = opts.log ?? (() => {});
    const writes = opts.downstream.writes;
    this.mutators = writes?.mutators ?? {};
    this.journal = writes ? writes.journal ?? memoryJournal() : null;
    this.authority = writes?.authority ?? null;
    this.upstream = null; // {link, ws, error}
    this.liveWaiters = [];
    this.waiters = new Map(); // control request id → resolve(kind, payload)
    this.nextRequest = 1;
    this.journalChain = Promise.resolve();
    this.timer = null;
    this.stopped = false;
    this.closing = null;
    this.control = null;
    this.started = null; // {resolve, reject}
    this.host = new RoomHost(
      hostConfig(opts),
      (name, args, user) => this.runMutator(name, args, user),
      null, // every downstream socket is native: the host reads its backlog itself
    );
    this.boundPort = 0;
  }

  async start() {
    const d = this.opts.downstream;
    // Limits left out are the core's defaults (`RoomHost.listen` fills them).
    const limits = {
      maxFrameBytes: d.maxFrameBytes,
      maxConnections: d.maxConnections,
      handshakeTimeoutMs: d.handshakeTimeoutMs,
    };
    this.boundPort = this.host.listen(this.opts.port ?? 0, JSON.stringify(limits), () =>
      this.input((now) => this.host.pumpSockets(now)),
    );
    if (this.opts.downstream.control) await this.startControl(this.opts.downstream.control);
    const started = new Promise((resolve, reject) => {
      this.started = { resolve, reject };
    });
    this.host.start(Date.now());
    this.pump();
    await started;
  }

  get port() {
    return this.boundPort;
  }

  get controlPort() {
    const addr = this.control?.address();
    return typeof addr === "object" && addr !== null ? addr.port : 0;
  }

  awaitLive() {
    if (this.host.isLive()) return Promise.resolve();
    return new Promise((resolve) => this.liveWaiters.push(resolve));
  }

  cv() {
    return this.host.cv() ?? undefined;
  }

  upstreamEpoch() {
    return this.host.epoch() ?? undefined;
  }

  bootId() {
    return this.host.bootId();
  }

  /** Fires the flush now and resolves once it settled (at once without an authority). */
  flushNow() {
    return this.ask({ kind: "flushNow" }).then(() => undefined);
  }

  close() {
    if (this.closing) return this.closing;
    this.closing = this.doClose();
    return this.closing;
  }

  async doClose() {
    if (!this.stopped) {
      this.input((now) => this.host.control(now, this.nextRequest++, JSON.stringify({ kind: "close" })));
    }
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.dropUpstream();
    // The host closed every client with 1001; each socket gets the close grace to
    // answer, then whatever is left is dropped.
    this.host.stopSockets(false);
    await this.host.socketsDrained(DEFAULTS.closeGraceMs + 100);
    this.host.stopSockets(true);
    if (this.control) {
      const control = this.control;
      await new Promise((resolve) => {
        control.close(() => resolve());
        control.closeAllConnections?.();
      });
    }
  }

  // ------------------------------ the host loop ------------------------------

  /** Feeds one input (`fn(now)` calls the host), then carries out the outputs. */
  input(fn) {
    if (this.stopped) return;
    try {
      fn(Date.now());
    } catch (e) {
      this.log(`room host error: ${message(e)}`);
    }
    this.pump();
  }

  /** Carries out every output of the host, then re-arms the timer. */
  pump() {
    const out = this.host.poll();
    let i = 0;
    while (i < out.length) {
      const kind = out[i++];
      switch (kind) {
        case KIND.log:
          this.log(out[i + 1]);
          i += 2;
          break;
        case KIND.started:
          this.started?.resolve();
          this.started = null;
          break;
        case KIND.startFailed:
          this.stopped = true;
          this.started?.reject(new Error(out[i++]));
          this.started = null;
          break;
        case KIND.stopAccepting:
          break;
        case KIND.stopped: {
          const moved = out[i++];
          this.stopped = true;
          for (const resolve of this.waiters.values()) resolve(undefined, "");
          this.waiters.clear();
          if (moved) void this.close();
          break;
        }
        case KIND.live:
          i++;
          for (const resolve of this.liveWaiters.splice(0)) resolve();
          break;
        case KIND.mintLease:
          this.mint();
          break;
        case KIND.openUpstream:
          this.openUpstream(out[i++]);
          break;
        case KIND.closeUpstream:
          this.dropUpstream();
          break;
        case KIND.pingUpstream: {
          const up = this.upstream;
          if (up && up.link === out[i] && up.ws.readyState === WebSocket.OPEN) up.ws.ping();
          i++;
          break;
        }
        case KIND.upstreamSend: {
          const link = out[i];
          const text = out[i + 1];
          i += 2;
          const up = this.upstream;
          if (up && up.link === link && up.ws.readyState === WebSocket.OPEN) up.ws.send(text);
          break;
        }
        case KIND.journalRead:
          this.journalRead(out[i++]);
          break;
        case KIND.journalAppend: {
          const entries = out[i + 1];
          this.journalWrite(out[i], (j) =>
            j[NATIVE_JOURNAL] ? j[NATIVE_JOURNAL]().append(entries) : j.append(JSON.parse(entries)),
          );
          i += 2;
          break;
        }
        case KIND.journalAppendFlush: {
          const record = out[i + 1];
          this.journalWrite(out[i], (j) =>
            j[NATIVE_JOURNAL] ? j[NATIVE_JOURNAL]().appendFlush(record) : j.appendFlush(JSON.parse(record)),
          );
          i += 2;
          break;
        }
        case KIND.journalConfirmFlush: {
          const seq = out[i + 1];
          this.journalWrite(out[i], (j) => j.confirmFlush(seq));
          i += 2;
          break;
        }
        case KIND.journalCompact: {
          const durable = out[i + 1];
          this.journalWrite(out[i], (j) =>
            typeof j.compact === "function" ? j.compact(JSON.parse(durable)) : undefined,
          );
          i += 2;
          break;
        }
        case KIND.authorityClaim: {
          // io, doc, body (the HTTP body, for a driver that calls the authority itself)
          const doc = out[i + 1];
          this.authorityCall(out[i], (a) => a.claimEpoch(doc), (epoch) => ({ claimed: epoch }));
          i += 3;
          break;
        }
        case KIND.authorityLmids: {
          // io, doc, clients, body
          const doc = out[i + 1];
          const clients = JSON.parse(out[i + 2]);
          this.authorityCall(out[i], (a) => a.lmids(doc, clients), (lmids) => ({ lmids }));
          i += 4;
          break;
        }
        case KIND.authorityApply: {
          const body = out[i + 1];
          this.authorityCall(out[i], (a) => a.applyRowChangeTxn(body), (applied) => ({ applied }));
          i += 2;
          break;
        }
        case KIND.controlReply: {
          // id, the reply's kind, its value as JSON ("" when it has none)
          const resolve = this.waiters.get(out[i]);
          this.waiters.delete(out[i]);
          resolve?.(out[i + 1], out[i + 2]);
          i += 3;
          break;
        }
        case KIND.stranded:
          // The host logged each one; a single room keeps no fleet counters.
          i++;
          break;
        default:
          throw new Error(`unknown host output kind ${kind}`);
      }
    }
    this.armTimer();
  }

  armTimer() {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.stopped) return;
    const deadline = this.host.nextDeadline();
    if (deadline === null) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.input((now) => this.host.timeout(now));
    }, Math.max(0, deadline - Date.now()));
    this.timer.unref?.();
  }

  /** A control request to the host: resolves `(kind, payload)` (kind undefined when the
   *  host stopped first). */
  ask(request) {
    if (this.stopped) return Promise.resolve([undefined, ""]);
    const id = this.nextRequest++;
    return new Promise((resolve) => {
      this.waiters.set(id, (kind, payload) => resolve([kind, payload]));
      this.input((now) => this.host.control(now, id, JSON.stringify(request)));
    });
  }

  // ------------------------------ driver callbacks ------------------------------

  /** The host runs a mutator: `""` done, `"U"` unknown, `"R:…"` rejected, `"E:…"` an
   *  environment shortfall. */
  runMutator(name, argsText, user) {
    const mutator = Object.hasOwn(this.mutators, name) ? this.mutators[name] : undefined;
    if (typeof mutator !== "function") return "U";
    try {
      const args = argsText === null || argsText === undefined ? undefined : JSON.parse(argsText);
      const returned = mutator(TX, args, { user });
      assertSyncMutatorReturn(returned, name);
      return "";
    } catch (e) {
      return e?.code === "ENVIRONMENT" ? `E:${message(e)}` : `R:${message(e)}`;
    }
  }

  // ------------------------------ sockets ------------------------------

  mint() {
    mintLease(this.opts.upstream).then(
      ({ status, body }) => this.input((now) => this.host.leaseAnswered(now, status, body)),
      (e) => this.input((now) => this.host.leaseMinted(now, null, message(e))),
    );
  }

  openUpstream(link) {
    this.dropUpstream();
    const maxPayload = this.opts.upstream.maxFrameBytes ?? DEFAULTS.upstreamMaxFrameBytes;
    const ws = new WebSocket(this.opts.upstream.wsUrl, { maxPayload });
    const up = { link, ws, error: null };
    this.upstream = up;
    ws.on("open", () => {
      // Bytes of a frame still arriving are a sign of life too (a large snapshot can
      // take longer than the silence timeout), reported at most once per second.
      let heardAt = 0;
      ws._socket?.on("data", () => {
        const now = Date.now();
        if (now - heardAt < HEARD_EVERY_MS) return;
        heardAt = now;
        this.input((t) => this.host.upstreamHeard(t, link));
      });
      this.input((now) => this.host.upstreamOpened(now, link));
    });
    // `ws` answers a ping itself.
    const heard = () => this.input((now) => this.host.upstreamHeard(now, link));
    ws.on("pong", heard);
    ws.on("ping", heard);
    ws.on("message", (data) => {
      const text = String(data);
      this.input((now) => this.host.upstreamFrame(now, link, text));
    });
    ws.on("error", (err) => {
      up.error =
        err?.code === "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH"
          ? `an upstream message passes upstream.maxFrameBytes: the limit is ${maxPayload}; ` +
            "raise it to follow a footprint this large"
          : message(err);
    });
    ws.on("close", () => {
      if (this.upstream === up) this.upstream = null;
      this.input((now) => this.host.upstreamClosed(now, link, up.error));
    });
  }

  dropUpstream() {
    const up = this.upstream;
    if (!up) return;
    this.upstream = null;
    if (up.ws.readyState === WebSocket.CONNECTING) up.ws.terminate();
    else up.ws.close();
    const t = setTimeout(() => up.ws.terminate(), DEFAULTS.closeGraceMs);
    t.unref?.();
  }

  // ------------------------------ journal and authority ------------------------------

  /** Runs journal operations one at a time, in the host's order. */
  serially(op) {
    this.journalChain = this.journalChain.then(op, op);
    return this.journalChain;
  }

  journalRead(io) {
    const j = this.journal;
    this.serially(async () => {
      let json;
      try {
        if (j[NATIVE_JOURNAL]) {
          json = await j[NATIVE_JOURNAL]().readAll();
        } else {
          // The journal's opaque records, as they were appended (the host decodes them and
          // derives the clientID → subject bindings from them).
          const entries = await j.replay();
          const { records, maxSeq } = await j.replayFlushes();
          const contents = { entries, flushes: records, maxFlushSeq: maxSeq };
          // Deprecated: a journal of an earlier release that kept its own bindings.
          if (typeof j.bindings === "function") contents.bindings = await j.bindings();
          json = JSON.stringify(contents);
        }
      } catch (e) {
        this.input((now) => this.host.journalRead(now, io, null, message(e)));
        return;
      }
      this.input((now) => this.host.journalRead(now, io, json, null));
    });
  }

  journalWrite(io, op) {
    const j = this.journal;
    this.serially(async () => {
      let error = null;
      try {
        await op(j);
      } catch (e) {
        error = message(e);
      }
      this.input((now) => this.host.journalWritten(now, io, error));
    });
  }

  authorityCall(io, call, wrap) {
    const a = this.authority;
    Promise.resolve()
      .then(() => call(a))
      .then(
        (value) => JSON.stringify(wrap(value)),
        (e) => authorityFailure(e),
      )
      .then((json) => this.input((now) => this.host.authority(now, io, json)));
  }

  // ----------------------------- control plane ------------------------------

  startControl(control) {
    const server = http.createServer((req, res) => {
      let body = "";
      let size = 0;
      let refused = false;
      req.on("data", (c) => {
        if (refused) return;
        size += c.length;
        if (size > CONTROL_LIMITS.maxBodyBytes) {
          // Bounded like the smol server's: the rest is read (within the request
          // timeout) but not kept, and the request is refused.
          refused = true;
          body = "";
          return;
        }
        body += c;
      });
      req.on("end", () => {
        if (refused) {
          res.writeHead(400, { "content-type": "application/json" });
          res.end(JSON.stringify({ error: `bad request: body exceeds ${CONTROL_LIMITS.maxBodyBytes} bytes` }));
          return;
        }
        const auth = req.headers.authorization;
        const [status, payload] = routeControl(req.method, req.url, auth ?? null, body, control.authToken);
        const reply = (code, text) => {
          res.writeHead(code, { "content-type": "application/json" });
          res.end(text);
        };
        if (status === 0) {
          this.ask(JSON.parse(payload)).then(([kind, p]) => {
            const [code, text] = controlHttp(kind ?? null, p);
            reply(code, text);
          });
        } else if (status === 1) {
          // `/metrics`: the core's Prometheus text, as the smol server serves it.
          res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
          res.end(this.host ? this.host.metrics() : "");
        } else {
          reply(status, payload);
        }
      });
    });
    server.maxConnections = CONTROL_LIMITS.maxConnections;
    server.requestTimeout = CONTROL_LIMITS.readTimeoutMs;
    server.headersTimeout = CONTROL_LIMITS.readTimeoutMs;
    this.control = server;
    return new Promise((resolve) => {
      server.listen(control.port ?? 0, "127.0.0.1", () => resolve());
    });
  }
}

/** Boots a room shell: binds the ports, starts the host (start-up I/O: the journal's
 *  flush records and the epoch claim with an authority, the upstream lease), and
 *  resolves once the upstream connection is underway — await `shell.awaitLive()` for
 *  the upstream snapshot. A failed start-up rejects and frees the ports. */
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

module.exports = { createRoomShell, assertSyncMutatorReturn };
