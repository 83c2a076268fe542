// The training run of the profile-guided build (scripts/pgo-train.mjs) keeps exercising
// the room: at a tiny scale it runs through, and a room that stops answering (no frames
// after upstream batches) makes it fail instead of training the compiler on nothing.
import test from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";

import { train } from "../scripts/pgo-train.mjs";

const require = createRequire(import.meta.url);
const { WasmRoom } = require("../index.js");

test("the training run drives a room through every plane at a tiny scale", () => {
  assert.equal(train(WasmRoom, 0.01), 3);
});

test("a training run whose batches reach no query fails", () => {
  const silent = {
    open(hello, now) {
      const room = WasmRoom.open(hello, now);
      return new Proxy(room, {
        get(target, key) {
          const f = target[key];
          if (key === "commitAll") return () => (f.call(target), "[]");
          return typeof f === "function" ? f.bind(target) : f;
        },
      });
    },
  };
  assert.throws(() => train(silent, 0.01), /upstream batches reached a query/);
});
