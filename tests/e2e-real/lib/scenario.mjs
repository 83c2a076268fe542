// The scenario every room runs, step by step. Each step waits for what it needs with generous
// timeouts and fails with a message that names what it expected and what it saw.
import { mintRoomFlushCredential } from "@rindle/api-server";
import { ROOM_DOC } from "./app.mjs";
import { Client } from "./clients.mjs";
import { SILENCE_TIMEOUT_MS, control } from "./rooms.mjs";
import { sleep, waitFor } from "./procs.mjs";

const T = 20_000; // how long any one expectation may take to come true

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

const shows = (c, id, title) => c.rows()[id] !== undefined && (title === undefined || c.rows()[id].title === title);
const lacks = (c, id) => c.rows()[id] === undefined;
const settled = (...cs) => cs.every((c) => c.pending().length === 0);

/** Both clients show `want` (id -> title, or null for "absent") with nothing pending. */
async function bothShow(env, want, what) {
  const { A, B } = env;
  await waitFor(
    what,
    () =>
      [A, B].every((c) => Object.entries(want).every(([id, t]) => (t === null ? lacks(c, id) : shows(c, id, t)))) &&
      settled(A, B),
    { timeoutMs: T, detail: () => `alice ${A.describe()}; bob ${B.describe()}` },
  );
}

/** The database (read with `rindle sql`) holds `want` (id -> title, or null for "absent"). */
async function dbHas(env, want, what) {
  let last = {};
  await waitFor(
    what,
    async () => {
      last = await env.stack.issues();
      return Object.entries(want).every(([id, t]) => (t === null ? !last[id] : last[id]?.title === t));
    },
    { timeoutMs: T, detail: () => JSON.stringify(Object.values(last).map((r) => `${r.id}:${r.title}`)) },
  );
}

export const steps = [
  {
    id: "4a",
    name: "two @rindle/optimistic clients subscribe through the API server and are served by the room",
    needs: ["3"],
    async run(env) {
      env.A = await Client.create("alice", env.apiUrl, env.log);
      env.B = await Client.create("bob", env.apiUrl, env.log);
      const { A, B } = env;
      await waitFor(
        "both clients to show the seed rows, server-authoritative",
        () => [A, B].every((c) => c.view.resultType === "complete" && shows(c, "seed-1") && shows(c, "seed-2")),
        { timeoutMs: 30_000, detail: () => `alice ${A.describe()}; bob ${B.describe()}` },
      );
      assert(A.roomAttached() && B.roomAttached(), `the lease carried no realtime block: the query is not room-served (alice ${JSON.stringify(A.app.__realtimeInspect())})`);
      if (env.room.fleet) {
        const rooms = await control(env.room, "/rooms");
        const mine = rooms.rooms.find((r) => r.doc === ROOM_DOC);
        assert(mine?.state === "live", `fleet GET /rooms does not list ${ROOM_DOC} as live: ${JSON.stringify(rooms)}`);
      }
    },
  },
  {
    id: "4b",
    name: "each client mutates and sees the other's write confirmed",
    needs: ["4a"],
    async run(env) {
      const { A, B } = env;
      A.app.mutate.createIssue({ id: "a-1", title: "from alice" });
      B.app.mutate.createIssue({ id: "b-1", title: "from bob" });
      await bothShow(env, { "a-1": "from alice", "b-1": "from bob" }, "both writes confirmed at both clients");
      await dbHas(env, { "a-1": "from alice", "b-1": "from bob" }, "both writes in the database");
    },
  },
  {
    id: "4c",
    name: "an external write (rindle sql) reaches both clients",
    needs: ["4a"],
    async run(env) {
      await env.stack.sql("INSERT INTO issue (id, title, status) VALUES ('ext-1', 'written with rindle sql', 'open')");
      await env.stack.sql("UPDATE issue SET title = 'seed-1 edited with rindle sql' WHERE id = 'seed-1'");
      await bothShow(
        env,
        { "ext-1": "written with rindle sql", "seed-1": "seed-1 edited with rindle sql" },
        "the external insert and update at both clients",
      );
    },
  },
  {
    id: "4d",
    name: "a CAS conflict (rindled stopped, external write, room write, rindled continued) converges",
    needs: ["4a"],
    async run(env) {
      const { A, B, stack, api } = env;
      const external = "seed-2 edited externally while rindled was stopped";
      const mine = "seed-2 edited in the room while rindled was stopped";
      const conflictsBefore = (api.output.match(/apply-row-change-txn -> 409 .*"conflict"/g) ?? []).length;
      stack.stopRindled();
      try {
        await stack.sql(`UPDATE issue SET title = '${external}' WHERE id = 'seed-2'`);
        A.app.mutate.setTitle({ id: "seed-2", title: mine });
        await waitFor(
          "the room's flush to be refused with 409 conflict by the authority",
          () => (api.output.match(/apply-row-change-txn -> 409 .*"conflict"/g) ?? []).length > conflictsBefore,
          { timeoutMs: T, detail: () => api.output.split("\n").filter((l) => /apply-row-change/.test(l)).slice(-3).join(" | ") },
        );
      } finally {
        stack.continueRindled();
      }
      let db = {};
      await waitFor(
        "clients and database to agree on seed-2 with nothing pending",
        async () => {
          db = await stack.issues();
          const t = db["seed-2"]?.title;
          return t !== undefined && shows(A, "seed-2", t) && shows(B, "seed-2", t) && settled(A, B);
        },
        { timeoutMs: 30_000, detail: () => `db seed-2 ${JSON.stringify(db["seed-2"])}; alice ${A.describe()}; bob ${B.describe()}` },
      );
      assert(
        db["seed-2"].title === external,
        `converged on ${JSON.stringify(db["seed-2"].title)}, not on the authority's value ${JSON.stringify(external)}`,
      );
    },
  },
  {
    id: "4e",
    name: "a write the room's mutator rejects, then normal writes that all reach the database",
    needs: ["4a"],
    async run(env) {
      const { A, B } = env;
      A.app.mutate.createIssue({ id: "r-1", title: "spam" });
      await waitFor("alice to be told her `spam` write was rejected", () => A.rejections.some((r) => r.args?.id === "r-1"), {
        timeoutMs: T,
        detail: () => `rejections ${JSON.stringify(A.rejections)}; alice ${A.describe()}`,
      });
      const why = A.rejections.find((r) => r.args?.id === "r-1").reason;
      assert(/spam is not allowed/.test(why), `rejection reason ${JSON.stringify(why)} is not the mutator's`);
      A.app.mutate.createIssue({ id: "a-2", title: "second from alice" });
      B.app.mutate.setTitle({ id: "a-1", title: "a-1 edited by bob" });
      A.app.mutate.createIssue({ id: "a-3", title: "third from alice" });
      const want = { "r-1": null, "a-2": "second from alice", "a-3": "third from alice", "a-1": "a-1 edited by bob" };
      await bothShow(env, want, "the writes after the rejection confirmed at both clients, the rejected one gone");
      await dbHas(env, want, "every write after the rejection in the database, the rejected one not");
      // A quiet spell longer than the silence timeout (rooms.mjs, SILENCE_TIMEOUT_MS): the
      // room pings rindled and both clients, and takes a link that does not answer as dead.
      // Real rindled and the real clients answer, so no link is ever taken as silent.
      await sleep(SILENCE_TIMEOUT_MS + 500);
      const silent = env.room.proc.output.split("\n").filter((l) => /upstream silent for|silence_timeout_ms/.test(l));
      assert(silent.length === 0, `the room took a live link as silent: ${silent.slice(0, 3).join(" | ")}`);
      const closes1011 = [...A.roomCloses, ...B.roomCloses].filter((c) => c.code === 1011);
      assert(closes1011.length === 0, `a client was closed as silent: ${JSON.stringify(closes1011)}`);
    },
  },
  {
    id: "4f",
    name: "an epoch claimed by hand fences the room: clients closed with 4009, stranded writes reported",
    needs: ["4a"],
    async run(env) {
      const { A, B, room, api } = env;
      const credential = await mintRoomFlushCredential({ shellSecret: env.shellSecret, doc: ROOM_DOC, epoch: 0 });
      const res = await fetch(`${env.apiUrl}${"/api/rindle/claim-room-epoch"}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-rindle-room-credential": credential },
        body: JSON.stringify({ doc: ROOM_DOC }),
      });
      const claimed = await res.json();
      assert(res.status === 200 && typeof claimed.epoch === "number", `claim-room-epoch answered ${res.status} ${JSON.stringify(claimed)}`);
      env.log(`claimed epoch ${claimed.epoch} for ${ROOM_DOC} by hand`);
      const closesBefore = { A: A.roomCloses.length, B: B.roomCloses.length };
      const mid = A.app.mutate.createIssue({ id: "f-1", title: "written after the fence" });
      await waitFor(
        "both clients' room sockets to be closed with 4009",
        () =>
          A.roomCloses.slice(closesBefore.A).some((c) => c.code === 4009) &&
          B.roomCloses.slice(closesBefore.B).some((c) => c.code === 4009),
        { timeoutMs: T, detail: () => `alice closes ${JSON.stringify(A.roomCloses)}; bob closes ${JSON.stringify(B.roomCloses)}; api ${api.output.split("\n").filter((l) => /apply-row/.test(l)).slice(-2).join(" | ")}` },
      );
      const log = () => room.proc.output;
      if (room.fleet) {
        // ack = "flushed": the fenced write was never acknowledged, so nothing is stranded; its
        // author re-sends it once the doc has a placement again (the next connection re-boots it).
        const stats = await control(room, "/stats");
        assert(stats.box?.strandedTotal === 0, `fleet /stats box.strandedTotal is ${stats.box?.strandedTotal}, expected 0 with ack = "flushed": ${JSON.stringify(stats.box)}`);
        await dbHas(env, { "f-1": "written after the fence" }, "the fenced write re-sent by its author and committed under the re-booted placement");
        await waitFor("alice's fenced write to be confirmed after the re-boot", () => settled(A), { timeoutMs: T, detail: () => A.describe() });
      } else {
        // ack = "journaled": a write the room acknowledged (its journal append done) and the
        // authority never confirmed is reported as stranded when the fence lands. The fence
        // can also land first — the rejected flush ran while the write's append was still
        // in flight — and then the room never acknowledged it, owes nothing, and alice
        // still holds it pending. Either is right; a write acknowledged and not reported,
        // or reported and never acknowledged, is not.
        const stranded = new RegExp(`stranded mutation: doc ${ROOM_DOC} clientID ${A.clientID} mid ${mid} name createIssue`);
        const tail = () => log().split("\n").filter((l) => /strand|fenced|moved/i.test(l)).slice(-5).join(" | ");
        await waitFor("the room to log that it was fenced", () => /room moved: /.test(log()), { timeoutMs: T, detail: tail });
        await sleep(500);
        const acknowledged = !A.pending().some((p) => p.mid === mid);
        if (acknowledged) {
          assert(stranded.test(log()), `alice's mid ${mid} was acknowledged and the room did not report it as stranded: ${tail()}`);
        } else {
          assert(!stranded.test(log()), `the room reported alice's mid ${mid} as stranded but never acknowledged it: ${A.describe()}`);
          env.log(`the fence landed before alice's mid ${mid} was acknowledged: nothing stranded, the write still pending at alice`);
        }
        const db = await env.stack.issues();
        assert(!db["f-1"], `the stranded write reached the database anyway: ${JSON.stringify(db["f-1"])}`);
        if (room.kind === "single") {
          const exit = await Promise.race([room.proc.exited, sleep(T).then(() => null)]);
          assert(exit?.code === 3, `the fenced single room exited with ${JSON.stringify(exit)}, expected code 3`);
        }
      }
    },
  },
];
