//! The room task's immutable settings, derived once from the [`Config`] (seed 002's
//! constructor checks included).

use serde_json::Value as Json;

use crate::config::Config;

/// The write plane's settings (`WritesOptions`).
#[derive(Clone, Debug)]
pub(crate) struct WriteSettings {
    /// The tables mutators may write.
    pub owned_tables: Vec<String>,
    /// Scope specs (arms the v2 commit gate).
    pub scopes: Option<Json>,
    /// Group-commit window, ms.
    pub group_commit_ms: u64,
    /// Flush debounce, ms.
    pub flush_debounce_ms: u64,
    /// Flush at once at this many dirty keys.
    pub flush_dirty_max: usize,
}

/// Everything the room task reads from the configuration.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub doc_id: String,
    pub token_keys: Vec<(String, String)>,
    pub idle_ttl_ms: u64,
    pub sweep_interval_ms: u64,
    pub revocation_window_ms: u64,
    pub send_budget_bytes: usize,
    /// How long a connection may go without a first `init` / `subscribe`, ms.
    pub first_frame_timeout_ms: u64,
    /// Subscriptions (held ones and lmid ones included) per connection.
    pub max_subscriptions_per_conn: usize,
    /// The largest snapshot frame, and the most unread snapshot bytes per socket.
    pub max_snapshot_bytes: usize,
    /// Materialized queries per room, idle ones included.
    pub max_materializations: usize,
    pub writes: Option<WriteSettings>,
    /// `scopeSpecsHash` of the armed scopes (v2 only): the scope-skew tripwire.
    pub armed_scopes_hash: Option<String>,
}

impl Settings {
    /// Derives the settings; errors are the seed's construction-time refusals.
    pub(crate) fn from_config(config: &Config) -> Result<Settings, String> {
        let d = &config.downstream;
        let writes = match &config.writes {
            None => None,
            Some(w) => {
                if w.owned_tables.is_empty() {
                    return Err(String::from(
                        "writes.ownedTables must name at least one table",
                    ));
                }
                let scopes = w.scopes_json().map_err(|e| e.to_string())?;
                if let Some(scopes) = &scopes {
                    check_scopes_narrow(scopes, &w.owned_tables)?;
                }
                Some(WriteSettings {
                    owned_tables: w.owned_tables.clone(),
                    scopes,
                    group_commit_ms: w.group_commit_ms,
                    flush_debounce_ms: w.flush_debounce_ms,
                    flush_dirty_max: w.flush_dirty_max,
                })
            }
        };
        let armed_scopes_hash = writes.as_ref().and_then(|w| w.scopes.as_ref()).map(|s| {
            let js = rindle_room_core::json::tree::JsValue::from_serde(s);
            rindle_room_core::token::scope_specs_hash(&js)
        });
        Ok(Settings {
            doc_id: d.doc_id.clone(),
            token_keys: d
                .token_keys
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            idle_ttl_ms: d.idle_ttl_ms,
            sweep_interval_ms: d.sweep_interval_ms.max(1),
            revocation_window_ms: d.revocation_window_ms,
            send_budget_bytes: d.send_budget_bytes,
            first_frame_timeout_ms: d.first_frame_timeout_ms,
            max_subscriptions_per_conn: d.max_subscriptions_per_conn,
            max_snapshot_bytes: d.max_snapshot_bytes,
            max_materializations: d.max_materializations,
            writes,
            armed_scopes_hash,
        })
    }
}

/// The boot-wire scopes may only narrow the host's owned set, never extend it.
fn check_scopes_narrow(scopes: &Json, owned: &[String]) -> Result<(), String> {
    let rogue: Vec<&str> = scopes
        .as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(|s| {
            let kind = s
                .get("writable")
                .and_then(|w| w.get("kind"))
                .and_then(Json::as_str);
            kind != Some("none")
        })
        .filter_map(|s| s.get("table").and_then(Json::as_str))
        .filter(|t| !owned.iter().any(|o| o == t))
        .collect();
    if rogue.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = rogue.iter().map(|t| format!("`{t}`")).collect();
    Err(format!(
        "writes.scopes marks {} writable, but the host's writes.ownedTables does not include {} — \
         the boot-wire scopes may only ever narrow the host's owned set, never extend it",
        names.join(", "),
        if rogue.len() == 1 { "it" } else { "them" }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_wider_than_the_owned_set_are_refused() {
        let scopes: Json = serde_json::from_str(
            r#"[{"table":"a","writable":{"kind":"predicate","joinKeyCols":[]}},
                {"table":"b","writable":{"kind":"none"}},
                {"table":"c","writable":{"kind":"predicate","joinKeyCols":[]}}]"#,
        )
        .unwrap();
        assert!(check_scopes_narrow(&scopes, &["a".into(), "c".into()]).is_ok());
        let err = check_scopes_narrow(&scopes, &["a".into()]).unwrap_err();
        assert!(err.starts_with("writes.scopes marks `c` writable"), "{err}");
        assert!(err.contains("does not include it —"), "{err}");
    }
}
