// Real @rindle/optimistic clients, as an application creates them: named queries resolved through
// the API server, the room-served query on the lease's room endpoint (@rindle/remote's WsTransport),
// the room mutators declared. Each client records the room sockets' close codes and every
// rejection it is told about.
import WebSocket from "ws";
import { createRindleClient } from "@rindle/optimistic";
import { WsTransport } from "@rindle/remote";
import { ROOM_MUTATOR_NAMES, issuesQuery, mutators, schema } from "./app.mjs";

// Node 20 has no global WebSocket; the clients' transports use the global one.
globalThis.WebSocket ??= WebSocket;

/** A WsTransport whose every socket reports its close to `closes`. */
function trackedTransport(closes) {
  return class extends WsTransport {
    connect() {
      const ws = super.connect();
      ws.addEventListener("close", (ev) => closes.push({ code: ev.code, reason: String(ev.reason ?? ""), at: Date.now() }));
      return ws;
    }
  };
}

export class Client {
  static async create(user, apiUrl, log) {
    const c = new Client();
    c.user = user;
    c.rejections = [];
    c.anomalies = [];
    c.roomCloses = [];
    const Transport = trackedTransport(c.roomCloses);
    c.app = await createRindleClient({
      schema,
      mutators,
      user: () => user,
      api: { url: apiUrl, headers: { "x-user": user } },
      clientID: `${user}-${process.pid}-${Date.now().toString(36)}`,
      realtime: {
        mutators: ROOM_MUTATOR_NAMES,
        transport: (endpoint) => new Transport(endpoint),
        onAnomaly: (a) => {
          c.anomalies.push(a);
          log(`${user}: realtime anomaly ${a.kind}: ${a.message}`);
        },
      },
      onRejected: (env, reason) => {
        c.rejections.push({ name: env.name, mid: env.mid, args: env.args, reason });
        log(`${user}: mutation ${env.name} mid ${env.mid} rejected: ${reason}`);
      },
    });
    c.clientID = c.app.clientID;
    c.view = c.app.store.materialize(issuesQuery());
    return c;
  }

  /** The rows the client shows, by id. */
  rows() {
    return Object.fromEntries(this.view.data.map((r) => [r.id, r]));
  }

  /** The client's pending (unconfirmed) mutations: name, mid, args. */
  pending() {
    return this.app.backend.__inspect().pending.map((p) => ({ name: p.name, mid: p.mid, args: p.args }));
  }

  /** Whether the query is served by a room (the lease carried a realtime block). */
  roomAttached() {
    return Object.keys(this.app.__realtimeInspect().rooms).length > 0;
  }

  describe() {
    return JSON.stringify({
      resultType: this.view.resultType,
      rows: this.view.data.map((r) => `${r.id}:${r.title}`),
      pending: this.pending(),
      roomCloses: this.roomCloses,
    });
  }

  close() {
    try {
      this.view.destroy();
    } catch {
      // already gone
    }
    this.app.close();
  }
}
