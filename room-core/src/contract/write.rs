//! The write-plane half of the `WasmRoom` JSON contract, and the token helpers.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use serde::Deserialize;

use crate::error::{Error, ErrorCode};
use crate::json::read::WireRow;
use crate::json::tree::JsValue;
use crate::json::write::{write_key, write_row, write_str, write_value};
use crate::token::{self, MintOptions};
use crate::write::{Begin, Commit, Conflict};

use super::{js_time, js_uint, render_subscribed, JsonRoom};

fn parse<'a, T: Deserialize<'a>>(text: &'a str, what: &str) -> Result<T, Error> {
    serde_json::from_str(text).map_err(|e| Error::malformed(format!("{what}: {e}")))
}

fn cells(text: &str, what: &str) -> Result<Vec<crate::Value>, Error> {
    let row: WireRow = parse(text, what)?;
    Ok(row.0.to_vec())
}

fn head_cv_json(cv: Option<u64>) -> String {
    match cv {
        Some(n) => format!("{{\"headCv\":{n}}}"),
        None => String::from("{\"headCv\":null}"),
    }
}

#[derive(Deserialize)]
struct AckEntry {
    #[serde(rename = "clientID")]
    client_id: String,
    mid: serde_json::Number,
}

#[derive(Deserialize)]
struct SeedEntry {
    #[serde(rename = "clientID")]
    client_id: String,
    lmid: serde_json::Number,
}

#[derive(Deserialize)]
struct WireConflict {
    table: String,
    pk: WireRow,
    #[serde(default)]
    current: Option<WireRow>,
}

fn mid_of(n: &serde_json::Number, what: &str) -> Result<u64, Error> {
    crate::schema::safe_uint(n)
        .ok_or_else(|| Error::malformed(format!("{what} must be a non-negative integer")))
}

impl JsonRoom {
    /// `enableWrites(owned_json)`: a JSON array of owned table names.
    pub fn enable_writes(&mut self, owned_json: &str) -> Result<(), Error> {
        let owned: Vec<String> = parse(owned_json, "enableWrites: owned tables")?;
        let names: Vec<&str> = owned.iter().map(String::as_str).collect();
        self.room.enable_writes(&names)
    }

    /// `enableWritesV2(specs_json, owned_json?)`: scope specs; the optional owned set
    /// bounds the writable tables.
    pub fn enable_writes_v2(
        &mut self,
        specs_json: &str,
        owned_json: Option<&str>,
    ) -> Result<(), Error> {
        let specs: serde_json::Value = parse(specs_json, "enableWritesV2: scope specs")?;
        let owned: Option<Vec<String>> = match owned_json {
            Some(text) => Some(parse(text, "enableWritesV2: owned tables")?),
            None => None,
        };
        let names: Option<Vec<&str>> = owned
            .as_ref()
            .map(|o| o.iter().map(String::as_str).collect());
        self.room.enable_writes_v2(&specs, names.as_deref())
    }

    /// `beginMutation(client, mid, name?, args_json?)`: `{"begin":"tx"|"dedup"}`.
    pub fn begin_mutation(
        &mut self,
        client: &str,
        mid: f64,
        name: Option<&str>,
        args_json: Option<&str>,
    ) -> Result<String, Error> {
        let mid = js_uint(mid, "mid")?;
        Ok(
            match self.room.begin_mutation(client, mid, name, args_json)? {
                Begin::Tx => String::from("{\"begin\":\"tx\"}"),
                Begin::Dedup => String::from("{\"begin\":\"dedup\"}"),
            },
        )
    }

    /// `txGet(table, pk_json)`: the row as JSON text, or `None` (undefined).
    pub fn tx_get(&mut self, table: &str, pk_json: &str) -> Result<Option<String>, Error> {
        let pk = cells(pk_json, "pk: not JSON")?;
        Ok(self.room.tx_get(table, &pk)?.map(|row| {
            let mut s = String::new();
            write_row(&mut s, &row);
            s
        }))
    }

    /// `txAdd(table, row_json)`.
    pub fn tx_add(&mut self, table: &str, row_json: &str) -> Result<(), Error> {
        let row: WireRow = parse(row_json, "row: not JSON")?;
        self.room.tx_add(table, row.0)
    }

    /// `txEdit(table, row_json)`.
    pub fn tx_edit(&mut self, table: &str, row_json: &str) -> Result<(), Error> {
        let row: WireRow = parse(row_json, "row: not JSON")?;
        self.room.tx_edit(table, row.0)
    }

    /// `txRemove(table, pk_json)`.
    pub fn tx_remove(&mut self, table: &str, pk_json: &str) -> Result<(), Error> {
        let pk = cells(pk_json, "pk: not JSON")?;
        self.room.tx_remove(table, &pk)
    }

    /// `commitMutation()`: `{"headCv":n}` or `{"deopt":{reason,table,pk,op?,column?}}`.
    pub fn commit_mutation(&mut self) -> Result<String, Error> {
        Ok(match self.room.commit_mutation()? {
            Commit::Applied { head_cv } => format!("{{\"headCv\":{head_cv}}}"),
            Commit::Deopt(d) => {
                let mut s = String::from("{\"deopt\":{");
                write_key(&mut s, "reason");
                write_str(&mut s, d.reason);
                s.push(',');
                write_key(&mut s, "table");
                write_str(&mut s, &d.table);
                s.push(',');
                write_key(&mut s, "pk");
                write_row(&mut s, &d.pk);
                if let Some(op) = d.op {
                    s.push(',');
                    write_key(&mut s, "op");
                    write_str(&mut s, op);
                }
                if let Some(c) = &d.column {
                    s.push(',');
                    write_key(&mut s, "column");
                    write_str(&mut s, c);
                }
                s.push_str("}}");
                s
            }
        })
    }

    /// `rejectMutation(kind?, reason?)`.
    pub fn reject_mutation(
        &mut self,
        kind: Option<&str>,
        reason: Option<&str>,
    ) -> Result<(), Error> {
        self.room.reject_mutation(kind, reason)
    }

    /// `ack(entries_json)`: `[{clientID, mid}]` → `{"headCv":n|null}`.
    pub fn ack(&mut self, entries_json: &str) -> Result<String, Error> {
        let entries: Vec<AckEntry> = parse(entries_json, "ack: entries")?;
        let entries = entries
            .iter()
            .map(|e| Ok((e.client_id.clone(), mid_of(&e.mid, "ack: mid")?)))
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(head_cv_json(self.room.ack(&entries)?))
    }

    /// `seedDurable(seeds_json)`: `[{clientID, lmid}]` → `{"headCv":n|null}`.
    pub fn seed_durable(&mut self, seeds_json: &str) -> Result<String, Error> {
        let seeds: Vec<SeedEntry> = parse(seeds_json, "seedDurable: seeds")?;
        let seeds = seeds
            .iter()
            .map(|e| Ok((e.client_id.clone(), mid_of(&e.lmid, "seedDurable: lmid")?)))
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(head_cv_json(self.room.seed_durable(&seeds)?))
    }

    /// `ackedLmid(client)`.
    pub fn acked_lmid(&self, client: &str) -> u64 {
        self.room.acked_lmid(client)
    }

    /// `appliedMid(client)`.
    pub fn applied_mid(&self, client: &str) -> u64 {
        self.room.applied_mid(client)
    }

    /// `durableLmid(client)`.
    pub fn durable_lmid(&self, client: &str) -> u64 {
        self.room.durable_lmid(client)
    }

    /// `lmidSubscribe(sub, epoch, client, now_ms)`: same shape as `subscribe`.
    pub fn lmid_subscribe(
        &mut self,
        sub: &str,
        epoch: f64,
        client: &str,
        now_ms: f64,
    ) -> Result<String, Error> {
        let epoch = js_uint(epoch, "epoch")?;
        let now = js_time(now_ms, "nowMs")?;
        Ok(render_subscribed(
            &self.room.lmid_subscribe(sub, epoch, client, now)?,
        ))
    }

    /// `pendingLen()`.
    pub fn pending_len(&self) -> u64 {
        self.room.pending_len() as u64
    }

    /// `dirtyLen()`.
    pub fn dirty_len(&self) -> u64 {
        self.room.dirty_len() as u64
    }

    /// `flushInFlight()`.
    pub fn flush_in_flight(&self) -> bool {
        self.room.flush_in_flight()
    }

    /// `beginFlush()`: `{changes, batchHash, lmids}` or `None` (undefined).
    pub fn begin_flush(&mut self) -> Result<Option<String>, Error> {
        Ok(self.room.begin_flush()?.map(|b| b.to_json()))
    }

    /// `flushOk()`: `{"retired":n,"dirty":n}` — pending mutations retired, keys still
    /// dirty.
    pub fn flush_ok(&mut self) -> Result<String, Error> {
        let r = self.room.flush_ok()?;
        Ok(format!(
            "{{\"retired\":{},\"dirty\":{}}}",
            r.retired, r.dirty
        ))
    }

    /// `flushConflict(conflicts_json)`: `[{table, pk, current}]` → `{"headCv":n|null}`.
    pub fn flush_conflict(&mut self, conflicts_json: &str) -> Result<String, Error> {
        let wire: Vec<WireConflict> = parse(conflicts_json, "flushConflict: conflicts")?;
        let conflicts: Vec<Conflict> = wire
            .into_iter()
            .map(|c| Conflict {
                table: c.table,
                pk: c.pk.0.to_vec(),
                current: c.current.map(|r| r.0),
            })
            .collect();
        Ok(head_cv_json(self.room.flush_conflict(&conflicts)?))
    }
}

/// `mintRoomToken(opts)`: opts `{doc, ast, sub, kid, key, ttlMs, now, scopesHash?}` as
/// JSON text (`now` is required: the core reads no clock). Returns the token.
pub fn mint_room_token(opts_json: &str) -> Result<String, Error> {
    let opts = JsValue::parse(opts_json)
        .map_err(|e| Error::malformed(format!("mintRoomToken: options are not JSON: {e}")))?;
    let text = |k: &str| {
        opts.get(k).and_then(JsValue::as_str).ok_or_else(|| {
            Error::new(
                ErrorCode::InvalidArgument,
                format!("mintRoomToken: `{k}` must be a string"),
            )
        })
    };
    let num = |k: &str| {
        opts.get(k).and_then(JsValue::as_f64).ok_or_else(|| {
            Error::new(
                ErrorCode::InvalidArgument,
                format!("mintRoomToken: `{k}` must be a number"),
            )
        })
    };
    let scopes_hash = match opts.get("scopesHash") {
        None | Some(JsValue::Null) => None,
        Some(JsValue::Str(s)) => Some(s.as_str()),
        Some(_) => {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                "mintRoomToken: `scopesHash` must be a string",
            ))
        }
    };
    // JSON.stringify drops an undefined member: no `ast` option, no `ast` in the payload.
    let ast = opts.get("ast").cloned();
    token::mint(&MintOptions {
        doc: text("doc")?,
        ast: ast.as_ref(),
        sub: text("sub")?,
        kid: text("kid")?,
        key: text("key")?,
        ttl_ms: num("ttlMs")?,
        now_ms: num("now")?,
        scopes_hash,
    })
}

/// `verifyRoomToken(token, opts)`: opts `{doc, keys: {kid: secret}, now}` as JSON text.
/// Returns the payload as JSON text; refusals are [`ErrorCode::TokenRefused`] errors
/// with the `lease token refused: <reason>` message.
pub fn verify_room_token(token_text: &str, opts_json: &str) -> Result<String, Error> {
    let opts = JsValue::parse(opts_json)
        .map_err(|e| Error::malformed(format!("verifyRoomToken: options are not JSON: {e}")))?;
    let doc = opts.get("doc").and_then(JsValue::as_str).ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidArgument,
            "verifyRoomToken: `doc` must be a string",
        )
    })?;
    let now = opts.get("now").and_then(JsValue::as_f64).ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidArgument,
            "verifyRoomToken: `now` must be a number",
        )
    })?;
    let keys: Vec<(String, String)> = match opts.get("keys") {
        Some(JsValue::Obj(members)) => members
            .iter()
            .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), String::from(s))))
            .collect(),
        _ => {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                "verifyRoomToken: `keys` must be an object of kid → secret",
            ))
        }
    };
    let payload = token::verify(token_text, doc, &keys, now)?;
    Ok(payload.raw.to_js_string())
}

/// `scopeSpecsHash(specs)`.
pub fn scope_specs_hash(specs_json: &str) -> Result<String, Error> {
    token::scope_specs_hash_json(specs_json)
}

/// Renders one cell (helper for faces that print `txGet` cells).
pub fn render_cell(v: &crate::Value) -> String {
    let mut s = String::new();
    write_value(&mut s, v);
    s
}
