"use strict";
// The reference locateRoom (docs/fleet.md, "Placement across boxes") agrees with the
// native core's rendezvous score and room path, spreads docs over boxes, and moves only
// a removed box's docs.

const test = require("node:test");
const assert = require("node:assert/strict");
const { locateRoom, rendezvousScore, roomPath } = require("..");
const native = require("../binding.js");

const DOCS = ["d1", "deck/7", "ü€𝄞", "a b%c", "", "x".repeat(300)];
for (let i = 0; i < 200; i++) DOCS.push(`doc-${i}`);
const BOXES = ["box-a", "box-b", "box-c", "10.0.0.7:4000"];

test("the JS score and path are the native core's", () => {
  for (const doc of DOCS) {
    for (const box of BOXES) {
      assert.equal(rendezvousScore(doc, box).toString(), native.rendezvousScore(doc, box));
    }
    assert.equal(roomPath(doc), native.fleetRoomPath(doc), doc);
  }
  assert.equal(roomPath("deck/7"), "/rooms/deck%2F7");
  assert.equal(roomPath("it's (a)*!"), "/rooms/it%27s%20%28a%29%2A%21");
});

test("docs spread over the boxes, and removing a box moves only its docs", () => {
  const before = new Map(DOCS.map((d) => [d, locateRoom(d, BOXES)]));
  for (const box of BOXES) {
    const n = [...before.values()].filter((b) => b === box).length;
    assert.ok(n > 20, `${box} wins ${n} of ${DOCS.length}`);
  }
  const survivors = BOXES.filter((b) => b !== "box-b");
  for (const doc of DOCS) {
    const now = locateRoom(doc, survivors);
    if (before.get(doc) !== "box-b") assert.equal(now, before.get(doc), doc);
    else assert.notEqual(now, "box-b");
  }
  assert.equal(locateRoom("d", []), null);
  assert.throws(() => locateRoom("d", "box-a"), TypeError);
});
