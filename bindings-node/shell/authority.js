"use strict";
// The write authority (the published room's `RoomAuthority`): the API server's
// `/apply-row-change-txn`, `/claim-room-epoch` and `/room-lmids` trio
// (docs/design/authority.md, "The apply call").
//
// `httpAuthority` is transport only: the request bodies and the mapping of every reply
// (a value, a plain throw the shell retries with the same body, or a throw marked
// `fatal: true` that kills the incarnation loudly) are the core's, the same as the
// server's (`authorityBody` / `authorityReply` in the addon).

const native = require("../binding.js");

/** An error the shell must not retry. */
function fatalAuthorityError(message) {
  const err = new Error(message);
  err.name = "FatalAuthorityError";
  err.fatal = true;
  return err;
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

  /** POSTs `body` and classifies the reply (a fetch failure is retryable: it throws). */
  async function call(kind, url, body) {
    const res = await doFetch(url, { method: "POST", headers, body });
    const text = await res.text();
    const result = JSON.parse(native.authorityReply(kind, url, res.status, text));
    if (typeof result.retryable === "string") throw new Error(result.retryable);
    if (typeof result.fatal === "string") throw fatalAuthorityError(result.fatal);
    return result;
  }

  return {
    async claimEpoch(doc) {
      return (await call("claim", opts.claimUrl, native.authorityBody("claim", doc))).claimed;
    },

    async lmids(doc, clients) {
      const body = native.authorityBody("lmids", doc, clients);
      return (await call("lmids", opts.lmidsUrl, body)).lmids;
    },

    async applyRowChangeTxn(body) {
      return (await call("apply", opts.applyUrl, body)).applied;
    },
  };
}

module.exports = { httpAuthority, fatalAuthorityError };
