"use strict";
// The write authority (seed 000 `RoomAuthority`): the API server's
// `/apply-row-change-txn`, `/claim-room-epoch` and `/room-lmids` trio (authority.md §4).
//
// Result classes of `applyRowChangeTxn`: a value (`ok` / `conflict` / `fenced`), a plain
// throw (network failure, 5xx, any other non-OK status: the shell retries the same body)
// or a throw marked `fatal: true` (a batch-identity mismatch or a malformed refusal:
// retrying cannot help, the shell kills the incarnation loudly).

/** An error the shell must not retry. */
function fatalAuthorityError(message) {
  const err = new Error(message);
  err.name = "FatalAuthorityError";
  err.fatal = true;
  return err;
}

function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/** The HTTP authority over `fetch` (the global one unless `opts.fetch` is given). */
function httpAuthority(opts) {
  if (!isObject(opts)) throw new TypeError("httpAuthority: `opts` must be an object");
  for (const key of ["applyUrl", "claimUrl", "lmidsUrl"]) {
    if (typeof opts[key] !== "string" || opts[key].length === 0) {
      throw new TypeError(`httpAuthority: \`${key}\` must be a URL string`);
    }
  }
  const doFetch = opts.fetch ?? globalThis.fetch;
  if (typeof doFetch !== "function") {
    throw new TypeError("httpAuthority: no fetch available (pass `opts.fetch`)");
  }
  const headers = { "content-type": "application/json", ...(opts.headers ?? {}) };

  async function post(url, body) {
    const res = await doFetch(url, { method: "POST", headers, body });
    const text = await res.text();
    return { status: res.status, ok: res.ok, text, json: parseJson(text) };
  }

  return {
    async claimEpoch(doc) {
      const res = await post(opts.claimUrl, JSON.stringify({ doc }));
      if (!res.ok) throw new Error(`claim-room-epoch failed: ${res.status} ${res.text}`);
      const epoch = res.json?.epoch;
      if (typeof epoch !== "number" || !Number.isFinite(epoch)) {
        throw new Error(`claim-room-epoch returned no epoch: ${res.text}`);
      }
      return epoch;
    },

    async lmids(doc, clients) {
      const res = await post(opts.lmidsUrl, JSON.stringify({ doc, clients }));
      if (!res.ok) throw new Error(`room-lmids failed: ${res.status} ${res.text}`);
      const lmids = res.json?.lmids;
      if (!isObject(lmids)) throw new Error(`room-lmids returned no lmids: ${res.text}`);
      const out = {};
      for (const [client, lmid] of Object.entries(lmids)) {
        if (typeof lmid === "number" && Number.isFinite(lmid)) out[client] = lmid;
      }
      return out;
    },

    async applyRowChangeTxn(body) {
      const res = await post(opts.applyUrl, body);
      const json = res.json;
      if (res.ok) {
        const out = { kind: "ok", applied: !(isObject(json) && json.applied === false) };
        if (isObject(json) && typeof json.cv === "number") out.cv = json.cv;
        return out;
      }
      if (res.status === 409) {
        if (isObject(json) && json.error === "fenced") {
          return typeof json.currentEpoch === "number"
            ? { kind: "fenced", currentEpoch: json.currentEpoch }
            : { kind: "fenced" };
        }
        if (isObject(json) && json.error === "conflict" && Array.isArray(json.conflicts)) {
          return { kind: "conflict", conflicts: json.conflicts };
        }
        throw fatalAuthorityError(`apply-row-change-txn: malformed 409 refusal: ${res.text}`);
      }
      if (res.status === 500 && /batch identity mismatch/i.test(res.text)) {
        throw fatalAuthorityError(`apply-row-change-txn: ${res.text}`);
      }
      throw new Error(`apply-row-change-txn failed: ${res.status} ${res.text}`);
    },
  };
}

module.exports = { httpAuthority, fatalAuthorityError };
