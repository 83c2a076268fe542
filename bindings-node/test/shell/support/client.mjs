// A websocket test client over `ws` (no node:test import, so the benchmark can use it
// too): every event (frame, close) is queued in arrival order.
import { WebSocket } from "ws";

/** Fails a wait that takes longer. */
export const WAIT_MS = 10_000;

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A test client: every event (frame, close) is queued in arrival order. */
export class Client {
  static connect(port) {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/`, { perMessageDeflate: false });
      const c = new Client(ws);
      ws.once("open", () => resolve(c));
      ws.once("error", reject);
    });
  }

  constructor(ws) {
    this.ws = ws;
    this.queue = [];
    this.waiters = [];
    /** Every frame consumed so far. */
    this.log = [];
    ws.on("message", (data) => this.push({ frame: JSON.parse(String(data)) }));
    ws.on("close", (code, reason) => this.push({ close: { code, reason: String(reason) } }));
    ws.on("error", () => {});
  }

  push(ev) {
    const w = this.waiters.shift();
    if (w) w(ev);
    else this.queue.push(ev);
  }

  send(frame) {
    this.ws.send(typeof frame === "string" ? frame : JSON.stringify(frame));
  }

  /** The next event within `ms`: `{frame}`, `{close: {code, reason}}` or `{timeout}`. */
  nextEvent(ms = WAIT_MS) {
    if (this.queue.length > 0) return Promise.resolve(this.queue.shift());
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(done), 1);
        resolve({ timeout: true });
      }, ms);
      const done = (ev) => {
        clearTimeout(timer);
        resolve(ev);
      };
      this.waiters.push(done);
    });
  }

  /** The next frame (fails on a close or a timeout). */
  async next(ms = WAIT_MS) {
    const ev = await this.nextEvent(ms);
    if (!ev.frame) throw new Error(`expected a frame, got ${JSON.stringify(ev)}`);
    this.log.push(ev.frame);
    return ev.frame;
  }

  /** The next frame, which must have type `t`. */
  async expectT(t) {
    const f = await this.next();
    if (f.t !== t) throw new Error(`expected a ${t} frame, got ${JSON.stringify(f)}`);
    return f;
  }

  /** Skips frames until one satisfies `pred`. */
  async until(what, pred) {
    for (;;) {
      const f = await this.next().catch((e) => {
        throw new Error(`waiting for ${what}: ${e.message}`);
      });
      if (pred(f)) return f;
    }
  }

  /** Asserts that nothing arrives for `ms`. */
  async quiet(ms) {
    const ev = await this.nextEvent(ms);
    if (!ev.timeout) throw new Error(`expected silence, got ${JSON.stringify(ev)}`);
  }

  /** Reads (logging frames) until the socket closes: `{code, reason}`. */
  async closed() {
    for (;;) {
      const ev = await this.nextEvent();
      if (ev.timeout) throw new Error("the socket never closed");
      if (ev.close) return ev.close;
      this.log.push(ev.frame);
    }
  }

  /** nhello → nbatch → progress; returns the snapshot frame. */
  async subscribed() {
    await this.expectT("nhello");
    const snap = await this.expectT("nbatch");
    await this.expectT("progress");
    return snap;
  }

  close() {
    this.ws.terminate();
  }
}

