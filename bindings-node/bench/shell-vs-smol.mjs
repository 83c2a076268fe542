#!/usr/bin/env node
// Node shell vs smol server: the JS room shell of @rindle/room-native (its
// own process, release addon) against the `rindle-room` binary of runtime-smol (release),
// both following the same fake rindled (JS, in this process) with the write plane on
// (in-memory journal, no authority) and CRUD mutators, with N downstream subscribers
// (one websocket each, all on the same query) and one author connection.
//
//   latency     sequential `note.insert` pushes; for each, the time from sending the push
//               to each subscriber receiving the nbatch that carries the row (every
//               delivery: p50 / p99), and to the last subscriber receiving it (fan-out
//               completion: p50 / p99).
//   throughput  M pushes sent back to back; mutations/s = M / the time until every
//               subscriber received the last one's row.
//
// The subscribers run in this process (one Node thread reading every socket), the room
// under test in its own process; on a 2-core machine they share the cores.
//
// Run (from bindings-node/):
//   npm run build && cargo build --release -p rindle-room-smol --bin rindle-room
//   node bench/shell-vs-smol.mjs [--subs 100,1000] [--json]
// BENCH_PROF=<dir> also writes a CPU profile of the JS shell's process into <dir>.
// The smol binary is `$RINDLE_ROOM_SMOL_BIN` or `$CARGO_TARGET_DIR/release/rindle-room`.
// Loopback only; every loop is bounded.
import { spawn } from "node:child_process";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { WebSocket } from "ws";
import room from "../index.js";
import { FakeRindled } from "../test/shell/support/fakes.mjs";
import { Client, sleep } from "../test/shell/support/client.mjs";
import { smolBinary, smolConfig, startSmol } from "../test/shell/support/smol.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const ROOM_PROCESS = path.join(here, "../test/shell/support/room-process.mjs");
const DOC = "doc/1";
const KID = "k1";
const KEY = "secret";
const NOTES = { table: "note" };

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const SUBS = opt("--subs", "100,1000").split(",").map(Number);
const JSON_OUT = args.includes("--json");
const PLAN = {
  100: { latency: 300, throughput: 3000 },
  1000: { latency: 150, throughput: 600 },
};
const plan = (n) => PLAN[n] ?? { latency: 150, throughput: 500 };

const lease = (sub) =>
  room.mintRoomToken({ doc: DOC, ast: NOTES, sub, kid: KID, key: KEY, ttlMs: 3_600_000 });

/** The JS shell in its own process (room-process.mjs, memory journal, release addon). */
async function startJsShell(rindled) {
  const cfg = { wsUrl: rindled.wsUrl, controlUrl: rindled.controlUrl };
  const env = { ...process.env };
  delete env.RINDLE_ROOM_NATIVE_BUILD; // the release addon
  // BENCH_PROF=<dir>: write a CPU profile of the shell process there.
  const prof = process.env.BENCH_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_PROF}`] : [];
  const child = spawn(process.execPath, [...prof, ROOM_PROCESS, JSON.stringify(cfg)], {
    stdio: ["ignore", "pipe", "ignore"],
    env,
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const port = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d) => {
      out += d;
      const m = /READY (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    exited.then((code) => reject(new Error(`the JS shell exited (${code})`)));
  });
  return {
    port,
    async stop() {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

async function startSmolRoom(rindled) {
  const bin = smolBinary("release");
  if (!bin) throw new Error("no release rindle-room: cargo build --release -p rindle-room-smol --bin rindle-room");
  return startSmol(
    bin,
    smolConfig({
      rindled,
      docId: DOC,
      kid: KID,
      key: KEY,
      control: "bench",
      footprint: NOTES,
      writes: { ownedTables: ["note"] },
    }),
  );
}

/** A light subscriber: counts deliveries of the awaited marker, nothing else parsed. */
class Subscriber {
  constructor(ws, race) {
    this.ws = ws;
    this.race = race;
    ws.on("message", (data) => {
      const r = this.race.current;
      if (r !== null && this.seen !== r.id && data.toString().includes(r.marker)) {
        this.seen = r.id;
        r.delivered(performance.now() - r.t0);
      }
    });
    ws.on("error", () => {});
  }
}

async function subscribers(port, n, race) {
  const subs = [];
  const tokens = await Promise.all(Array.from({ length: 8 }, (_, i) => lease(`reader-${i}`)));
  const batch = 50;
  for (let i = 0; i < n; i += batch) {
    const made = await Promise.all(
      Array.from({ length: Math.min(batch, n - i) }, (_, j) =>
        new Promise((resolve, reject) => {
          const ws = new WebSocket(`ws://127.0.0.1:${port}/`, { perMessageDeflate: false });
          ws.once("error", reject);
          ws.once("open", () => {
            let frames = 0;
            const onSnapshot = () => {
              if (++frames === 3) {
                ws.off("message", onSnapshot);
                resolve(new Subscriber(ws, race));
              }
            };
            ws.on("message", onSnapshot); // nhello, snapshot, progress
            ws.send(JSON.stringify({ t: "subscribe", queryId: 1, leaseToken: tokens[(i + j) % tokens.length] }));
          });
        }),
      ),
    );
    subs.push(...made);
  }
  return subs;
}

const insert = (mid) => ({
  t: "pushMutation",
  envelope: { clientID: "author", mid, name: "note.insert", args: { id: 10_000 + mid, body: `m${mid}`, owner: "a" } },
});

/** Sends `push` and resolves with every subscriber's delivery latency (ms). */
function race(state, n, id, send) {
  return new Promise((resolve, reject) => {
    const times = [];
    const timer = setTimeout(() => reject(new Error(`mutation ${id}: ${times.length}/${n} deliveries in 30 s`)), 30_000);
    state.current = {
      id,
      marker: `"m${id}"`,
      t0: performance.now(),
      delivered(ms) {
        times.push(ms);
        if (times.length === n) {
          clearTimeout(timer);
          state.current = null;
          resolve(times);
        }
      },
    };
    send();
  });
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
const fix = (x) => Math.round(x * 100) / 100;

async function measure(label, start, n) {
  const rindled = await FakeRindled.notes();
  const target = await start(rindled);
  const state = { current: null };
  try {
    const subs = await subscribers(target.port, n, state);
    const author = await Client.connect(target.port);
    author.send({ t: "init", clientID: "author" });
    author.send({ t: "subscribe", queryId: 1, leaseToken: await lease("author") });
    await author.subscribed();
    // The author's own frames are not measured: keep its queue from growing.
    author.ws.removeAllListeners("message");
    let mid = 0;
    const { latency, throughput } = plan(n);

    // Warm-up, then sequential latency.
    for (let i = 0; i < 20; i++) {
      mid += 1;
      await race(state, n, mid, () => author.send(insert(mid)));
    }
    const deliveries = [];
    const completions = [];
    for (let i = 0; i < latency; i++) {
      mid += 1;
      const times = await race(state, n, mid, () => author.send(insert(mid)));
      deliveries.push(...times);
      completions.push(Math.max(...times));
      await sleep(1);
    }
    deliveries.sort((a, b) => a - b);
    completions.sort((a, b) => a - b);

    // Throughput: back to back, until every subscriber has the last row.
    const first = mid + 1;
    const last = mid + throughput;
    const t0 = performance.now();
    const done = race(state, n, last, () => {
      for (let m = first; m <= last; m++) author.send(insert(m));
    });
    await done;
    const elapsed = performance.now() - t0;
    mid = last;

    author.close();
    for (const s of subs) s.ws.terminate();
    return {
      target: label,
      subscribers: n,
      latencyMutations: latency,
      deliveryP50Ms: fix(pct(deliveries, 50)),
      deliveryP99Ms: fix(pct(deliveries, 99)),
      fanoutP50Ms: fix(pct(completions, 50)),
      fanoutP99Ms: fix(pct(completions, 99)),
      throughputMutations: throughput,
      mutationsPerSec: Math.round((throughput / elapsed) * 1000),
    };
  } finally {
    await target.stop();
    await rindled.close();
  }
}

const results = [];
for (const n of SUBS) {
  for (const [label, start] of [
    ["smol server", startSmolRoom],
    ["Node shell", startJsShell],
  ]) {
    const r = await measure(label, start, n);
    results.push(r);
    if (!JSON_OUT) {
      console.log(
        `${label.padEnd(12)} subs=${String(n).padStart(4)}  ` +
          `delivery p50 ${r.deliveryP50Ms} ms p99 ${r.deliveryP99Ms} ms  ` +
          `fan-out p50 ${r.fanoutP50Ms} ms p99 ${r.fanoutP99Ms} ms  ` +
          `${r.mutationsPerSec} mutations/s`,
      );
    }
  }
}
if (JSON_OUT) console.log(JSON.stringify(results, null, 2));
process.exit(0);
