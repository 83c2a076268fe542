"use strict";
// Loads the native addon. Which file:
//   RINDLE_ROOM_NATIVE_PATH=/abs/file.node  that exact file;
//   RINDLE_ROOM_NATIVE_BUILD=debug           rindle_room.debug.node (`npm run build:debug`);
//   otherwise                                rindle_room.node (`npm run build`, release).
// index.js builds the public API on top of it; the tests use it for text-level calls.
const fs = require("node:fs");
const path = require("node:path");

function addonPath() {
  const explicit = process.env.RINDLE_ROOM_NATIVE_PATH;
  if (explicit) return path.resolve(explicit);
  const build = process.env.RINDLE_ROOM_NATIVE_BUILD || "release";
  if (build !== "release" && build !== "debug") {
    throw new Error(
      `RINDLE_ROOM_NATIVE_BUILD must be "release" or "debug", got ${JSON.stringify(build)}`,
    );
  }
  const file = build === "debug" ? "rindle_room.debug.node" : "rindle_room.node";
  return path.join(__dirname, file);
}

const file = addonPath();
if (!fs.existsSync(file)) {
  const debug = process.env.RINDLE_ROOM_NATIVE_BUILD === "debug";
  const err = new Error(
    `@rindle/room-native: the native addon ${file} is missing. ` +
      `Build it first: run \`npm run ${debug ? "build:debug" : "build"}\` in ${__dirname} ` +
      "(it runs cargo and needs no download).",
  );
  err.code = "ERR_RINDLE_ROOM_NATIVE_MISSING";
  throw err;
}

module.exports = require(file);
