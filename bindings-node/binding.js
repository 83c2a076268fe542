"use strict";
// Loads the native addon; which file is loader.js's rule:
//   RINDLE_ROOM_NATIVE_PATH=/abs/file.node  that exact file;
//   RINDLE_ROOM_NATIVE_BUILD=debug           rindle_room.debug.node (`npm run build:debug`);
//   otherwise                                the prebuilt platform package
//                                            (@rindle/room-native-linux-x64-gnu or
//                                            -linux-arm64-gnu), else
//                                            rindle_room.node (built from source at
//                                            install, or `npm run build` in a checkout).
// index.js builds the public API on top of it; the tests use it for text-level calls.
module.exports = require("./loader.js").loadAddon().addon;
