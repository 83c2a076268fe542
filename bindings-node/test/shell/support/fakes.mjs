// Test doubles for the shell tests, loopback only: a fake `rindled` (HTTP
// `/materialize` + a normalized upstream websocket the test drives) and a fake write
// authority (epoch claims, lmids, apply with epoch fencing, `(source, offset)` dedup
// with batchHash identity, all-or-nothing CAS). The JS twins of runtime-smol's
// tests/common/{rindled,authority}.rs.
import http from "node:http";
import { WebSocketServer } from "ws";

/** `normalizedFp` (docs/design/wire.md, "The normalized protocol"): FNV-1a 64 over the
 *  tables as sent. */
export function normalizedFp(tables) {
  const bytes = [];
  const u32 = (n) => bytes.push(n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff);
  const s = (str) => {
    const b = Buffer.from(str, "utf8");
    u32(b.length);
    for (const x of b) bytes.push(x);
  };
  u32(tables.length);
  for (const t of tables) {
    s(t.name);
    u32(t.columns.length);
    for (const c of t.columns) s(c);
    u32(t.primaryKey.length);
    for (const i of t.primaryKey) s(t.columns[i]);
  }
  let h = 0xcbf29ce484222325n;
  for (const b of bytes) h = ((h ^ BigInt(b)) * 0x100000001b3n) & 0xffffffffffffffffn;
  return h.toString(16).padStart(16, "0");
}

/** Everything a test opened, closed by `closeAll()` (registered with `after` by every
 *  shell test file), so a failing assertion never leaves a socket keeping the test
 *  process alive. Closing twice is harmless. */
const opened = new Set();
export function track(resource) {
  opened.add(resource);
  return resource;
}
export async function closeAll() {
  const all = [...opened].reverse();
  opened.clear();
  for (const r of all) {
    try {
      await r.close();
    } catch {
      // already closed
    }
  }
}

function listen(server) {
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server.address().port)));
}

function readBody(req) {
  return new Promise((resolve) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c) => (body += c));
    req.on("end", () => resolve(body));
  });
}

const NOTE_TABLES = [
  { name: "note", columns: ["id", "body", "owner"], primaryKey: [0] },
  { name: "tally", columns: ["id", "mid"], primaryKey: [0] },
];
const NOTE_ROWS = [
  ["note", [1, "one", "u1"]],
  ["note", [2, "two", "u1"]],
  ["note", [3, "three", "u2"]],
];

export class FakeRindled {
  /** A daemon serving `note(id, body, owner)` with three rows, and `tally(id, mid)`. */
  static notes() {
    return FakeRindled.start(NOTE_TABLES, NOTE_ROWS);
  }

  static async start(tables, rows) {
    const r = track(new FakeRindled(tables, rows));
    await r.listen();
    return r;
  }

  constructor(tables, rows) {
    this.tables = tables;
    this.rows = new Map(); // `${table}\0${pk JSON}` → [table, row]
    for (const [t, row] of rows) this.rows.set(this.key(t, row), [t, row]);
    this.epoch = 0;
    this.seq = 0;
    this.cv = 100;
    this.boot = "daemon-boot-1";
    this.current = null;
    this.subscribes = 0;
    this.mints = 0;
    this.failMint = false;
    this.holding = false;
    this.held = false;
    this.conns = 0;
    this.inits = [];
    this.leases = [];
    this.materializeBodies = [];
    this.authHeaders = [];
  }

  key(table, row) {
    const schema = this.tables.find((t) => t.name === table);
    return `${table}\0${JSON.stringify(schema.primaryKey.map((i) => row[i]))}`;
  }

  async listen() {
    this.http = http.createServer(async (req, res) => {
      const body = await readBody(req);
      this.materializeBodies.push(body);
      this.authHeaders.push(req.headers.authorization ?? null);
      let status = 200;
      let out;
      if (req.method !== "POST" || req.url !== "/materialize") {
        status = 404;
        out = { error: "no" };
      } else if (this.failMint) {
        status = 500;
        out = { error: "mint refused" };
      } else {
        this.mints += 1;
        out = { leaseToken: `lease-${this.mints}` };
      }
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(out));
    });
    const httpPort = await listen(this.http);
    this.wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await new Promise((resolve) => this.wss.once("listening", resolve));
    this.wss.on("connection", (ws) => {
      this.conns += 1;
      this.current = ws;
      ws.on("error", () => {});
      ws.on("message", (data) => {
        let v;
        try {
          v = JSON.parse(String(data));
        } catch {
          return;
        }
        if (v?.t === "init") this.inits.push(String(v.clientID ?? ""));
        if (v?.t === "subscribe") {
          this.subscribes += 1;
          this.leases.push(String(v.leaseToken ?? ""));
          if (this.holding) this.held = true;
          else this.answer(ws);
        }
      });
    });
    this.wsUrl = `ws://127.0.0.1:${this.wss.address().port}`;
    this.controlUrl = `http://127.0.0.1:${httpPort}`;
  }

  fp() {
    return normalizedFp(this.tables);
  }

  answer(ws) {
    this.epoch += 1;
    this.seq = 0;
    const fp = this.fp();
    const ops = [...this.rows.keys()].sort().map((k) => {
      const [table, row] = this.rows.get(k);
      return { table, op: "add", row };
    });
    const frames = [
      {
        t: "nhello",
        queryId: 1,
        bootId: this.boot,
        hello: { epoch: this.epoch, comparatorVersion: 2, tables: this.tables, normalizedFp: fp },
      },
      { t: "nbatch", queryId: 1, batch: { epoch: this.epoch, seq: 0, normalizedFp: fp, ops, cv: this.cv } },
      { t: "progress", frame: { cvMin: this.cv } },
    ];
    for (const f of frames) ws.send(JSON.stringify(f));
  }

  /** A live batch of `ops` (seq + 1, cv + 1), then a `progress` at the new cv. */
  live(ops) {
    this.seq += 1;
    this.cv += 1;
    for (const op of ops) {
      if (op.op === "add") this.rows.set(this.key(op.table, op.row), [op.table, op.row]);
      else if (op.op === "remove") this.rows.delete(this.key(op.table, op.row));
      else {
        this.rows.delete(this.key(op.table, op.old));
        this.rows.set(this.key(op.table, op.new), [op.table, op.new]);
      }
    }
    const batch = { epoch: this.epoch, seq: this.seq, normalizedFp: this.fp(), ops, cv: this.cv };
    this.sendRaw(JSON.stringify({ t: "nbatch", queryId: 1, batch }));
    this.sendRaw(JSON.stringify({ t: "progress", frame: { cvMin: this.cv } }));
  }

  sendRaw(text) {
    if (this.current && this.current.readyState === 1) this.current.send(text);
  }

  /** Drops the current upstream socket (a close frame without status). */
  dropConn() {
    const ws = this.current;
    this.current = null;
    ws?.close();
  }

  hold() {
    this.holding = true;
  }

  release() {
    this.holding = false;
    if (this.held) {
      this.held = false;
      if (this.current) this.answer(this.current);
    }
  }

  async close() {
    if (this.closed) return;
    this.closed = true;
    for (const c of this.wss.clients) c.terminate();
    await new Promise((resolve) => this.wss.close(resolve));
    this.http.closeAllConnections?.();
    await new Promise((resolve) => this.http.close(resolve));
  }
}

// The outcome rows are keyed by (client, mid), under either name of the outcomes table.
const PK_COLS = { _rindle_room_mutation_outcomes: [0, 1], _rindle_room_mutation_outcomes: [0, 1] };
const pkOf = (table, row) => (PK_COLS[table] ?? [0]).map((i) => row[i]);
const rowKey = (table, pk) => `${table}\0${JSON.stringify(pk)}`;
const sameJson = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** The upstream ops a committed apply's data changes make (the room's own `_…` tables left out). */
function echoOps(body) {
  return (body.changes ?? [])
    .filter((c) => !String(c.table).startsWith("_"))
    .map((c) => {
      if (c.op === "add") return { table: c.table, op: "add", row: c.row };
      if (c.op === "remove") return { table: c.table, op: "remove", row: c.old };
      return { table: c.table, op: "edit", old: c.old, new: c.row };
    });
}

export class FakeAuthority {
  static async start() {
    const a = track(new FakeAuthority());
    const port = await listen(a.server);
    a.base = `http://127.0.0.1:${port}`;
    return a;
  }

  constructor() {
    this.epoch = 0;
    this.cv = 0;
    this.applied = new Map(); // `${source}\0${offset}` → batchHash
    this.rowsByKey = new Map();
    this.down = false;
    this.bodies = [];
    this.claims = 0;
    this.echo = null; // a FakeRindled that streams each committed apply back
    this.server = http.createServer(async (req, res) => {
      const body = await readBody(req);
      const [status, out] = this.handle(req.url, body);
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(out));
      if (this.echo && req.url === "/apply-row-change-txn" && out.applied === true) {
        const ops = echoOps(JSON.parse(body));
        if (ops.length > 0) this.echo.live(ops);
      }
    });
  }

  /**
   * Streams every committed apply's data changes back through `rindled` from now on,
   * as the real daemon does (the room confirms a flush's journal record at its echo).
   */
  echoTo(rindled) {
    this.echo = rindled;
  }

  /** Options for `httpAuthority` against this fake. */
  urls() {
    return {
      applyUrl: `${this.base}/apply-row-change-txn`,
      claimUrl: `${this.base}/claim-room-epoch`,
      lmidsUrl: `${this.base}/room-lmids`,
    };
  }

  setDown(down) {
    this.down = down;
  }

  /** Another placement claims the document. */
  fence() {
    this.epoch += 1;
  }

  put(table, row) {
    this.rowsByKey.set(rowKey(table, pkOf(table, row)), [table, row]);
  }

  row(table, pk) {
    return this.rowsByKey.get(rowKey(table, pk))?.[1];
  }

  rows(table) {
    return [...this.rowsByKey.values()].filter(([t]) => t === table).map(([, r]) => r);
  }

  handle(url, body) {
    if (url === "/apply-row-change-txn") this.bodies.push(body);
    if (this.down) return [503, { error: "authority down" }];
    let v;
    try {
      v = JSON.parse(body);
    } catch {
      return [400, { error: "invalid JSON" }];
    }
    switch (url) {
      case "/claim-room-epoch":
        this.epoch += 1;
        this.claims += 1;
        return [200, { epoch: this.epoch }];
      case "/room-lmids": {
        const lmids = {};
        for (const c of v.clients ?? []) lmids[c] = this.row("_rindle_client_mutations", [c])?.[1] ?? 0;
        return [200, { lmids }];
      }
      case "/apply-row-change-txn":
        return this.apply(v);
      default:
        return [404, { error: "unknown route" }];
    }
  }

  apply(v) {
    if (v.epoch !== this.epoch) return [409, { error: "fenced", currentEpoch: this.epoch }];
    const id = `${v.source}\0${v.offset}`;
    if (this.applied.has(id)) {
      if (this.applied.get(id) === v.batchHash) return [200, { applied: false }];
      return [500, { error: "batch identity mismatch: same flush id, different body" }];
    }
    const changes = v.changes ?? [];
    const conflicts = [];
    for (const c of changes) {
      const image = c.op === "add" ? c.row : c.old;
      const pk = pkOf(c.table, image);
      const current = this.row(c.table, pk);
      const ok = c.op === "add" ? current === undefined : current !== undefined && sameJson(current, c.old);
      if (!ok) conflicts.push({ table: c.table, pk, current: current ?? null });
    }
    if (conflicts.length > 0) return [409, { error: "conflict", conflicts }];
    for (const c of changes) {
      if (c.op === "remove") this.rowsByKey.delete(rowKey(c.table, pkOf(c.table, c.old)));
      else this.put(c.table, c.row);
    }
    this.applied.set(id, v.batchHash);
    this.cv += 1;
    return [200, { applied: true, cv: this.cv }];
  }

  async close() {
    if (this.closed) return;
    this.closed = true;
    this.server.closeAllConnections?.();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
