// Plays the client lines `rindle-room demo` (and `demo --fleet`) prints, for
// scripts/test-readme.sh:
//
//   node scripts/readme/demo-client.mjs DEMO_OUTPUT_FILE
//
// Finds every `websocat ws://…` line of the demo's output and the JSON frames indented
// under it, opens that websocket (with the `ws` package of bindings-node), sends the
// frames one per message, as a person pasting them into websocat would, and waits until
// the room has answered them: every `subscribe` gets its seq-0 snapshot, every
// `pushMutation` shows up as the client's lmid row and as a live batch of another query.
// Fails (exit 1, printing the frames received) when that does not happen within 15 s.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(new URL("../../bindings-node/package.json", import.meta.url));
const WebSocket = require("ws");

const lines = readFileSync(process.argv[2], "utf8").split("\n");
const sessions = [];
for (let i = 0; i < lines.length; i++) {
  const m = /^\s+websocat (ws:\/\/\S+)\s*$/.exec(lines[i]);
  if (!m) continue;
  const frames = [];
  for (let j = i + 1; j < lines.length && /^\s+\{/.test(lines[j]); j++) {
    frames.push(lines[j].trim());
  }
  sessions.push({ url: m[1], frames });
}
if (sessions.length === 0) {
  console.error("the demo printed no `websocat ws://…` line to try");
  process.exit(1);
}

async function play({ url, frames }) {
  const parsed = frames.map((f) => JSON.parse(f));
  const subscribes = parsed.filter((f) => f.t === "subscribe");
  const pushes = parsed.filter((f) => f.t === "pushMutation");
  if (subscribes.length === 0) throw new Error(`${url}: no subscribe frame to try`);
  const lmidQuery = subscribes.find((f) => f.name === "_rindle/clientLmid")?.queryId;

  const got = [];
  const done = () => {
    const snapshots = subscribes.every((s) =>
      got.some((g) => g.t === "nbatch" && g.queryId === s.queryId && g.batch?.seq === 0),
    );
    const mutations = pushes.every(({ envelope: { clientID, mid } }) => {
      const row = JSON.stringify([clientID, mid]);
      const lmid = got.some((g) => g.t === "nbatch" && JSON.stringify(g).includes(row));
      const live = got.some(
        (g) => g.t === "nbatch" && g.queryId !== lmidQuery && g.batch?.seq > 0,
      );
      return lmid && live;
    });
    return snapshots && mutations;
  };

  const ws = new WebSocket(url);
  try {
    await new Promise((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no complete answer within 15 s")), 15_000);
      ws.on("message", (data) => {
        got.push(JSON.parse(String(data)));
        if (done()) {
          clearTimeout(timer);
          resolve();
        }
      });
      ws.once("close", (code) => {
        clearTimeout(timer);
        reject(new Error(`the room closed the socket (${code})`));
      });
      for (const f of frames) ws.send(f);
    });
  } catch (err) {
    console.error(`${url}: ${err.message}; frames received:`);
    for (const g of got) console.error(`  ${JSON.stringify(g).slice(0, 300)}`);
    throw err;
  } finally {
    ws.terminate();
  }
  console.log(
    `${url}: ${subscribes.length} subscription(s) answered with a snapshot` +
      (pushes.length ? `, ${pushes.length} mutation(s) applied` : "") +
      ` (${got.length} frames)`,
  );
}

try {
  for (const s of sessions) await play(s);
} catch {
  process.exit(1);
}
