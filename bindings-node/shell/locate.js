"use strict";
// The reference `locateRoom` for an API server placing rooms on a fleet of
// rindle-room boxes (docs/fleet.md, "Placement across boxes"): rendezvous
// (highest-random-weight) hashing. For each live box id, the score is the first 8
// bytes of SHA-256(doc + "\n" + boxId) read as a big-endian unsigned 64-bit integer;
// the highest score wins (a tie, which needs a 64-bit SHA-256 collision, goes to the
// smaller id). Adding or removing a box moves only the docs whose winner changed.
//
// Pure JavaScript on node:crypto — an API server needs no native addon for it. The
// native core computes the same score (`rendezvousScore`); the tests check they agree.

const { createHash } = require("node:crypto");

/** The score of `boxId` for `doc`, as a BigInt. */
function rendezvousScore(doc, boxId) {
  if (typeof doc !== "string" || typeof boxId !== "string") {
    throw new TypeError("rendezvousScore(doc, boxId) takes two strings");
  }
  const digest = createHash("sha256").update(doc + "\n" + boxId, "utf8").digest();
  return digest.readBigUInt64BE(0);
}

/**
 * The box that should serve `doc` among `liveBoxes` (box ids, e.g. those whose
 * `/healthz` answers 200), or `null` when none is live. Map the winner to its
 * websocket endpoint yourself: `ws://<box>/rooms/${encodeURIComponent(doc)}`.
 */
function locateRoom(doc, liveBoxes) {
  if (!Array.isArray(liveBoxes)) {
    throw new TypeError("locateRoom(doc, liveBoxes) takes an array of box ids");
  }
  let best = null;
  let bestScore = -1n;
  for (const box of liveBoxes) {
    const score = rendezvousScore(doc, box);
    if (score > bestScore || (score === bestScore && box < best)) {
      best = box;
      bestScore = score;
    }
  }
  return best;
}

/** The websocket path of `doc`'s room on a box (`/rooms/<doc, percent-encoded>`). */
function roomPath(doc) {
  return "/rooms/" + encodeURIComponent(doc).replace(/[!'()*]/g, (c) =>
    "%" + c.charCodeAt(0).toString(16).toUpperCase(),
  );
}

module.exports = { locateRoom, rendezvousScore, roomPath };
