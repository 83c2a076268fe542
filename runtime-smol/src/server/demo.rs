//! The embedded upstream: rows from a JSON file served as a tiny in-process `rindled`,
//! so a room runs with no daemon at all (`rindle-room demo`, or `[demo]` in the config).
//!
//! The file holds `tables` — each `{name, columns, primaryKey, rows}` — and optionally
//! `query`, a wire AST the demo token authorizes. The embedded upstream answers every
//! upstream `subscribe` like the daemon does: a new epoch, `nhello`, the seq-0 `nbatch`
//! with every row, and a `progress`.

use std::fmt;
use std::path::Path;

use rindle_room_core::fingerprint::normalized_fp;
use rindle_room_core::json::tree::JsValue;
use rindle_room_core::json::write::{write_i64, write_str};
use rindle_room_core::token::{self, MintOptions};
use rindle_room_core::value::COMPARATOR_VERSION;
use rindle_room_core::TableSchema;

use super::clock::BoxFuture;
pub use super::error::DemoError;
use super::upstream::{
    ConnectError, FromUpstream, MintError, ToUpstream, UpstreamConnector, UpstreamLink,
};

/// The default demo data (an issue tracker: `issue`, `user`, `comment`).
pub const DEMO_DATA: &str = include_str!("data/demo.json");

/// Parsed demo data.
#[derive(Clone, Debug)]
pub struct DemoData {
    /// The tables, sorted by name (as the daemon lists them in its hello).
    pub tables: Vec<TableSchema>,
    /// Each table's rows as JSON text (`[cell, …]`), in file order, per table.
    rows: Vec<Vec<String>>,
    /// The file's `query`, when it has one.
    pub query: Option<JsValue>,
    /// The file's first table: what the demo's sample lines write to.
    pub first_table: String,
}

fn bad(what: impl fmt::Display) -> DemoError {
    DemoError::Malformed {
        message: what.to_string(),
        path: None,
    }
}

impl DemoData {
    /// Reads a demo file.
    pub fn from_file(path: &Path) -> Result<DemoData, DemoError> {
        let text = std::fs::read_to_string(path).map_err(|source| DemoError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        DemoData::parse(&text).map_err(|e| match e {
            DemoError::Malformed { message, .. } => DemoError::Malformed {
                message,
                path: Some(path.to_path_buf()),
            },
            other => other,
        })
    }

    /// Parses demo data from JSON text.
    pub fn parse(text: &str) -> Result<DemoData, DemoError> {
        let doc = JsValue::parse(text).map_err(|e| bad(format!("not JSON: {e}")))?;
        let Some(JsValue::Arr(tables)) = doc.get("tables") else {
            return Err(bad(
                "`tables` must be an array of {name, columns, primaryKey, rows}",
            ));
        };
        let mut schemas = Vec::new();
        let mut rows = Vec::new();
        for (i, t) in tables.iter().enumerate() {
            let name = t
                .get("name")
                .and_then(JsValue::as_str)
                .ok_or_else(|| bad(format!("tables[{i}].name must be a string")))?;
            let cols: Vec<&str> = match t.get("columns") {
                Some(JsValue::Arr(c)) => c.iter().filter_map(JsValue::as_str).collect(),
                _ => Vec::new(),
            };
            if cols.is_empty() {
                return Err(bad(format!(
                    "table {name:?} needs `columns` (an array of names)"
                )));
            }
            let pk: Vec<usize> = match t.get("primaryKey") {
                Some(JsValue::Arr(k)) => k
                    .iter()
                    .filter_map(JsValue::as_f64)
                    .map(|f| f as usize)
                    .collect(),
                _ => Vec::new(),
            };
            let schema = TableSchema::new(name, &cols, &pk);
            schema
                .validate()
                .map_err(|e| bad(format!("table {name:?}: {e}")))?;
            let mut table_rows = Vec::new();
            if let Some(JsValue::Arr(rs)) = t.get("rows") {
                for (j, r) in rs.iter().enumerate() {
                    let ok = matches!(r, JsValue::Arr(cells)
                        if cells.len() == cols.len()
                            && cells.iter().all(|c| !matches!(c, JsValue::Arr(_) | JsValue::Obj(_))));
                    if !ok {
                        return Err(bad(format!(
                            "table {name:?} row {j} must be an array of {} cells \
                             (null, boolean, number or string)",
                            cols.len()
                        )));
                    }
                    table_rows.push(r.to_js_string());
                }
            }
            schemas.push(schema);
            rows.push(table_rows);
        }
        if schemas.is_empty() {
            return Err(bad("`tables` is empty"));
        }
        // The daemon's hello lists tables sorted by name, and a room refuses any other
        // order: serve the file's tables that way.
        let first_table = schemas[0].name.to_string();
        let mut tables: Vec<(TableSchema, Vec<String>)> = schemas.into_iter().zip(rows).collect();
        tables.sort_by(|a, b| a.0.name.as_bytes().cmp(b.0.name.as_bytes()));
        let (schemas, rows) = tables.into_iter().unzip();
        Ok(DemoData {
            tables: schemas,
            rows,
            query: doc.get("query").cloned(),
            first_table,
        })
    }

    /// The embedded default demo.
    pub fn embedded() -> DemoData {
        // The embedded file is part of the crate and covered by a unit test.
        DemoData::parse(DEMO_DATA).expect("the embedded demo data parses")
    }

    /// The AST the demo token authorizes: the file's `query`, else its first table.
    pub fn demo_query(&self) -> JsValue {
        self.query.clone().unwrap_or_else(|| {
            JsValue::Obj(vec![(
                String::from("table"),
                JsValue::Str(self.first_table.clone()),
            )])
        })
    }

    fn hello_json(&self, epoch: u64) -> String {
        let mut s = String::from("{\"epoch\":");
        write_i64(&mut s, epoch as i64);
        s.push_str(",\"comparatorVersion\":");
        write_i64(&mut s, i64::from(COMPARATOR_VERSION));
        s.push_str(",\"tables\":[");
        for (i, t) in self.tables.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            t.write_json(&mut s);
        }
        s.push_str("],\"normalizedFp\":");
        write_str(&mut s, &normalized_fp(self.tables.iter()));
        s.push('}');
        s
    }

    fn snapshot_json(&self, epoch: u64) -> String {
        let mut s = String::from("{\"epoch\":");
        write_i64(&mut s, epoch as i64);
        s.push_str(",\"seq\":0,\"normalizedFp\":");
        write_str(&mut s, &normalized_fp(self.tables.iter()));
        s.push_str(",\"ops\":[");
        let mut first = true;
        for (t, rows) in self.tables.iter().zip(&self.rows) {
            for row in rows {
                if !first {
                    s.push(',');
                }
                first = false;
                s.push_str("{\"table\":");
                write_str(&mut s, &t.name);
                s.push_str(",\"op\":\"add\",\"row\":");
                s.push_str(row);
                s.push('}');
            }
        }
        s.push_str("],\"cv\":1}");
        s
    }
}

/// A random secret for demo key rings and control tokens: 128 bits from the OS CSPRNG
/// as 32 hex digits.
pub fn random_secret() -> String {
    super::actor::hex(&super::actor::random_bytes::<16>())
}

/// Mints a lease token for the demo (or any room whose key ring is known).
pub fn mint_token(
    doc: &str,
    ast: &JsValue,
    sub: &str,
    kid: &str,
    key: &str,
    ttl_ms: u64,
    now_ms: u64,
) -> Result<String, rindle_room_core::Error> {
    token::mint(&MintOptions {
        doc,
        ast: Some(ast),
        sub,
        kid,
        key,
        ttl_ms: ttl_ms as f64,
        now_ms: now_ms as f64,
        scopes_hash: None,
    })
}

/// The embedded upstream: answers the room's `subscribe` with the demo snapshot.
#[derive(Clone, Debug)]
pub struct DemoUpstream {
    data: DemoData,
    boot_id: String,
}

impl DemoUpstream {
    /// An embedded upstream serving `data`.
    pub fn new(data: DemoData) -> DemoUpstream {
        DemoUpstream {
            data,
            boot_id: format!("demo-{}", super::actor::new_boot_id()),
        }
    }
}

impl UpstreamConnector for DemoUpstream {
    fn mint_lease(&self) -> BoxFuture<'static, Result<String, MintError>> {
        Box::pin(async { Ok(String::from("demo-lease")) })
    }

    fn connect(&self) -> BoxFuture<'static, Result<UpstreamLink, ConnectError>> {
        let me = self.clone();
        Box::pin(async move {
            let (to_upstream, requests) = async_channel::unbounded::<ToUpstream>();
            let (frames, from_upstream) = async_channel::unbounded::<FromUpstream>();
            smol::spawn(async move {
                let mut epoch = 0;
                while let Ok(item) = requests.recv().await {
                    let text = match item {
                        ToUpstream::Frame(text) => text,
                        // The embedded upstream is alive while the process is.
                        ToUpstream::Ping => {
                            let _ = frames.send(FromUpstream::Heard).await;
                            continue;
                        }
                    };
                    let Ok(msg) = JsValue::parse(&text) else {
                        continue;
                    };
                    if msg.get("t").and_then(JsValue::as_str) != Some("subscribe") {
                        continue;
                    }
                    epoch += 1;
                    let mut hello = String::from("{\"t\":\"nhello\",\"queryId\":1,\"hello\":");
                    hello.push_str(&me.data.hello_json(epoch));
                    hello.push_str(",\"bootId\":");
                    write_str(&mut hello, &me.boot_id);
                    hello.push('}');
                    let mut batch = String::from("{\"t\":\"nbatch\",\"queryId\":1,\"batch\":");
                    batch.push_str(&me.data.snapshot_json(epoch));
                    batch.push('}');
                    let progress = String::from("{\"t\":\"progress\",\"frame\":{\"cvMin\":1}}");
                    for f in [hello, batch, progress] {
                        if frames.send(FromUpstream::Frame(f)).await.is_err() {
                            return;
                        }
                    }
                }
            })
            .detach();
            Ok(UpstreamLink {
                to_upstream,
                from_upstream,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rindle_room_core::contract::JsonRoom;

    #[test]
    fn the_embedded_demo_opens_a_room() {
        let data = DemoData::embedded();
        assert_eq!(data.tables.len(), 3);
        let mut room = JsonRoom::open(&data.hello_json(1), 1000.0).unwrap();
        let applied = room.apply(&data.snapshot_json(1)).unwrap();
        assert!(
            applied.starts_with("{\"applied\":\"snapshot\""),
            "{applied}"
        );
        assert!(room.is_live());
    }

    #[test]
    fn secrets_are_128_random_bits_in_hex() {
        let (a, b) = (random_secret(), random_secret());
        assert_eq!(a.len(), 32);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b);
    }

    #[test]
    fn bad_rows_are_named() {
        let err = DemoData::parse(
            r#"{"tables":[{"name":"t","columns":["id"],"primaryKey":[0],"rows":[[1,2]]}]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("row 0 must be an array of 1 cells"), "{err}");
    }
}
