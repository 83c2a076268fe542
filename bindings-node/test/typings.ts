// Type-checked by `npm run typecheck` (tsc --noEmit), never run: every declaration of
// index.d.ts used the way the published room's Node shell uses it, with the published
// types.
import {
  initRoomWasm,
  mintRoomToken,
  NativeRoom,
  RoomTokenError,
  scopeSpecsHash,
  verifyRoomToken,
  WasmRoom,
  type MintRoomTokenOptions,
  type RoomError,
  type RoomTokenPayload,
  type VerifyRoomTokenOptions,
} from "@rindle/room-native";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2
  ? true
  : false;
type Assert<T extends true> = T;

/** The published exact return and parameter types. */
export type Checks = [
  Assert<Equal<ReturnType<WasmRoom["txGet"]>, string | undefined>>,
  Assert<Equal<ReturnType<WasmRoom["beginFlush"]>, string | undefined>>,
  Assert<Equal<ReturnType<WasmRoom["cv"]>, number | undefined>>,
  Assert<Equal<ReturnType<WasmRoom["rejectMutation"]>, void>>,
  Assert<Equal<ReturnType<WasmRoom["unsubscribe"]>, boolean>>,
  Assert<Equal<Parameters<typeof WasmRoom.open>, [hello_json: string, idle_ttl_ms: number]>>,
  Assert<Equal<ReturnType<typeof verifyRoomToken>, Promise<RoomTokenPayload>>>,
  Assert<Equal<ReturnType<typeof mintRoomToken>, Promise<string>>>,
  Assert<Equal<ReturnType<typeof initRoomWasm>, Promise<void>>>,
];

export async function everyMethod(hello: unknown, batch: unknown, ast: unknown): Promise<void> {
  await initRoomWasm();
  await initRoomWasm(new Uint8Array(0));
  const room: WasmRoom = WasmRoom.open(JSON.stringify(hello), 30_000);
  const same: NativeRoom = NativeRoom.open("{}", 0);

  const status: string = room.apply(JSON.stringify(batch));
  const sub: string = room.subscribe("1:1", 1, JSON.stringify(ast), Date.now());
  const was: boolean = room.unsubscribe("1:1", Date.now());
  const swept: number = room.sweep(Date.now());
  const frames: string = room.commitAll();
  const cv: number | undefined = room.cv();
  const head: number = room.headCv();
  const epoch: number = room.epoch();
  const live: boolean = room.isLive();
  const poisoned: boolean = room.isPoisoned();
  const mats: number = room.materializationCount();
  const subs: number = room.subscriberCount();

  room.enableWrites(JSON.stringify(["slide"]));
  room.enableWritesV2("[]");
  room.enableWritesV2("[]", '["slide"]');
  room.enableWritesV2("[]", null);
  const begin: string = room.beginMutation("c1", 1);
  room.beginMutation("c1", 2, "addSlide");
  room.beginMutation("c1", 3, "addSlide", JSON.stringify({ id: "s3" }));
  room.beginMutation("c1", 4, undefined, undefined);
  room.beginMutation("c1", 5, null, null);
  const row: string | undefined = room.txGet("slide", '["s1"]');
  room.txAdd("slide", '["s3","d1",3]');
  room.txEdit("slide", '["s3","d1",4]');
  room.txRemove("slide", '["s3"]');
  const commit: string = room.commitMutation();
  room.rejectMutation();
  room.rejectMutation("deopt");
  room.rejectMutation("rejected", "unknown mutator");
  room.rejectMutation(null, null);
  const acked: string = room.ack(JSON.stringify([{ clientID: "c1", mid: 1 }]));
  const a: number = room.ackedLmid("c1");
  const b: number = room.appliedMid("c1");
  const c: number = room.durableLmid("c1");
  const lmid: string = room.lmidSubscribe("1:2", 1, "c1", Date.now());
  const seeded: string = room.seedDurable(JSON.stringify([{ clientID: "c1", lmid: 1 }]));
  const pending: number = room.pendingLen();
  const dirty: number = room.dirtyLen();
  const flush: string | undefined = room.beginFlush();
  const ok: string = room.flushOk();
  const conflict: string = room.flushConflict("[]");
  const inFlight: boolean = room.flushInFlight();
  room.free();
  same[Symbol.dispose]();

  void [status, sub, was, swept, frames, cv, head, epoch, live, poisoned, mats, subs];
  void [begin, row, commit, acked, a, b, c, lmid, seeded, pending, dirty, flush, ok];
  void [conflict, inFlight];
}

export async function tokens(): Promise<void> {
  const mint: MintRoomTokenOptions = {
    doc: "doc:d1",
    ast: { table: "slide" },
    sub: "user:ann",
    kid: "k1",
    key: "secret",
    ttlMs: 60_000,
  };
  const token: string = await mintRoomToken(mint);
  await mintRoomToken({ ...mint, now: 1, scopesHash: scopeSpecsHash([{ table: "slide" }]) });
  const opts: VerifyRoomTokenOptions = { doc: "doc:d1", keys: { k1: "secret" } };
  try {
    const payload: RoomTokenPayload = await verifyRoomToken(token, { ...opts, now: Date.now() });
    const v: 1 = payload.v;
    const hash: string | undefined = payload.scopesHash;
    void [v, hash, payload.ast, payload.iat, payload.exp, payload.kid, payload.sub];
  } catch (e) {
    if (e instanceof RoomTokenError) {
      const reason: string = e.reason;
      const message: string = e.message;
      void [reason, message];
    } else {
      const code: string = (e as RoomError).code;
      void code;
    }
  }
  const err = new RoomTokenError("expired");
  const asError: Error = err;
  void asError;
  const hash: string = scopeSpecsHash([]);
  void hash;
}

// The constructor is private, as in the wasm class.
// @ts-expect-error
new WasmRoom();
// The published typings take JSON parameters as text: an object is a type error.
// @ts-expect-error
WasmRoom.open({ epoch: 1 }, 0);
