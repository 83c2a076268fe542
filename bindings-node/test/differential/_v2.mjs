import { Rooms } from "./harness.mjs";
import { generateInto } from "./gen.mjs";
import { Rng } from "./prng.mjs";
const rooms = await Rooms.create();
const master = new Rng(77);
const shapes = new Map();
for (let k = 0; k < 600; k++) {
  const seed = master.u32();
  const runner = await rooms.runner({ mode: "ci" });
  generateInto(runner, new Rng(seed), 300, {});
  await rooms.after(runner);
  for (const d of runner.diffs) {
    if (d.class !== "v2-gate") continue;
    const w = JSON.parse(d.w), n = JSON.parse(d.n);
    const key = `${w.deopt ? "W:" + w.deopt.reason + (w.deopt.op ? "/" + w.deopt.op : "") : "W:commit"} ${n.deopt ? "N:" + n.deopt.reason + (n.deopt.op ? "/" + n.deopt.op : "") : "N:commit"} ${w.deopt && n.deopt ? (w.deopt.table === n.deopt.table ? "sameTable" : "otherTable") + (JSON.stringify(w.deopt.pk) === JSON.stringify(n.deopt.pk) ? "/samePk" : "/otherPk") : ""}`;
    const e = shapes.get(key) ?? { n: 0, seed, calls: runner.calls.slice(0, d.index + 1) };
    e.n++;
    if (runner.calls.length < e.calls.length) { e.calls = runner.calls.slice(0, d.index + 1); e.seed = seed; }
    shapes.set(key, e);
  }
}
for (const [k, e] of [...shapes].sort((a, b) => b[1].n - a[1].n)) console.log(e.n, k, "seed", e.seed);
import { writeFileSync } from "node:fs";
let i = 0;
for (const [k, e] of shapes) writeFileSync(`/tmp/dt/v2-${++i}.json`, JSON.stringify({ class: "v2-gate", shape: k, calls: e.calls }));
