//! The documented defaults are the ones the code uses. Every default the server, the
//! Node shell and the host share is written once, in the core (`HostConfig::default`,
//! `WriteSettings::default`, `DriverLimits::default`); this test reads the values the
//! documentation states and compares them:
//!
//! - `docs/config.md`: every `Default` cell that holds a literal, against the
//!   configuration the server parses from a file that sets nothing optional (whose
//!   shared defaults are in turn checked against the core's);
//! - the Node shell's references (`bindings-node/index.d.ts`, `docs/node-shell.md`,
//!   `docs/security.md`): every `(default …)` and `` `option` (…) `` of an option the
//!   core has a default for, against `json::defaults_json`.

use std::collections::BTreeMap;
use std::path::Path;

use rindle_room_core::host::{json, DriverLimits, HostConfig, WriteSettings};
use rindle_room_smol::config::{Config, JournalConfig};
use serde_json::Value as Json;

fn read(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A file with every section and nothing optional set.
const EVERY_SECTION: &str = r#"
[upstream]
ws_url = "ws://127.0.0.1:7601"
control_url = "http://127.0.0.1:7600"
footprint_ast = '{"table":"note"}'

[downstream]
doc_id = "d"

[downstream.token_keys]
k1 = "secret"

[control]
auth_token = "t"

[writes]
owned_tables = ["note"]

[fleet]
api_url = "http://127.0.0.1:3000"
"#;

/// `section.option` → the default the server uses, as the docs would write it.
fn server_defaults() -> BTreeMap<String, String> {
    let c = Config::parse(EVERY_SECTION).expect("the file parses");
    let (s, d, ctl) = (&c.server, &c.downstream, c.control.as_ref().unwrap());
    let (w, f) = (c.writes.as_ref().unwrap(), c.fleet.as_ref().unwrap());
    let u = c.upstream.as_ref().unwrap();
    let lower = |v: &dyn std::fmt::Debug| format!("{v:?}").to_lowercase();
    let journal = match w.journal {
        JournalConfig::Memory => "memory",
        JournalConfig::File { .. } => "file",
    };
    let entries: Vec<(&str, String)> = vec![
        ("server.bind", s.bind.clone()),
        ("server.port", s.port.to_string()),
        ("server.log_format", lower(&s.log_format)),
        ("server.max_frame_bytes", s.max_frame_bytes.to_string()),
        ("server.max_inbound_bytes", s.max_inbound_bytes.to_string()),
        ("server.max_unsent_bytes", s.max_unsent_bytes.to_string()),
        (
            "server.handshake_timeout_ms",
            s.handshake_timeout_ms.to_string(),
        ),
        (
            "server.startup_timeout_ms",
            s.startup_timeout_ms.to_string(),
        ),
        ("downstream.idle_ttl_ms", d.idle_ttl_ms.to_string()),
        (
            "downstream.sweep_interval_ms",
            d.sweep_interval_ms.to_string(),
        ),
        (
            "downstream.revocation_window_ms",
            d.revocation_window_ms.to_string(),
        ),
        (
            "downstream.send_budget_bytes",
            d.send_budget_bytes.to_string(),
        ),
        (
            "downstream.first_frame_timeout_ms",
            d.first_frame_timeout_ms.to_string(),
        ),
        (
            "downstream.max_subscriptions_per_conn",
            d.max_subscriptions_per_conn.to_string(),
        ),
        (
            "downstream.max_snapshot_bytes",
            d.max_snapshot_bytes.to_string(),
        ),
        (
            "downstream.max_materializations",
            d.max_materializations.to_string(),
        ),
        ("downstream.max_query_bytes", d.max_query_bytes.to_string()),
        ("downstream.max_held_rows", d.max_held_rows.to_string()),
        (
            "downstream.silence_timeout_ms",
            d.silence_timeout_ms.to_string(),
        ),
        (
            "upstream.silence_timeout_ms",
            u.silence_timeout_ms.to_string(),
        ),
        ("upstream.max_frame_bytes", u.max_frame_bytes.to_string()),
        ("control.port", ctl.port.to_string()),
        ("control.bind", ctl.bind.clone()),
        ("writes.group_commit_ms", w.group_commit_ms.to_string()),
        ("writes.flush_debounce_ms", w.flush_debounce_ms.to_string()),
        ("writes.flush_dirty_max", w.flush_dirty_max.to_string()),
        ("writes.crud", w.crud.to_string()),
        ("writes.journal.kind", journal.to_string()),
        ("fleet.boot_path", f.boot_path.clone()),
        ("fleet.boot_timeout_ms", f.boot_timeout_ms.to_string()),
        ("fleet.idle_evict_ms", f.idle_evict_ms.to_string()),
        ("fleet.max_rooms", f.max_rooms.to_string()),
        (
            "fleet.max_boots_in_flight",
            f.max_boots_in_flight.to_string(),
        ),
        ("fleet.refused_doc_ttl_ms", f.refused_doc_ttl_ms.to_string()),
        ("fleet.ack", lower(&f.ack)),
        ("fleet.journal_sync", lower(&f.journal_sync)),
        (
            "fleet.upstream_silence_timeout_ms",
            f.upstream_silence_timeout_ms.to_string(),
        ),
        (
            "fleet.upstream_max_frame_bytes",
            f.upstream_max_frame_bytes.to_string(),
        ),
    ];
    entries
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// The cells of a Markdown table row (`\|` inside a cell is not a separator).
fn cells(row: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = row.trim().trim_matches('|').chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                out.last_mut().unwrap().push('|');
                chars.next();
            }
            '|' => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out.into_iter().map(|c| c.trim().to_string()).collect()
}

/// The literal a `Default` cell starts with: `` `5000` `` → `5000`, `` `"text"` `` →
/// `text`, `` `false` `` → `false`; `None` for prose (`none`, `—`, a derived default) and
/// for templates (`"room-shell-<bootId>"`) and tables (`{}`).
fn literal(cell: &str) -> Option<String> {
    let rest = cell.strip_prefix('`')?;
    let lit = &rest[..rest.find('`')?];
    if lit.contains('<') || lit.starts_with('{') {
        return None;
    }
    if let Some(s) = lit.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        return Some(s.to_string());
    }
    (lit.parse::<u64>().is_ok() || lit == "true" || lit == "false").then(|| lit.to_string())
}

/// `section.option` → the literal default `docs/config.md` states.
fn documented_server_defaults() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut section = None;
    for line in read("docs/config.md").lines() {
        if line.starts_with('#') {
            section = line
                .split_once("`[")
                .and_then(|(_, r)| r.split_once("]`"))
                .map(|(s, _)| s.to_string())
                .filter(|s| s != "mutators");
            continue;
        }
        let Some(section) = &section else { continue };
        if !line.starts_with("| `") {
            continue;
        }
        let row = cells(line);
        let option = row[0].trim_matches('`');
        if let Some(value) = row.get(2).and_then(|c| literal(c)) {
            out.insert(format!("{section}.{option}"), value);
        }
    }
    out
}

#[test]
fn config_md_states_the_defaults_the_server_uses() {
    let documented = documented_server_defaults();
    let used = server_defaults();
    for (option, value) in &documented {
        let got = used.get(option).unwrap_or_else(|| {
            panic!(
                "docs/config.md states a default for `{option}` ({value}) that this test does \
                 not know: add it to server_defaults()"
            )
        });
        assert_eq!(got, value, "docs/config.md: the default of `{option}`");
    }
    for option in used.keys() {
        assert!(
            documented.contains_key(option),
            "docs/config.md states no literal default for `{option}`"
        );
    }
}

#[test]
fn the_server_takes_its_shared_defaults_from_the_core() {
    let c = Config::parse(EVERY_SECTION).expect("the file parses");
    let (h, w, d) = (
        HostConfig::default(),
        WriteSettings::default(),
        DriverLimits::default(),
    );
    let (ds, wc, s) = (&c.downstream, c.writes.as_ref().unwrap(), &c.server);
    let pairs: [(&str, u64, u64); 18] = [
        ("idle_ttl_ms", ds.idle_ttl_ms, h.idle_ttl_ms),
        (
            "sweep_interval_ms",
            ds.sweep_interval_ms,
            h.sweep_interval_ms,
        ),
        (
            "revocation_window_ms",
            ds.revocation_window_ms,
            h.revocation_window_ms,
        ),
        (
            "send_budget_bytes",
            ds.send_budget_bytes as u64,
            h.send_budget_bytes as u64,
        ),
        (
            "first_frame_timeout_ms",
            ds.first_frame_timeout_ms,
            h.first_frame_timeout_ms,
        ),
        (
            "max_subscriptions_per_conn",
            ds.max_subscriptions_per_conn as u64,
            h.max_subscriptions_per_conn as u64,
        ),
        (
            "max_snapshot_bytes",
            ds.max_snapshot_bytes as u64,
            h.max_snapshot_bytes as u64,
        ),
        (
            "max_materializations",
            ds.max_materializations as u64,
            h.max_materializations as u64,
        ),
        (
            "max_query_bytes",
            ds.max_query_bytes as u64,
            h.max_query_bytes as u64,
        ),
        (
            "max_held_rows",
            ds.max_held_rows as u64,
            h.max_held_rows as u64,
        ),
        ("group_commit_ms", wc.group_commit_ms, w.group_commit_ms),
        (
            "flush_debounce_ms",
            wc.flush_debounce_ms,
            w.flush_debounce_ms,
        ),
        (
            "flush_dirty_max",
            wc.flush_dirty_max as u64,
            w.flush_dirty_max as u64,
        ),
        (
            "max_frame_bytes",
            s.max_frame_bytes as u64,
            d.max_frame_bytes as u64,
        ),
        (
            "max_inbound_bytes",
            s.max_inbound_bytes as u64,
            d.max_inbound_bytes as u64,
        ),
        (
            "max_unsent_bytes",
            s.max_unsent_bytes as u64,
            d.max_unsent_bytes as u64,
        ),
        (
            "handshake_timeout_ms",
            s.handshake_timeout_ms,
            d.handshake_timeout_ms,
        ),
        (
            "startup_timeout_ms",
            s.startup_timeout_ms,
            HostConfig::default().startup_timeout_ms,
        ),
    ];
    for (option, server, core) in pairs {
        assert_eq!(
            server, core,
            "`{option}`: the server's default is not the core's"
        );
    }
}

/// A documented quantity at the start of `text`: `1 MiB`, `5000 ms`, `30 min`, `10,000`,
/// `5` — in bytes or milliseconds when it has a unit. `None` if `text` starts otherwise.
fn quantity(text: &str) -> Option<u64> {
    let text = text.trim_start();
    let mut digits = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else if c == ','
            && rest[1..].len() >= 3
            && rest[1..4].bytes().all(|b| b.is_ascii_digit())
            && !digits.is_empty()
        {
            // A thousands separator.
        } else {
            break;
        }
        rest = &rest[c.len_utf8()..];
    }
    let n: u64 = digits.parse().ok()?;
    let unit = rest
        .strip_prefix(' ')
        .map(|r| {
            r.split(|c: char| !c.is_ascii_alphabetic())
                .next()
                .unwrap_or("")
        })
        .unwrap_or("");
    Some(match unit {
        "MiB" => n * 1024 * 1024,
        "KiB" => n * 1024,
        "ms" => n,
        "s" => n * 1000,
        "min" => n * 60_000,
        _ => n,
    })
}

/// The core's default of a Node option (`idleTtlMs`, `groupCommitMs`, …), if it has one.
/// An option of `UpstreamOptions` is the configuration's `upstream…` one
/// (`silenceTimeoutMs` there is `upstreamSilenceTimeoutMs`).
fn node_default(defaults: &Json, interface: &str, name: &str) -> Option<u64> {
    if interface == "UpstreamOptions" {
        let mut key = String::from("upstream");
        let mut chars = name.chars();
        key.extend(chars.next().map(|c| c.to_ascii_uppercase()));
        key.push_str(chars.as_str());
        return defaults.get(&key).and_then(Json::as_u64);
    }
    defaults
        .get(name)
        .or_else(|| defaults["writes"].get(name))
        .and_then(Json::as_u64)
}

#[test]
fn the_node_shell_typings_state_the_core_defaults() {
    let defaults: Json = serde_json::from_str(&json::defaults_json()).unwrap();
    let mut comment = String::new();
    let mut checked = Vec::new();
    let mut interface = "";
    for line in read("bindings-node/index.d.ts").lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("export interface ") {
            interface = rest.split([' ', '{', '<']).next().unwrap_or("");
        }
        if t.starts_with("/**") {
            comment.clear();
        }
        if t.starts_with("/**") || t.starts_with('*') {
            comment.push(' ');
            comment.push_str(t.trim_start_matches("/**").trim_start_matches('*'));
            continue;
        }
        let Some((name, _)) = t.split_once("?: number;") else {
            comment.clear();
            continue;
        };
        let Some(want) = node_default(&defaults, interface, name) else {
            continue;
        };
        let text = comment.split_whitespace().collect::<Vec<_>>().join(" ");
        let stated = text
            .split_once("(default ")
            .and_then(|(_, r)| quantity(r))
            .unwrap_or_else(|| panic!("index.d.ts: `{name}` states no default ({text})"));
        assert_eq!(stated, want, "index.d.ts: the default of `{name}`");
        checked.push(name.to_string());
    }
    assert!(checked.len() >= 10, "checked only {checked:?}");
}

#[test]
fn the_node_shell_docs_state_the_core_defaults() {
    let defaults: Json = serde_json::from_str(&json::defaults_json()).unwrap();
    let mut checked = 0;
    for doc in ["docs/node-shell.md", "docs/security.md"] {
        // Prose only: a table row's parenthesis is not a default (`maxFrameBytes` (1009)).
        let prose: Vec<String> = read(doc)
            .lines()
            .filter(|l| !l.trim_start().starts_with('|'))
            .map(String::from)
            .collect();
        let text = prose
            .join(" ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for (i, _) in text.match_indices("` (") {
            let name = text[..i].rsplit('`').next().unwrap_or("");
            let (interface, name) = match name.strip_prefix("upstream.") {
                Some(name) => ("UpstreamOptions", name),
                None => ("", name.strip_prefix("downstream.").unwrap_or(name)),
            };
            let Some(want) = node_default(&defaults, interface, name) else {
                continue;
            };
            let Some(stated) = quantity(&text[i + 3..]) else {
                continue;
            };
            assert_eq!(stated, want, "{doc}: the default of `{name}`");
            checked += 1;
        }
    }
    assert!(checked >= 4, "checked only {checked} defaults");
}
