//! The host's I/O as JSON text, for drivers that cross a language boundary (the Node
//! addon, the C library): the configuration, journal contents and entries, authority
//! results, control requests, and every [`Input`] as one JSON object; an [`Output`] as
//! one is [`output_json`], the core's one output encoding ([`super::encode`]).
//!
//! [`Output`]: super::Output
//! Field names follow `@rindle/room` 0.9's `WasmRoom` API (`clientID`, `maxFlushSeq`, …);
//! frame texts travel as
//! JSON strings.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::Value as Json;

use super::journal_record::{self, JournalRecord};
use super::{
    ApplyResult, AuthorityError, AuthorityReply, ControlRequest, DriverLimits, FlushRecord,
    HostConfig, Input, JournalContents, JournalEntry, JournalError, MintError, WriteSettings,
};
use crate::json::write::{write_f64, write_str};

pub use super::encode::output_json;
pub use super::JsonError;

/// A document that is not JSON.
fn syntax(what: &'static str, e: &serde_json::Error) -> JsonError {
    JsonError::Syntax {
        what,
        message: e.to_string(),
    }
}

fn num(v: &Json, key: &str, default: u64) -> Result<u64, JsonError> {
    match v.get(key) {
        None | Some(Json::Null) => Ok(default),
        Some(n) => n
            .as_u64()
            .ok_or_else(|| format!("`{key}` must be a non-negative integer, got {n}").into()),
    }
}

/// The host configuration: `{docId, tokenKeys: [[kid, secret]], idleTtlMs?,
/// sweepIntervalMs?, revocationWindowMs?, sendBudgetBytes?, firstFrameTimeoutMs?,
/// maxSubscriptionsPerConn?, maxSnapshotBytes?, maxMaterializations?, maxQueryBytes?,
/// maxHeldRows?, upstreamClientId?, entropy (64 hex), writes?: {ownedTables, scopes?, groupCommitMs?,
/// flushDebounceMs?, flushDirtyMax?, authority, ack?: "journaled" | "flushed"},
/// placement?: {epoch, leaseToken}}`
/// (`placement`: what room-boot granted; see [`Placement`](super::Placement)), revoked?:
/// [[userId, atMs]] (revocations carried over from the box), maxRoomBytes?.
/// A field left out (or `null`) takes its value from [`HostConfig::default`] /
/// [`WriteSettings::default`].
pub fn config_from_json(json: &str) -> Result<HostConfig, JsonError> {
    let v: Json = serde_json::from_str(json).map_err(|e| syntax("config", &e))?;
    let doc = v["docId"]
        .as_str()
        .filter(|d| !d.is_empty())
        .ok_or_else(|| String::from("`docId` must be a non-empty string"))?;
    let keys: Vec<(String, String)> = v["tokenKeys"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| Some((p[0].as_str()?.to_string(), p[1].as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let mut cfg = HostConfig::new(doc, keys);
    cfg.idle_ttl_ms = num(&v, "idleTtlMs", cfg.idle_ttl_ms)?;
    cfg.sweep_interval_ms = num(&v, "sweepIntervalMs", cfg.sweep_interval_ms)?.max(1);
    cfg.revocation_window_ms = num(&v, "revocationWindowMs", cfg.revocation_window_ms)?;
    cfg.send_budget_bytes = num(&v, "sendBudgetBytes", cfg.send_budget_bytes as u64)? as usize;
    cfg.first_frame_timeout_ms = num(&v, "firstFrameTimeoutMs", cfg.first_frame_timeout_ms)?;
    cfg.max_subscriptions_per_conn = num(
        &v,
        "maxSubscriptionsPerConn",
        cfg.max_subscriptions_per_conn as u64,
    )? as usize;
    cfg.max_snapshot_bytes = num(&v, "maxSnapshotBytes", cfg.max_snapshot_bytes as u64)? as usize;
    cfg.max_materializations =
        num(&v, "maxMaterializations", cfg.max_materializations as u64)? as usize;
    cfg.max_query_bytes = num(&v, "maxQueryBytes", cfg.max_query_bytes as u64)? as usize;
    cfg.max_held_rows = num(&v, "maxHeldRows", cfg.max_held_rows as u64)? as usize;
    cfg.startup_timeout_ms = num(&v, "startupTimeoutMs", cfg.startup_timeout_ms)?;
    cfg.upstream_client_id = v["upstreamClientId"].as_str().map(str::to_string);
    cfg.upstream_silence_timeout_ms = num(
        &v,
        "upstreamSilenceTimeoutMs",
        cfg.upstream_silence_timeout_ms,
    )?;
    cfg.silence_timeout_ms = num(&v, "silenceTimeoutMs", cfg.silence_timeout_ms)?;
    if let Some(hex) = v["entropy"].as_str() {
        for (i, b) in cfg.entropy.iter_mut().enumerate() {
            *b = hex
                .get(i * 2..i * 2 + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| String::from("`entropy` must be 64 hex characters"))?;
        }
    }
    if let Some(p) = v.get("placement").filter(|p| !p.is_null()) {
        cfg.placement = Some(super::Placement {
            epoch: p["epoch"]
                .as_u64()
                .ok_or_else(|| String::from("`placement.epoch` must be a non-negative integer"))?,
            lease_token: p["leaseToken"]
                .as_str()
                .filter(|t| !t.is_empty())
                .ok_or_else(|| String::from("`placement.leaseToken` must be a non-empty string"))?
                .to_string(),
        });
    }
    if let Some(b) = v.get("maxRoomBytes").filter(|b| !b.is_null()) {
        cfg.max_room_bytes = Some(
            b.as_u64()
                .ok_or_else(|| String::from("`maxRoomBytes` must be a non-negative integer"))?,
        );
    }
    if let Some(list) = v.get("revoked").filter(|r| !r.is_null()) {
        let bad = || String::from("`revoked` must be an array of [userId, atMs] pairs");
        for pair in list.as_array().ok_or_else(bad)? {
            let user = pair[0].as_str().filter(|u| !u.is_empty()).ok_or_else(bad)?;
            let at = pair[1].as_u64().ok_or_else(bad)?;
            cfg.revoked.push((user.to_string(), at));
        }
    }
    if let Some(w) = v.get("writes").filter(|w| !w.is_null()) {
        let d = WriteSettings::default();
        cfg.writes = Some(WriteSettings {
            owned_tables: w["ownedTables"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|t| t.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            scopes: w.get("scopes").filter(|s| !s.is_null()).cloned(),
            group_commit_ms: num(w, "groupCommitMs", d.group_commit_ms)?,
            flush_debounce_ms: num(w, "flushDebounceMs", d.flush_debounce_ms)?,
            flush_dirty_max: num(w, "flushDirtyMax", d.flush_dirty_max as u64)? as usize,
            authority: w["authority"].as_bool().unwrap_or(false),
            ack_after_flush: match w.get("ack") {
                None | Some(Json::Null) => false,
                Some(Json::String(m)) if m == "journaled" => false,
                Some(Json::String(m)) if m == "flushed" => true,
                Some(other) => {
                    return Err(format!(
                        "`writes.ack` must be \"journaled\" or \"flushed\", got {other}"
                    )
                    .into())
                }
            },
        });
    }
    Ok(cfg)
}

/// Every default a driver fills in, as one JSON object: the host's settings under the
/// names [`config_from_json`] reads (`idleTtlMs`, …, `startupTimeoutMs`, `writes:
/// {groupCommitMs, …}`) and the [`DriverLimits`] (`maxFrameBytes`, `maxInboundBytes`,
/// `maxUnsentBytes`, `maxConnections`, `handshakeTimeoutMs`, `closeGraceMs`) — what
/// a driver in another language shows or uses instead of writing the numbers again.
pub fn defaults_json() -> String {
    let h = HostConfig::default();
    let w = WriteSettings::default();
    let d = DriverLimits::default();
    format!(
        "{{\"idleTtlMs\":{},\"sweepIntervalMs\":{},\"revocationWindowMs\":{},\
         \"sendBudgetBytes\":{},\"firstFrameTimeoutMs\":{},\"maxSubscriptionsPerConn\":{},\
         \"maxSnapshotBytes\":{},\"maxMaterializations\":{},\"maxQueryBytes\":{},\"maxHeldRows\":{},\
         \"startupTimeoutMs\":{},\
         \"upstreamSilenceTimeoutMs\":{},\"silenceTimeoutMs\":{},\
         \"writes\":{{\"groupCommitMs\":{},\"flushDebounceMs\":{},\"flushDirtyMax\":{}}},\
         \"maxFrameBytes\":{},\"maxInboundBytes\":{},\"maxUnsentBytes\":{},\
         \"maxConnections\":{},\"handshakeTimeoutMs\":{},\"closeGraceMs\":{},\
         \"heardEveryMs\":{},\"upstreamMaxFrameBytes\":{}}}",
        h.idle_ttl_ms,
        h.sweep_interval_ms,
        h.revocation_window_ms,
        h.send_budget_bytes,
        h.first_frame_timeout_ms,
        h.max_subscriptions_per_conn,
        h.max_snapshot_bytes,
        h.max_materializations,
        h.max_query_bytes,
        h.max_held_rows,
        h.startup_timeout_ms,
        h.upstream_silence_timeout_ms,
        h.silence_timeout_ms,
        w.group_commit_ms,
        w.flush_debounce_ms,
        w.flush_dirty_max,
        d.max_frame_bytes,
        d.max_inbound_bytes,
        d.max_unsent_bytes,
        d.max_connections,
        d.handshake_timeout_ms,
        d.close_grace_ms,
        super::HEARD_EVERY_MS,
        d.max_upstream_frame_bytes,
    )
}

/// Journal contents: `{entries: [record], flushes: [{seq, epoch, body}], maxFlushSeq,
/// bindings?: [[clientID, sub]]}`. Each record is what [`journal_record`] encodes,
/// either as the opaque string a JavaScript journal keeps or as the JSON object itself;
/// `bindings` (optional) lists clientID → subject pairs a journal kept past compaction
/// beside its records. The host derives the entries' bindings itself.
pub fn contents_from_json(json: &str) -> Result<JournalContents, JsonError> {
    let v: Json = serde_json::from_str(json).map_err(|e| syntax("journal contents", &e))?;
    let mut entries = Vec::new();
    let mut bindings = Vec::new();
    for record in records_from_json(&v["entries"])? {
        match record {
            JournalRecord::Entry(e) => entries.push(e),
            JournalRecord::Binding { client_id, sub } => bindings.push((client_id, sub)),
        }
    }
    if let Some(pairs) = v["bindings"].as_array() {
        bindings.extend(
            pairs
                .iter()
                .filter_map(|p| Some((p[0].as_str()?.to_string(), p[1].as_str()?.to_string()))),
        );
    }
    let flushes = v["flushes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|r| {
                    Some(FlushRecord {
                        seq: r["seq"].as_u64()?,
                        epoch: r["epoch"].as_u64()?,
                        body: r["body"].as_str()?.to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(JournalContents {
        entries,
        bindings,
        flushes,
        max_flush_seq: v["maxFlushSeq"].as_u64().unwrap_or(0),
    })
}

/// Journal records from a JSON array (absent or `null` = none): each an opaque record
/// string or the record's JSON object, decoded by [`journal_record::decode`].
pub fn records_from_json(v: &Json) -> Result<Vec<JournalRecord>, JsonError> {
    let Some(items) = v.as_array() else {
        return match v {
            Json::Null => Ok(Vec::new()),
            other => Err(format!("journal records must be an array, got {other}").into()),
        };
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let decoded = match item {
                Json::String(text) => journal_record::decode(text.as_bytes()),
                Json::Object(_) => journal_record::decode(item.to_string().as_bytes()),
                other => {
                    return Err(format!("journal record {index}: not a record: {other}").into())
                }
            };
            decoded.map_err(|error| JsonError::Record { index, error })
        })
        .collect()
}

/// Entries as a JSON array of their records' JSON objects (the C library's
/// `journalAppend`).
pub fn entries_json(entries: &[JournalEntry]) -> String {
    let mut s = String::from("[");
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&journal_record::encode_entry(e));
    }
    s.push(']');
    s
}

/// Entries as a JSON array of opaque record strings (what a JavaScript journal stores).
pub fn records_json(entries: &[JournalEntry]) -> String {
    let mut s = String::from("[");
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        write_str(&mut s, &journal_record::encode_entry(e));
    }
    s.push(']');
    s
}

/// What the host reads at boot, as JSON (`RoomHost.journalRead`'s format): the kept
/// bindings as binding records, then the entries, all as opaque record strings.
pub fn contents_json(c: &JournalContents) -> String {
    let mut s = String::from("{\"entries\":[");
    let bindings = c
        .bindings
        .iter()
        .map(|(client, sub)| journal_record::encode_binding(client, sub));
    let entries = c.entries.iter().map(journal_record::encode_entry);
    for (i, record) in bindings.chain(entries).enumerate() {
        if i > 0 {
            s.push(',');
        }
        write_str(&mut s, &record);
    }
    s.push_str("],\"flushes\":[");
    for (i, r) in c.flushes.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!(
            "{{\"seq\":{},\"epoch\":{},\"body\":",
            r.seq, r.epoch
        ));
        write_str(&mut s, &r.body);
        s.push('}');
    }
    s.push_str(&format!("],\"maxFlushSeq\":{}}}", c.max_flush_seq));
    s
}

/// An authority result: `{claimed}`, `{lmids}`, `{applied: AuthorityApplyResult}`,
/// `{retryable: message}` or `{fatal: message}`.
pub fn authority_result_from_json(json: &str) -> Result<AuthorityReply, AuthorityError> {
    let v: Json = serde_json::from_str(json)
        .map_err(|e| AuthorityError::Fatal(format!("authority result: {e}")))?;
    if let Some(m) = v.get("retryable") {
        return Err(AuthorityError::Retryable(
            m.as_str().unwrap_or("").to_string(),
        ));
    }
    if let Some(m) = v.get("fatal") {
        return Err(AuthorityError::Fatal(m.as_str().unwrap_or("").to_string()));
    }
    if let Some(e) = v.get("claimed") {
        return e
            .as_u64()
            .map(AuthorityReply::Claimed)
            .ok_or_else(|| AuthorityError::Fatal(format!("claimEpoch returned {e}")));
    }
    if let Some(l) = v.get("lmids") {
        let mut out = BTreeMap::new();
        if let Some(map) = l.as_object() {
            for (c, n) in map {
                out.insert(c.clone(), n.as_u64().unwrap_or(0));
            }
        }
        return Ok(AuthorityReply::Lmids(out));
    }
    let a = &v["applied"];
    match a["kind"].as_str() {
        Some("ok") => Ok(AuthorityReply::Applied(ApplyResult::Ok {
            applied: a["applied"].as_bool().unwrap_or(true),
            cv: a["cv"].as_f64(),
        })),
        Some("conflict") => Ok(AuthorityReply::Applied(ApplyResult::Conflict {
            conflicts_json: a["conflicts"].to_string(),
        })),
        Some("fenced") => Ok(AuthorityReply::Applied(ApplyResult::Fenced {
            current_epoch: a["currentEpoch"].as_u64(),
        })),
        _ => Err(AuthorityError::Fatal(format!(
            "applyRowChangeTxn returned an unknown result {a}"
        ))),
    }
}

/// An authority result as [`authority_result_from_json`] reads it: `{claimed}`,
/// `{lmids}`, `{applied: {kind: "ok", applied, cv?} | {kind: "conflict", conflicts} |
/// {kind: "fenced", currentEpoch?}}`, `{retryable}` or `{fatal}` — the forms of the
/// `RoomAuthority` results of `@rindle/room` 0.9's API, for a driver that classifies HTTP replies with
/// [`super::authority_reply`].
pub fn authority_result_json(result: &Result<AuthorityReply, AuthorityError>) -> String {
    let mut s = String::from("{");
    match result {
        Err(AuthorityError::Retryable(m)) => {
            s.push_str("\"retryable\":");
            write_str(&mut s, m);
        }
        Err(AuthorityError::Fatal(m)) => {
            s.push_str("\"fatal\":");
            write_str(&mut s, m);
        }
        Ok(AuthorityReply::Claimed(epoch)) => s.push_str(&format!("\"claimed\":{epoch}")),
        Ok(AuthorityReply::Lmids(map)) => {
            s.push_str("\"lmids\":{");
            for (i, (client, lmid)) in map.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                write_str(&mut s, client);
                s.push_str(&format!(":{lmid}"));
            }
            s.push('}');
        }
        Ok(AuthorityReply::Applied(ApplyResult::Ok { applied, cv })) => {
            s.push_str(&format!(
                "\"applied\":{{\"kind\":\"ok\",\"applied\":{applied}"
            ));
            if let Some(cv) = cv {
                s.push_str(",\"cv\":");
                write_f64(&mut s, *cv);
            }
            s.push('}');
        }
        Ok(AuthorityReply::Applied(ApplyResult::Conflict { conflicts_json })) => {
            s.push_str("\"applied\":{\"kind\":\"conflict\",\"conflicts\":");
            s.push_str(conflicts_json);
            s.push('}');
        }
        Ok(AuthorityReply::Applied(ApplyResult::Fenced { current_epoch })) => {
            s.push_str("\"applied\":{\"kind\":\"fenced\"");
            if let Some(e) = current_epoch {
                s.push_str(&format!(",\"currentEpoch\":{e}"));
            }
            s.push('}');
        }
    }
    s.push('}');
    s
}

/// A control request `{kind, user?}`.
pub fn control_request_from_json(json: &str) -> Result<ControlRequest, JsonError> {
    let v: Json = serde_json::from_str(json).map_err(|e| syntax("control", &e))?;
    Ok(match v["kind"].as_str() {
        Some("stats") => ControlRequest::Stats,
        Some("health") => ControlRequest::Health,
        Some("ready") => ControlRequest::Ready,
        Some("revoke") => ControlRequest::Revoke {
            user: v["user"].as_str().unwrap_or("").to_string(),
        },
        Some("drain") => ControlRequest::Drain,
        Some("flushNow") => ControlRequest::FlushNow,
        Some("shutdown") => ControlRequest::Shutdown,
        Some("abort") => ControlRequest::Abort,
        Some("close") => ControlRequest::Close,
        other => return Err(format!("control: unknown request {other:?}").into()),
    })
}

fn field_u64(v: &Json, k: &str) -> Result<u64, JsonError> {
    v[k].as_u64()
        .ok_or_else(|| format!("input: `{k}` must be a non-negative integer").into())
}

fn field_str<'a>(v: &'a Json, k: &str) -> Result<&'a str, JsonError> {
    v[k].as_str()
        .ok_or_else(|| format!("input: `{k}` must be a string").into())
}

/// Parses one input `{"t": <kind>, …}` (the kinds of [`Input`] in lower camel case:
/// `leaseMinted {token | status, body | error}`, `upstreamOpened {link}`, `upstreamFrame {link, text}`,
/// `upstreamClosed {link, error?}`, `upstreamHeard {link}`, `connOpened {conn}`,
/// `connFrame {conn, text}`, `connHeard {conn}`, `connClosed {conn}`, `journalRead {io, contents | error}`, `journalWritten {io,
/// error?}`, `authority {io, result}`, `control {id, request}`) and hands it to `f`.
pub fn with_input_json<R>(json: &str, f: impl FnOnce(Input<'_>) -> R) -> Result<R, JsonError> {
    let v: Json = serde_json::from_str(json).map_err(|e| syntax("input", &e))?;
    let opt_err = |v: &Json| v["error"].as_str().map(String::from);
    let input = match v["t"].as_str() {
        Some("leaseMinted") => Input::LeaseMinted(match (v["token"].as_str(), &v["status"]) {
            (Some(t), _) => Ok(t.to_string()),
            (None, Json::Number(status)) => {
                let status = status.as_u64().and_then(|s| u16::try_from(s).ok());
                let status = status.ok_or("input: `status` must be an HTTP status")?;
                super::lease_reply(status, v["body"].as_str().unwrap_or_default())
            }
            _ => Err(MintError::Transport(opt_err(&v).unwrap_or_default())),
        }),
        Some("upstreamOpened") => Input::UpstreamOpened {
            link: field_u64(&v, "link")?,
        },
        Some("upstreamFrame") => Input::UpstreamFrame {
            link: field_u64(&v, "link")?,
            text: field_str(&v, "text")?,
        },
        Some("upstreamClosed") => Input::UpstreamClosed {
            link: field_u64(&v, "link")?,
            error: v["error"].as_str(),
        },
        Some("upstreamHeard") => Input::UpstreamHeard {
            link: field_u64(&v, "link")?,
        },
        Some("connHeard") => Input::ConnHeard {
            conn: field_u64(&v, "conn")?,
        },
        Some("connOpened") => Input::ConnOpened {
            conn: field_u64(&v, "conn")?,
        },
        Some("connFrame") => Input::ConnFrame {
            conn: field_u64(&v, "conn")?,
            text: field_str(&v, "text")?,
        },
        Some("connClosed") => Input::ConnClosed {
            conn: field_u64(&v, "conn")?,
        },
        Some("journalRead") => Input::JournalRead {
            io: field_u64(&v, "io")?,
            result: match opt_err(&v) {
                Some(e) => Err(JournalError::Io(e)),
                None => contents_from_json(&v["contents"].to_string())
                    .map_err(|e| JournalError::Unreadable(e.to_string())),
            },
        },
        Some("journalWritten") => Input::JournalWritten {
            io: field_u64(&v, "io")?,
            result: opt_err(&v).map_or(Ok(()), |e| Err(JournalError::Io(e))),
        },
        Some("authority") => Input::Authority {
            io: field_u64(&v, "io")?,
            result: authority_result_from_json(&v["result"].to_string()),
        },
        Some("control") => Input::Control {
            id: field_u64(&v, "id")?,
            request: control_request_from_json(&v["request"].to_string())?,
        },
        other => return Err(JsonError::Invalid(format!("input: unknown kind {other:?}"))),
    };
    Ok(f(input))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(json: &str) -> Result<String, MintError> {
        with_input_json(json, |input| match input {
            Input::LeaseMinted(r) => r,
            other => panic!("not a lease: {other:?}"),
        })
        .expect("a valid input")
    }

    #[test]
    fn a_lease_answer_is_read_by_the_host_and_classified() {
        assert_eq!(
            lease(r#"{"t":"leaseMinted","token":"l1"}"#),
            Ok("l1".into())
        );
        let ok = r#"{"t":"leaseMinted","status":200,"body":"{\"leaseToken\":\"l2\"}"}"#;
        assert_eq!(lease(ok), Ok("l2".into()));
        let busy = lease(r#"{"t":"leaseMinted","status":503,"body":"busy"}"#).unwrap_err();
        assert!(busy.is_transient(), "{busy}");
        let refused = lease(r#"{"t":"leaseMinted","status":401,"body":"no"}"#).unwrap_err();
        assert!(!refused.is_transient());
        assert_eq!(refused.to_string(), "upstream /materialize failed: 401 no");
        let down = lease(r#"{"t":"leaseMinted","error":"connect refused"}"#).unwrap_err();
        assert!(down.is_transient());
        let bad = with_input_json(r#"{"t":"leaseMinted","status":70000}"#, |_| ());
        assert!(bad.is_err());
    }
}
