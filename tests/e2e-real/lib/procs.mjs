// Child processes of the test: each runs in its own process group with stdout and stderr in a
// log file, and every one is killed (group and all) when the test ends, passes or fails, or is
// interrupted. Nothing here is specific to Rindle.
import { spawn } from "node:child_process";
import { createWriteStream, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

const live = new Set();

/** Kills every child's process group at once, synchronously (used on exit and signals). */
export function killAllNow() {
  for (const p of live) {
    try {
      process.kill(-p.pid, "SIGCONT");
      process.kill(-p.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  live.clear();
}
process.on("exit", killAllNow);
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(sig, () => {
    killAllNow();
    process.exit(130);
  });
}

/** A started child: its log file, its exit, helpers to wait on its output. */
export class Proc {
  constructor(name, cmd, args, { cwd, env, logDir }) {
    this.name = name;
    this.logPath = join(logDir, `${name}.log`);
    this.log = createWriteStream(this.logPath, { flags: "a" });
    this.log.write(`$ ${cmd} ${args.join(" ")}\n`);
    this.child = spawn(cmd, args, {
      cwd,
      env: { ...process.env, ...env },
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.pid = this.child.pid;
    this.output = "";
    this.exit = null;
    this.exited = new Promise((resolve) => {
      this.child.on("exit", (code, signal) => {
        this.exit = { code, signal };
        live.delete(this);
        this.log.write(`\n[exited: code ${code} signal ${signal}]\n`);
        resolve(this.exit);
      });
      this.child.on("error", (err) => {
        this.exit = { code: null, signal: null, error: String(err) };
        live.delete(this);
        this.log.write(`\n[spawn error: ${err}]\n`);
        resolve(this.exit);
      });
    });
    for (const s of [this.child.stdout, this.child.stderr]) {
      s.on("data", (d) => {
        this.output += d.toString();
        if (this.output.length > 4_000_000) this.output = this.output.slice(-2_000_000);
        this.log.write(d);
      });
    }
    live.add(this);
  }

  /** Waits until the output matches `re` (a RegExp), returning the match. */
  async waitOutput(re, what, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = this.output.match(re);
      if (m) return m;
      if (this.exit) {
        throw new Error(`${this.name} exited (${JSON.stringify(this.exit)}) before ${what}; log ${this.logPath}`);
      }
      if (Date.now() > deadline) {
        throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${this.name}: ${what}; log ${this.logPath}`);
      }
      await sleep(50);
    }
  }

  /** SIGTERM to the group, then SIGKILL after `graceMs`; resolves once the leader exited. */
  async stop(graceMs = 5000) {
    if (this.exit) return this.exit;
    try {
      process.kill(-this.pid, "SIGCONT");
      process.kill(-this.pid, "SIGTERM");
    } catch {
      // gone
    }
    const t = setTimeout(() => {
      try {
        process.kill(-this.pid, "SIGKILL");
      } catch {
        // gone
      }
    }, graceMs);
    const exit = await this.exited;
    clearTimeout(t);
    // The leader is gone; anything left in its group goes too.
    try {
      process.kill(-this.pid, "SIGKILL");
    } catch {
      // nothing left
    }
    await new Promise((r) => this.log.end(r));
    return exit;
  }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` (sync or async, returning a truthy value when done) every 50 ms. On timeout,
 *  throws naming `what` and the last `detail()`. */
export async function waitFor(what, probe, { timeoutMs = 20_000, detail } = {}) {
  const deadline = Date.now() + timeoutMs;
  let lastErr;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
      lastErr = undefined;
    } catch (e) {
      lastErr = e;
    }
    if (Date.now() > deadline) {
      let extra = "";
      try {
        extra = detail ? `; last seen: ${detail()}` : "";
      } catch (e) {
        extra = `; (detail failed: ${e})`;
      }
      const err = lastErr ? `; last error: ${lastErr.message ?? lastErr}` : "";
      throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}${extra}${err}`);
    }
    await sleep(50);
  }
}

/** The pids whose parent is `ppid` (from /proc), with their command names. */
export function childrenOf(ppid) {
  const out = [];
  for (const ent of readdirSync("/proc")) {
    if (!/^\d+$/.test(ent)) continue;
    try {
      const stat = readFileSync(`/proc/${ent}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      const comm = stat.slice(stat.indexOf("(") + 1, close);
      const parent = Number(stat.slice(close + 2).split(" ")[1]);
      if (parent === ppid) out.push({ pid: Number(ent), comm });
    } catch {
      // raced with an exit
    }
  }
  return out;
}
