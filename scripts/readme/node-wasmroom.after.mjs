
// ---- appended by scripts/test-readme.sh: the inputs, and what the snippet must have done
import { helloFrame, snapshotFrame, liveFrame, ast } from "./fixtures.mjs";

if (hello.tables[0].name !== "note") throw new Error(`subscribe's hello: ${JSON.stringify(hello)}`);
if (JSON.stringify(snapshot.ops) !== JSON.stringify(snapshotFrame.batch.ops)) {
  throw new Error(`subscribe's snapshot: ${JSON.stringify(snapshot)}`);
}
try {
  room.cv();
  throw new Error("the room is not freed");
} catch (err) {
  if (Object(err).code !== "ROOM_FREED") throw err;
}
console.log(`ran: opened, applied, subscribed (${snapshot.ops.length} row), drained, freed`);
