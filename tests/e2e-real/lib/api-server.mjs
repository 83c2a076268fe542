// A node:http host for the real @rindle/api-server, as an application would run it, configured
// for the room under test. Started by the runner as its own process:
//
//   node lib/api-server.mjs <config.json>
//
// config.json: { port, writeUrl, readUrl, databaseToken, shellSecret, roomTokenKey: {kid, secret},
//                roomWsEndpoint, upstreamWsEndpoint? }
// - writeUrl: the write master's (rindle-replicator) HTTP ingress: row-change transactions, epoch
//   claims and lmids go there, and the authoritative SQL mutators with `databaseToken`.
// - readUrl: where query leases and the room's upstream lease are minted (the dev edge or rindled).
// - roomWsEndpoint: the room box; a doc's room is `${roomWsEndpoint}/rooms/<doc>` when it names a
//   fleet (`fleet: true`), else the endpoint itself (one room per process).
// Prints "api-server listening on <port>" once it serves.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import {
  createRindleApiServer,
  registerQueries,
  sharedApiMutators,
  SplitDaemonClient,
} from "@rindle/api-server";
import { HttpRindleDaemonClient } from "@rindle/daemon-client";
import { issuesQuery, mutators, roomProfiles, schema } from "./app.mjs";

const cfg = JSON.parse(readFileSync(process.argv[2], "utf8"));
const log = (msg) => process.stderr.write(`${new Date().toISOString()} api-server: ${msg}\n`);

const api = createRindleApiServer({
  // Two legs, two credentials: the control plane (leases, epochs, row-change flushes) takes the
  // daemon's bearer (none on a local `rindle up` fleet), while the authoritative mutators run over
  // the write master's public SQL surface with the database token.
  daemon: new SplitDaemonClient(
    new HttpRindleDaemonClient({ baseUrl: cfg.writeUrl }),
    new HttpRindleDaemonClient({ baseUrl: cfg.readUrl }),
  ),
  database: { url: cfg.writeUrl, authToken: cfg.databaseToken },
  schema,
  queries: registerQueries([issuesQuery]),
  mutators: sharedApiMutators(mutators, (ctx) => ({ user: String(ctx.user ?? "") })),
  authorizeQuery: ({ user }) => typeof user === "string" && user.length > 0,
  authorizeMutation: ({ user }) => typeof user === "string" && user.length > 0,
  subject: ({ user }) => user,
  realtime: {
    shellSecret: cfg.shellSecret,
    rooms: roomProfiles,
    roomTokenKey: cfg.roomTokenKey,
    roomTokenTtlMs: 10 * 60_000,
    ...(cfg.upstreamWsEndpoint ? { upstreamWsEndpoint: cfg.upstreamWsEndpoint } : {}),
    locateRoom: (doc) => ({
      wsEndpoint: cfg.fleet
        ? `${cfg.roomWsEndpoint}/rooms/${encodeURIComponent(doc)}`
        : cfg.roomWsEndpoint,
    }),
    warn: (m) => log(`warn: ${m}`),
  },
});

async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : {};
}

const r = api.routes;
const handlers = new Map([
  [r.query, (b, c) => api.handleQueryJson(b, c).then((body) => ({ status: 200, body }))],
  [r.mutate, (b, c) => api.handleMutateJson(b, c).then((body) => ({ status: 200, body }))],
  [r.applyRowChangeTxn, (b, c) => api.handleApplyRowChangeTxnJson(b, c)],
  [r.claimRoomEpoch, (b, c) => api.handleClaimRoomEpochJson(b, c)],
  [r.roomLmids, (b, c) => api.handleRoomLmidsJson(b, c)],
  [r.roomBoot, (b, c) => api.handleRoomBootJson(b, c)],
]);

const server = createServer(async (req, res) => {
  const path = (req.url ?? "").split("?")[0];
  let status = 500;
  let body;
  try {
    const handler = req.method === "POST" ? handlers.get(path) : undefined;
    if (!handler) {
      status = 404;
      body = { error: `no route ${req.method} ${path}` };
    } else {
      const user = req.headers["x-user"];
      const out = await handler(await readBody(req), { user, request: req });
      status = out.status;
      body = out.body;
    }
  } catch (err) {
    status = typeof err?.status === "number" ? err.status : 500;
    body = { error: String(err?.message ?? err) };
  }
  log(`${req.method} ${path} -> ${status}${status >= 300 ? ` ${JSON.stringify(body)}` : ""}`);
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
});

server.listen(cfg.port ?? 0, "127.0.0.1", () => {
  console.log(`api-server listening on ${server.address().port}`);
});
for (const sig of ["SIGTERM", "SIGINT"]) {
  process.on(sig, () => {
    api.close();
    server.close();
    process.exit(0);
  });
}
