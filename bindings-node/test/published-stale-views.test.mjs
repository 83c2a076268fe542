// Evidence for the read-path steps listed as "intended: stale view" in
// published/known-differences.json: at each such `commitAll`, some subscriber of the
// published room holds a view that differs from a fresh subscription to its query over
// the same head, while every view the scenario expects of the native room equals it.
// (The differential's tie-breaker does the same over random sequences.)
import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { fileURLToPath } from "node:url";
import { publishedRoom } from "./published/replay.mjs";
import { judge } from "./published/tiebreak.mjs";

const known = JSON.parse(fs.readFileSync(new URL("./published/known-differences.json", import.meta.url), "utf8"));
const stale = known.filter((d) => d.class.startsWith("intended: stale view"));
const scenarios = fileURLToPath(new URL("../../tests/conformance/", import.meta.url));

test("some steps are listed as stale published views", () => assert.ok(stale.length > 0));

const Room = await publishedRoom();
for (const d of stale) {
  test(`stale published view: ${d.scenario} step ${d.step}`, () => {
    assert.equal(d.call, "commitAll", "only a drain can be judged by the tie-breaker");
    const verdict = judge(Room, `${scenarios}${d.scenario}.json`, d.step);
    assert.ok(verdict.publishedStale, `the published view is not stale here:\n${verdict.detail.join("\n")}`);
    assert.ok(verdict.nativeFresh, `the native view is not fresh here:\n${verdict.detail.join("\n")}`);
  });
}
