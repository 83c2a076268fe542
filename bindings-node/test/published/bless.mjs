// Maintenance tool: replays each tests/conformance scenario on the native room and on the
// published wasm room side by side. Where the two agree (JSON after JSON.parse, the
// opaque `queryKey` aside) and the scenario's expectation is stale, `--write` rewrites
// that step's `expect` to the native output text; where they disagree, the step is
// printed for a person to decide. `node test/published/bless.mjs [--write] [name…]`.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { bySubscriber, publishedRoom, same } from "./replay.mjs";

const require = createRequire(import.meta.url);
const { listScenarios, PARAMS } = require("../support/replay.js");
const native = require("../../index.js");

const write = process.argv.includes("--write");
const only = new Set(process.argv.slice(2).filter((a) => !a.startsWith("--")));
const TOKEN_CALLS = new Set(["mintRoomToken", "verifyRoomToken", "scopeSpecsHash"]);

function isRawText(v) {
  return typeof v === "object" && v !== null && !Array.isArray(v) && Object.keys(v).length === 1 && typeof v.$text === "string";
}
function buildArgs(call, args) {
  return args.map((a, i) => {
    const kind = PARAMS[call][i];
    if (kind === "json" || (kind === "optjson" && a !== undefined)) return isRawText(a) ? a.$text : JSON.stringify(a);
    return a;
  });
}
function render(out) {
  if (out === undefined) return "null";
  if (typeof out === "string") return out;
  return JSON.stringify(out);
}
function parsed(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
function dropQueryKey(v) {
  if (Array.isArray(v)) return v.map(dropQueryKey);
  if (v && typeof v === "object") {
    const o = {};
    for (const [k, x] of Object.entries(v)) if (k !== "queryKey") o[k] = dropQueryKey(x);
    return o;
  }
  return v;
}
function run(room, state, call, args) {
  try {
    const a = buildArgs(call, args);
    if (call === "open") {
      const r = room.open(...a);
      state.room?.free();
      state.room = r;
      return { text: "null" };
    }
    if (!state.room) throw new Error(`${call}: no room is open`);
    return { text: render(state.room[call](...a)) };
  } catch (e) {
    return { error: String(e?.message ?? e) };
  }
}

const Wasm = await publishedRoom();
let open = 0;
const differing = [];
for (const file of listScenarios()) {
  const name = path.basename(file, ".json");
  if (only.size && !only.has(name)) continue;
  const scenario = JSON.parse(fs.readFileSync(file, "utf8"));
  const n = { room: null };
  const w = { room: null };
  let changed = false;
  for (const [i, step] of scenario.steps.entries()) {
    if (TOKEN_CALLS.has(step.call)) continue;
    const a = run(native.WasmRoom, n, step.call, step.args ?? []);
    const b = run(Wasm, w, step.call, step.args ?? []);
    const agree =
      (a.error !== undefined && b.error !== undefined) ||
      (a.text !== undefined && b.text !== undefined && same(...[a, b].map((x) => bySubscriber(step.call, dropQueryKey(parsed(x.text))))));
    const expected = "expect" in step ? step.expect : undefined;
    if (agree) {
      if (a.text !== undefined && expected !== a.text) {
        console.log(`${name} step ${i} (${step.call}): ${expected === undefined ? "error" : "stale"} -> ${a.text.slice(0, 160)}`);
        if (write) {
          delete step.error;
          step.expect = a.text;
          changed = true;
        }
      } else if (a.error !== undefined && expected !== undefined) {
        console.log(`${name} step ${i} (${step.call}): now an error in both: ${a.error}`);
      }
      continue;
    }
    open++;
    differing.push({ scenario: name, step: i, call: step.call });
    if (write && a.text !== undefined && expected !== a.text) {
      delete step.error;
      step.expect = a.text;
      changed = true;
    }
    console.log(`DIFFERS ${name} step ${i} (${step.call})`);
    console.log(`  native: ${a.error !== undefined ? "THROW " + a.error : a.text}`);
    console.log(`  wasm:   ${b.error !== undefined ? "THROW " + b.error : b.text}`);
  }
  n.room?.free();
  w.room?.free();
  if (changed) {
    const text = fs.readFileSync(file, "utf8");
    const head = text.slice(0, text.indexOf('  "steps": ['));
    // Keep the file's layout: one step per line, `", "` and `": "` separators.
    const fmt = (s) => "    " + pretty(s);
    fs.writeFileSync(file, head + '  "steps": [\n' + scenario.steps.map(fmt).join(",\n") + "\n  ]\n}\n");
  }
}
console.log(`${open} step(s) where native and published differ`);
if (write && only.size === 0) {
  // Keep the reasons already written down; new steps get an empty class to fill in.
  const file = new URL("./known-differences.json", import.meta.url);
  const old = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : [];
  const reason = new Map(old.map((d) => [`${d.scenario}#${d.step}`, d.class]));
  const out = differing.map((d) => ({ ...d, class: reason.get(`${d.scenario}#${d.step}`) ?? "" }));
  fs.writeFileSync(file, "[\n" + out.map((d) => "  " + JSON.stringify(d)).join(",\n") + "\n]\n");
}

/** JSON with `, ` and `: ` separators (Python's json.dumps style these files use). */
function pretty(v) {
  if (Array.isArray(v)) return "[" + v.map(pretty).join(", ") + "]";
  if (v && typeof v === "object") return "{" + Object.entries(v).map(([k, x]) => JSON.stringify(k) + ": " + pretty(x)).join(", ") + "}";
  return JSON.stringify(v);
}
