"use strict";
// Every tests/conformance scenario, replayed through the native WasmRoom and the token
// helpers, must produce the exact text the scenario gives (byte for byte), or an error
// containing the scenario's text. The same files drive the Rust core and the C ABI.
const test = require("node:test");
const assert = require("node:assert/strict");
const path = require("node:path");

const { listScenarios, replay } = require("./support/replay.js");

const files = listScenarios();

test("the conformance directory holds the scenarios", () => {
  assert.ok(files.length >= 15, `only ${files.length} scenarios found`);
});

for (const file of files) {
  test(`conformance: ${path.basename(file, ".json")}`, async () => {
    const mismatches = await replay(file);
    assert.deepEqual(mismatches, [], mismatches.join("\n"));
  });
}
