// Type-checked by `npm run typecheck` (tsc --noEmit), never run: every shell declaration
// of index.d.ts (the published room's createRoomShell and its options, the journals, the
// authority), used the way a host uses them.
import {
  compactJournalRecords,
  createRoomShell,
  fatalAuthorityError,
  fileJournal,
  httpAuthority,
  journalEntryOutcome,
  memoryJournal,
  type AuthorityApplyResult,
  type AuthorityConflict,
  type AuthorityFetch,
  type DownstreamOptions,
  type FatalAuthorityError,
  type FileRoomJournal,
  type HttpAuthorityOptions,
  type KeyedRow,
  type MutationTx,
  type RoomAuthority,
  type RoomFlushRecord,
  type RoomJournal,
  type RoomJournalEntry,
  type RoomJournalRecord,
  type RoomMutator,
  type RoomMutatorCtx,
  type RoomScopeSpec,
  type RoomShell,
  type RoomShellOptions,
  type UpstreamOptions,
  type WireValue,
  type WritesOptions,
} from "@rindle/room-native";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2
  ? true
  : false;
type Assert<T extends true> = T;

export type ShellChecks = [
  Assert<Equal<ReturnType<typeof createRoomShell>, Promise<RoomShell>>>,
  Assert<Equal<ReturnType<typeof memoryJournal>, RoomJournal>>,
  Assert<Equal<ReturnType<typeof httpAuthority>, RoomAuthority>>,
  Assert<Equal<ReturnType<typeof journalEntryOutcome>, "applied" | "rejected" | "deopt">>,
  Assert<Equal<ReturnType<MutationTx["row"]>, KeyedRow | undefined>>,
  Assert<Equal<ReturnType<MutationTx["query"]>, never>>,
  Assert<Equal<ReturnType<RoomShell["cv"]>, number | undefined>>,
];

// Mutators with typed args register (args is `never` in RoomMutator, as in the published
// typings).
const addNote = (tx: MutationTx, args: { id: number; body: string }, ctx: RoomMutatorCtx): void => {
  const existing: KeyedRow | undefined = tx.row("note", { id: args.id });
  if (existing) throw new Error("exists");
  tx.insert("note", { id: args.id, body: args.body, owner: ctx.user });
};
const positional: RoomMutator = (tx) => {
  const row: WireValue[] | undefined = tx.get("note", [1]);
  if (row) tx.edit("note", row, [undefined, "x", undefined]);
  tx.add("note", [2, "b", "u"]);
  tx.remove("note", [2]);
  tx.update("note", { id: 1, body: "y" });
  tx.upsert("note", { id: 3, body: "z", owner: null });
  tx.delete("note", { id: 3 });
};
const usesQuery: RoomMutator = (tx) => {
  tx.query({ ast: () => ({ table: "note" }) });
};

// The shape of the standard fetch (lib.dom / undici), reduced to what matters here: a
// real `fetch` is assignable to AuthorityFetch.
declare const standardFetch: (
  input: string | { href: string },
  init?: { method?: string; headers?: Record<string, string> | [string, string][]; body?: string | null },
) => Promise<{ ok: boolean; status: number; text(): Promise<string>; json(): Promise<unknown> }>;

export async function boot(rindledWs: string, rindledHttp: string): Promise<void> {
  const scopes: RoomScopeSpec[] = [
    { table: "note", writable: { kind: "predicate", joinKeyCols: [] }, footprintWhere: { type: "and", conditions: [] } },
    { table: "acl", writable: { kind: "none" } },
  ];
  const fetchLike: AuthorityFetch = async (url, init) => {
    void [url, init.method, init.headers, init.body];
    return { ok: true, status: 200, text: async () => "{}" };
  };
  const httpOpts: HttpAuthorityOptions = {
    applyUrl: "http://127.0.0.1:1/apply-row-change-txn",
    claimUrl: "http://127.0.0.1:1/claim-room-epoch",
    lmidsUrl: "http://127.0.0.1:1/room-lmids",
    headers: { "x-rindle-room-credential": "rfc1.x.y" },
    fetch: fetchLike,
  };
  const authority: RoomAuthority = httpAuthority(httpOpts);
  httpAuthority({ ...httpOpts, fetch: standardFetch });
  const file: FileRoomJournal = fileJournal("/tmp/room.journal");
  const writes: WritesOptions = {
    mutators: { addNote, positional, usesQuery },
    ownedTables: ["note"],
    scopes,
    journal: file,
    groupCommitMs: 5,
    authority,
    flushDebounceMs: 250,
    flushDirtyMax: 512,
  };
  const downstream: DownstreamOptions = {
    docId: "doc/1",
    tokenKeys: { k1: "secret" },
    idleTtlMs: 30_000,
    sweepIntervalMs: 1_000,
    revocationWindowMs: 1_800_000,
    control: { authToken: "ctl", port: 0 },
    writes,
    sendBudgetBytes: 4 << 20,
  };
  const upstream: UpstreamOptions = {
    wsUrl: rindledWs,
    controlUrl: rindledHttp,
    authToken: "up",
    footprintAst: { table: "note" },
    leaseTtlMs: 60_000,
    clientId: "room-1",
  };
  const opts: RoomShellOptions = { upstream, downstream, port: 0, log: (line: string) => void line };
  const shell: RoomShell = await createRoomShell(opts);
  await shell.awaitLive();
  const ports: number = shell.port + shell.controlPort;
  const cv: number | undefined = shell.cv();
  const epoch: number | undefined = shell.upstreamEpoch();
  const boot: string = shell.bootId();
  await shell.flushNow();
  await shell.close();
  await file.close();
  const size: number = file.size();
  const where: string = file.path;
  void [ports, cv, epoch, boot, size, where];
  // @ts-expect-error -- `port` is read-only
  shell.port = 1;
  // @ts-expect-error -- a writable scope needs its joinKeyCols
  const bad: RoomScopeSpec = { table: "note", writable: { kind: "predicate" } };
  void bad;
}

export async function journals(authority: RoomAuthority): Promise<void> {
  const journal: RoomJournal = memoryJournal();
  const record: RoomJournalRecord = '{"clientID":"c1","mid":1,"name":"addNote","args":null}';
  await journal.append([record]);
  const all: Array<RoomJournalRecord | RoomJournalEntry> = await journal.replay();
  const verdict: "applied" | "rejected" | "deopt" = journalEntryOutcome(all[0]!);
  const legacy: RoomJournalEntry = { clientID: "c1", mid: 1, name: "addNote", args: { id: 1 }, sub: "u1" };
  const kept: RoomJournalRecord[] = compactJournalRecords([...all, legacy], { c1: 1 });
  void [journalEntryOutcome(legacy), kept];
  const flush: RoomFlushRecord = { seq: 1, epoch: 1, body: "{}" };
  await journal.appendFlush(flush);
  await journal.confirmFlush(1);
  const { records, maxSeq } = await journal.replayFlushes();
  const claimed: number = await authority.claimEpoch("doc/1");
  const lmids: Record<string, number> = await authority.lmids("doc/1", ["c1"]);
  const res: AuthorityApplyResult = await authority.applyRowChangeTxn(flush.body);
  if (res.kind === "ok") {
    const applied: boolean = res.applied;
    const at: number | undefined = res.cv;
    void [applied, at];
  } else if (res.kind === "conflict") {
    const c: AuthorityConflict[] = res.conflicts;
    void c;
  } else {
    const current: number | undefined = res.currentEpoch;
    void current;
  }
  const fatal: FatalAuthorityError = fatalAuthorityError("batch identity mismatch");
  const isFatal: true = fatal.fatal;
  const asError: Error = fatal;
  void [verdict, records, maxSeq, claimed, lmids, isFatal, asError];
}
