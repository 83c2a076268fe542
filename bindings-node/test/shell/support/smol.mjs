// Runs the smol server binary (`rindle-room`, runtime-smol) as a child process for the
// parity test and the benchmark: writes its TOML config, waits for its ports and for
// the incarnation to go live, stops it with SIGTERM.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");

/** The binary: `$RINDLE_ROOM_SMOL_BIN`, else `<target>/<profile>/rindle-room` under
 *  `$CARGO_TARGET_DIR` (or the repo's target/). `undefined` when none exists. */
export function smolBinary(profile = "debug") {
  if (process.env.RINDLE_ROOM_SMOL_BIN) return process.env.RINDLE_ROOM_SMOL_BIN;
  const target = process.env.CARGO_TARGET_DIR || path.join(repo, "target");
  const bin = path.join(target, profile, "rindle-room");
  return fs.existsSync(bin) ? bin : undefined;
}

const toml = (v) => JSON.stringify(v); // TOML basic strings accept JSON string syntax

/** The config of a smol room following `rindled` with the shell tests' settings. */
export function smolConfig({ rindled, authority, docId, kid, key, control, footprint, writes, journalPath }) {
  let text =
    `[server]\nport = 0\n` +
    `[upstream]\nws_url = ${toml(rindled.wsUrl)}\ncontrol_url = ${toml(rindled.controlUrl)}\n` +
    `auth_token = "up-token"\nfootprint_ast = ${toml(JSON.stringify(footprint))}\n` +
    `[downstream]\ndoc_id = ${toml(docId)}\nsweep_interval_ms = 50\n` +
    `[downstream.token_keys]\n${kid} = ${toml(key)}\n` +
    `[control]\nauth_token = ${toml(control)}\n`;
  if (writes) {
    text +=
      `[writes]\nowned_tables = ${JSON.stringify(writes.ownedTables)}\ncrud = true\n` +
      `group_commit_ms = ${writes.groupCommitMs ?? 5}\nflush_debounce_ms = ${writes.flushDebounceMs ?? 20}\n` +
      (journalPath
        ? `[writes.journal]\nkind = "file"\npath = ${toml(journalPath)}\n`
        : `[writes.journal]\nkind = "memory"\n`);
  }
  if (authority) {
    text +=
      `[authority]\napply_url = ${toml(`${authority.base}/apply-row-change-txn`)}\n` +
      `claim_url = ${toml(`${authority.base}/claim-room-epoch`)}\n` +
      `lmids_url = ${toml(`${authority.base}/room-lmids`)}\n`;
  }
  return text;
}

/** Starts the binary with `configText`; resolves `{port, controlPort, stop(), lines}`
 *  once it logged its ports and went live. */
export async function startSmol(bin, configText, { waitMs = 20_000 } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rindle-smol-"));
  const config = path.join(dir, "room.toml");
  fs.writeFileSync(config, configText);
  const child = spawn(bin, ["--config", config], { stdio: ["ignore", "ignore", "pipe"] });
  const lines = [];
  let port = 0;
  let controlPort = 0;
  let buffered = "";
  let onLine = () => {};
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk) => {
    buffered += chunk;
    let nl;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (process.env.RINDLE_TEST_LOG) console.error(`smol: ${line}`);
      lines.push(line);
      onLine(line);
    }
  });
  const exited = new Promise((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", (e) => resolve({ code: `spawn failed: ${e.message}`, signal: null }));
  });
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the smol room did not go live:\n${lines.join("\n")}`)), waitMs);
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`the smol room exited (${code ?? signal}):\n${lines.join("\n")}`));
    });
    onLine = (line) => {
      const ws = /listening on ws:\/\/127\.0\.0\.1:(\d+)/.exec(line);
      if (ws) port = Number(ws[1]);
      const cp = /control plane on http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
      if (cp) controlPort = Number(cp[1]);
      if (line.includes("live (bootId") && port !== 0) {
        clearTimeout(timer);
        resolve();
      }
    };
  });
  onLine = () => {};
  return {
    port,
    controlPort,
    lines,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      const out = await exited;
      clearTimeout(timer);
      fs.rmSync(dir, { recursive: true, force: true });
      return out;
    },
  };
}
