// The real Rindle stack for one run: a temporary project (rindle.ncl with its own port block, one
// migration), `rindle up --migrate` supervising the write master (rindle-replicator), one follower
// (rindled) and the dev edge, seed rows written with `rindle sql`, and SIGSTOP / SIGCONT of rindled.
import { execFile } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { MIGRATION_SQL, SEED_SQL } from "./app.mjs";
import { Proc, childrenOf, waitFor } from "./procs.mjs";

const here = dirname(fileURLToPath(import.meta.url));
export const RINDLE_BIN = join(here, "..", "node_modules", "@rindle", "cli-linux-x64-gnu", "bin");

/** Whether `port` can be bound on 127.0.0.1 right now. */
export function portFree(port) {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });
}

/** `n` distinct ports the kernel hands out now: every probe socket stays open until all
 *  are taken, so no two of them can be the same port. */
export async function freePorts(n) {
  const servers = [];
  try {
    for (let i = 0; i < n; i++) {
      const s = createServer();
      await new Promise((resolve, reject) => {
        s.once("error", reject);
        s.listen(0, "127.0.0.1", resolve);
      });
      servers.push(s);
    }
    return servers.map((s) => s.address().port);
  } finally {
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(() => resolve()))));
  }
}

/** A port block for the project (rindle uses base+0, +1, +10, +11 and +50), below the kernel's
 *  ephemeral range so no other socket of the test lands in it. */
async function freePortBase() {
  for (let i = 0; i < 200; i++) {
    const base = 20_000 + 100 * Math.floor(Math.random() * 100);
    const all = await Promise.all([0, 1, 10, 11, 50].map((o) => portFree(base + o)));
    if (all.every(Boolean)) return base;
  }
  throw new Error("no free port block for the rindle project");
}

export class Stack {
  /** Writes the project under `dir` and starts `rindle up --migrate` (handed to `onProc` at
   *  once); resolves once the fleet is up, the migration applied and the seed rows written. */
  static async start(dir, logDir, onProc) {
    const s = new Stack();
    s.dir = dir;
    s.home = join(dir, "home");
    mkdirSync(join(dir, "migrations"), { recursive: true });
    mkdirSync(s.home, { recursive: true });
    s.base = await freePortBase();
    writeFileSync(
      join(dir, "rindle.ncl"),
      `{\n  profile = "replicated",\n  app = "room-e2e",\n  followers = 1,\n  portBase = ${s.base},\n}\n`,
    );
    writeFileSync(join(dir, "migrations", "0001_init.sql"), MIGRATION_SQL);
    s.env = { HOME: s.home, PATH: `${RINDLE_BIN}:${process.env.PATH}`, NO_COLOR: "1" };
    s.rindledHttp = `http://127.0.0.1:${s.base}`;
    s.rindledWs = `ws://127.0.0.1:${s.base + 1}`;
    s.replicatorHttp = `http://127.0.0.1:${s.base + 11}`;
    s.edgeHttp = `http://127.0.0.1:${s.base + 50}`;
    s.edgeWs = `ws://127.0.0.1:${s.base + 50}`;
    s.databaseToken = "rindle-dev-sql-token"; // what `rindle render` writes for a local fleet
    s.up = new Proc("rindle-up", join(RINDLE_BIN, "rindle"), ["up", "--migrate"], {
      cwd: dir,
      env: s.env,
      logDir,
    });
    onProc(s.up);
    await s.up.waitOutput(/\[migrate\] done/, "the migration applied", 60_000);
    await s.sql(SEED_SQL);
    // The migration goes through the write master; the follower the dev edge routes
    // reads to may still be starting (slow on a loaded machine): wait for it too.
    await s.healthy();
    return s;
  }

  /** Runs `rindle sql --local --json <statement>` in the project; resolves to the parsed reply. */
  sqlRaw(statement) {
    return new Promise((resolve, reject) => {
      execFile(
        join(RINDLE_BIN, "rindle"),
        ["sql", "--local", "--json", statement],
        { cwd: this.dir, env: { ...process.env, ...this.env }, timeout: 20_000 },
        (err, stdout, stderr) => {
          if (err) {
            reject(new Error(`rindle sql ${JSON.stringify(statement)} failed: ${err.message}\n${stderr}${stdout}`));
            return;
          }
          try {
            resolve(JSON.parse(stdout));
          } catch {
            reject(new Error(`rindle sql ${JSON.stringify(statement)}: not JSON: ${stdout}`));
          }
        },
      );
    });
  }

  /** Runs a statement; for a SELECT resolves to its rows as objects. */
  async sql(statement) {
    const out = await this.sqlRaw(statement);
    const r = out.result ?? {};
    const cols = (r.columns ?? []).map((c) => c.name);
    return (r.rows ?? []).map((row) => Object.fromEntries(cols.map((c, i) => [c, row[i]])));
  }

  /** The issue rows of the database, by id. */
  async issues() {
    const rows = await this.sql("SELECT id, title, status FROM issue ORDER BY id");
    return Object.fromEntries(rows.map((r) => [r.id, r]));
  }

  /** The pid of the follower rindled (a child of the `rindle up` supervisor). */
  rindledPid() {
    const kids = childrenOf(this.up.pid).filter((k) => k.comm === "rindled");
    if (kids.length !== 1) throw new Error(`expected one rindled under rindle up, found ${JSON.stringify(kids)}`);
    return kids[0].pid;
  }

  stopRindled() {
    this.stoppedPid = this.rindledPid();
    process.kill(this.stoppedPid, "SIGSTOP");
  }

  continueRindled() {
    if (this.stoppedPid) process.kill(this.stoppedPid, "SIGCONT");
    this.stoppedPid = undefined;
  }

  /** Waits until the dev edge answers again (used after SIGCONT). */
  async healthy() {
    await waitFor("rindled to answer on its control plane", async () => {
      const r = await fetch(`${this.rindledHttp}/version`).catch(() => undefined);
      return r !== undefined;
    });
  }

  async stop() {
    this.continueRindled();
    return this.up.stop(10_000);
  }
}
