// End-to-end test of rindle-room against the published Rindle 0.9.0 stack.
//
//   node run.mjs [--server fleet,single,shell] [--bail] [--keep]
//
// For each room (default: all three, one after the other, each on a fresh stack):
//   1. `rindle up --migrate` on a temporary project (issue + comment tables, seed rows);
//   2. @rindle/api-server hosted by lib/api-server.mjs (realtime on, locateRoom -> our room);
//   3. the room: fleet (booted by the real /room-boot, ack = "flushed", upstream rindled itself),
//      single (`rindle-room --config room.toml`) or shell (the Node createRoomShell);
//   4. the scenario of lib/scenario.mjs with two @rindle/optimistic clients;
//   5. teardown, checking that no process of the test is left.
// Environment: RINDLE_ROOM_BIN (default: <target>/debug/rindle-room), E2E_UPSTREAM=edge points the
// fleet's upstream at the dev edge instead of rindled (a diagnostic switch only).
// Exit code 0 when every step passed; the logs of a failed room are kept and their paths printed.
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ROOM_DOC } from "./lib/app.mjs";
import { Proc, killAllNow } from "./lib/procs.mjs";
import { roomReady, startRoom } from "./lib/rooms.mjs";
import { steps as scenario } from "./lib/scenario.mjs";
import { Stack, freePorts } from "./lib/stack.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..", "..");

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : dflt;
};
const kinds = opt("--server", "fleet,single,shell").split(",").filter(Boolean);
const bail = flag("--bail");
const keep = flag("--keep");
const bin =
  process.env.RINDLE_ROOM_BIN ??
  join(process.env.CARGO_TARGET_DIR ? resolve(process.env.CARGO_TARGET_DIR) : join(repo, "target"), "debug", "rindle-room");

const say = (line) => process.stdout.write(`${line}\n`);
const STEP_LIMIT_MS = 120_000; // a step that hangs fails after this; its own waits are shorter

// A client library's stray rejection is reported, not fatal: the steps' assertions decide.
process.on("unhandledRejection", (e) => process.stderr.write(`unhandled rejection: ${e?.stack ?? e}\n`));

/** The process groups of the test that still have a member (after teardown: none). */
function strays(pgids) {
  const left = [];
  for (const ent of readdirSync("/proc")) {
    if (!/^\d+$/.test(ent)) continue;
    try {
      const stat = readFileSync(`/proc/${ent}/stat`, "utf8");
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const pgid = Number(rest[2]);
      if (pgids.has(pgid) && rest[0] !== "Z") left.push(`${ent}(${stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"))})`);
    } catch {
      // gone
    }
  }
  return left;
}

async function runKind(kind, root) {
  const dir = mkdtempSync(join(root, `${kind}-`));
  const logDir = join(dir, "logs");
  mkdirSync(logDir);
  const clientLog = join(logDir, "clients.log");
  const env = {
    kind,
    dir,
    shellSecret: `e2e-shell-secret-${process.pid}`,
    tokenKey: { kid: "k1", secret: `e2e-room-token-key-${process.pid}` },
    log: (line) => appendFileSync(clientLog, `${new Date().toISOString()} ${line}\n`),
  };
  const results = [];
  const passed = new Set();
  const procs = [];
  const step = async (id, name, needs, fn) => {
    const missing = needs.filter((n) => !passed.has(n));
    if (missing.length > 0) {
      results.push({ id, name, status: "SKIP", detail: `needs step ${missing.join(", ")}` });
      say(`  [${kind}] ${id} SKIP  ${name} (needs step ${missing.join(", ")})`);
      return;
    }
    const t0 = Date.now();
    let timer;
    try {
      const limit = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the step did not finish within ${STEP_LIMIT_MS / 1000}s`)), STEP_LIMIT_MS);
      });
      await Promise.race([fn(), limit]);
      passed.add(id);
      results.push({ id, name, status: "PASS", ms: Date.now() - t0 });
      say(`  [${kind}] ${id} PASS  ${name} (${((Date.now() - t0) / 1000).toFixed(1)}s)`);
    } catch (e) {
      results.push({ id, name, status: "FAIL", detail: e.message, ms: Date.now() - t0 });
      say(`  [${kind}] ${id} FAIL  ${name} (${((Date.now() - t0) / 1000).toFixed(1)}s)\n        ${e.message.replace(/\n/g, "\n        ")}`);
      if (bail) throw e;
    } finally {
      clearTimeout(timer);
    }
  };

  try {
    await step("1", "rindle up: write master, rindled, dev edge; migration and seed rows", [], async () => {
      env.stack = await Stack.start(join(dir, "project"), logDir, (p) => procs.push(p));
      const db = await env.stack.issues();
      if (!db["seed-1"] || !db["seed-2"]) throw new Error(`seed rows missing from the database: ${JSON.stringify(db)}`);
    });

    await step("2", "@rindle/api-server (realtime, locateRoom -> our room) on node:http", ["1"], async () => {
      const { stack } = env;
      // Taken together: ports probed one after the other may repeat.
      const [roomPort, controlPort, apiPort] = await freePorts(3);
      env.roomPort = roomPort;
      env.controlPort = controlPort;
      env.apiUrl = `http://127.0.0.1:${apiPort}`;
      const upstream = process.env.E2E_UPSTREAM === "edge" ? stack.edgeWs : stack.rindledWs;
      const cfg = {
        port: apiPort,
        writeUrl: stack.replicatorHttp,
        readUrl: stack.edgeHttp,
        databaseToken: stack.databaseToken,
        shellSecret: env.shellSecret,
        roomTokenKey: env.tokenKey,
        roomWsEndpoint: `ws://127.0.0.1:${env.roomPort}`,
        fleet: kind === "fleet",
        upstreamWsEndpoint: upstream,
      };
      const cfgPath = join(dir, "api-server.json");
      writeJson(cfgPath, cfg);
      env.api = new Proc("api-server", process.execPath, [join(here, "lib", "api-server.mjs"), cfgPath], { cwd: here, env: {}, logDir });
      procs.push(env.api);
      await env.api.waitOutput(/api-server listening on \d+/, "the API server to listen", 20_000);
      // A lease for the labelled query names our room.
      const r = await fetch(`${env.apiUrl}/api/rindle/query`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-user": "probe" },
        body: JSON.stringify({ name: "issues", args: null, clientId: "probe" }),
      });
      const lease = await r.json();
      if (r.status !== 200 || lease.realtime?.doc !== ROOM_DOC) {
        throw new Error(`query lease without the realtime block for ${ROOM_DOC}: ${r.status} ${JSON.stringify(lease)}`);
      }
    });

    await step("3", `the room (${kind}) starts against the real stack`, ["2"], async () => {
      env.room = await startRoom(kind, {
        dir,
        logDir,
        bin,
        roomPort: env.roomPort,
        controlPort: env.controlPort,
        apiUrl: env.apiUrl,
        shellSecret: env.shellSecret,
        tokenKey: env.tokenKey,
        stack: env.stack,
        onProc: (p) => procs.push(p),
      });
      await roomReady(env.room);
    });

    for (const s of scenario) {
      await step(s.id, s.name, s.needs, () => s.run(env));
    }
  } catch {
    // --bail: stop at the first failure; teardown below still runs
  } finally {
    for (const c of [env.A, env.B]) c?.close();
    const pgids = new Set(procs.map((p) => p.pid));
    await step("5", "teardown: every process stopped, none left behind", [], async () => {
      env.stack?.continueRindled();
      for (const p of [...procs].reverse()) await p.stop(15_000);
      const left = strays(pgids);
      if (left.length > 0) throw new Error(`processes left behind: ${left.join(", ")}`);
    });
  }
  const failed = results.some((r) => r.status !== "PASS");
  return { kind, dir, logDir, results, failed };
}

function writeJson(path, value) {
  appendFileSync(path, JSON.stringify(value, null, 2), { flag: "w" });
}

function tail(path, n) {
  try {
    return readFileSync(path, "utf8").split("\n").slice(-n).join("\n");
  } catch {
    return "(no log)";
  }
}

const started = Date.now();
const root = mkdtempSync(join(process.env.E2E_TMPDIR ?? tmpdir(), "rindle-room-e2e-"));
say(`rindle-room end-to-end against the real Rindle stack: ${kinds.join(", ")} (work dir ${root})`);
say(`  room binary: ${bin}`);
const runs = [];
for (const kind of kinds) {
  say(`\n== ${kind}`);
  runs.push(await runKind(kind, root));
  if (bail && runs.at(-1).failed) break;
}
killAllNow();

say("\n== summary");
for (const r of runs) {
  const counts = { PASS: 0, FAIL: 0, SKIP: 0 };
  for (const x of r.results) counts[x.status]++;
  say(`  ${r.kind}: ${counts.PASS} passed, ${counts.FAIL} failed, ${counts.SKIP} skipped`);
  for (const x of r.results.filter((x) => x.status !== "PASS")) say(`    ${x.id} ${x.status}: ${x.name}`);
}
const anyFailed = runs.some((r) => r.failed);
if (anyFailed) {
  for (const r of runs.filter((r) => r.failed)) {
    say(`\n== logs of ${r.kind} (kept in ${r.logDir})`);
    for (const f of readdirSync(r.logDir)) {
      say(`--- ${f} (last 25 lines)\n${tail(join(r.logDir, f), 25)}`);
    }
  }
} else if (!keep) {
  rmSync(root, { recursive: true, force: true });
}
say(`\n${anyFailed ? "FAILED" : "PASSED"} in ${((Date.now() - started) / 1000).toFixed(0)}s`);
process.exit(anyFailed ? 1 : 0);
