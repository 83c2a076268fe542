//! Parsing the TOML text: the shape of the file, with the TOML deserializer's errors
//! restated to name the option in full, with the line, column and a caret snippet.

use super::error::ErrorInner;
use super::{invalid, Config, ConfigError};

impl Config {
    /// Parses TOML text into a configuration: the shape only (unknown options, missing
    /// required options, wrong types, malformed mutator steps). No environment
    /// overrides, no validation.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|e| syntax_error(text, &e))?;
        check_raw(text)?;
        Ok(config)
    }
}

/// Checks serde cannot express: a memory journal takes no other keys.
fn check_raw(text: &str) -> Result<(), ConfigError> {
    let Ok(root) = toml::from_str::<toml::Table>(text) else {
        return Ok(());
    };
    let journal = root
        .get("writes")
        .and_then(|w| w.get("journal"))
        .and_then(toml::Value::as_table);
    if let Some(journal) = journal {
        if journal.get("kind").and_then(toml::Value::as_str) == Some("memory") {
            if let Some(extra) = journal.keys().find(|k| k.as_str() != "kind") {
                return Err(invalid(
                    format!("writes.journal.{extra}"),
                    format!(
                        "unknown option `writes.journal.{extra}`: a memory journal takes only \
                         `kind`; remove it, or set `kind = \"file\"` for a durable journal"
                    ),
                ));
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Parse errors: the TOML deserializer's message, restated with the option's full name.
// ---------------------------------------------------------------------------------------

/// The dotted path of a table header line (`[a.b]` / `[[a.b]]`), if it is one.
fn header_path(line: &str) -> Option<String> {
    let t = line.trim();
    let t = t.split_once('#').map_or(t, |(before, _)| before).trim_end();
    let inner = t
        .strip_prefix("[[")
        .and_then(|r| r.strip_suffix("]]"))
        .or_else(|| t.strip_prefix('[').and_then(|r| r.strip_suffix(']')))?;
    key_path(inner)
}

/// A dotted key (`a.b`, `"a".b`) as `a.b`, or `None` when `text` is not a key.
fn key_path(text: &str) -> Option<String> {
    let segs: Vec<&str> = text.split('.').map(str::trim).collect();
    let ok = segs.iter().all(|s| {
        let s = s
            .strip_prefix('"')
            .and_then(|r| r.strip_suffix('"'))
            .or_else(|| s.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')))
            .unwrap_or(s);
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    });
    ok.then(|| {
        segs.iter()
            .map(|s| s.trim_matches(['"', '\'']))
            .collect::<Vec<_>>()
            .join(".")
    })
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}.{b}"),
    }
}

/// Restates a `toml` error: finds the table and key it is about, names the option in
/// full and says how to fix it, and keeps the line and a caret snippet.
fn syntax_error(text: &str, err: &toml::de::Error) -> ConfigError {
    let raw = err.message().trim().to_string();
    let span = err.span().unwrap_or(0..0);
    let start = span.start.min(text.len());
    let root = span.is_empty() && span.start == 0;
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let line = &text[line_start..line_end];
    let line_no = text[..start].matches('\n').count() + 1;
    let col = text[line_start..start].chars().count() + 1;

    // The table the error is about: the header on this line, else the last header above
    // (plus this line's key when the span points at its value).
    let context = if root {
        String::new()
    } else if let Some(h) = header_path(line) {
        h
    } else {
        let section = text[..line_start]
            .lines()
            .rev()
            .find_map(header_path)
            .unwrap_or_default();
        match line.split_once('=') {
            Some((lhs, _)) if start >= line_start + lhs.len() => match key_path(lhs.trim()) {
                Some(key) => join(&section, &key),
                None => section,
            },
            _ => section,
        }
    };
    let quoted = |prefix: &str| -> Option<(String, String)> {
        let rest = raw.strip_prefix(prefix)?;
        let (name, after) = rest.split_once('`')?;
        Some((name.to_string(), after.to_string()))
    };
    let where_ = |ctx: &str| {
        if ctx.is_empty() {
            String::from("at the top level")
        } else {
            format!("under [{ctx}]")
        }
    };
    let (option, message) = if let Some((name, after)) = quoted("unknown field `") {
        let option = if context == name || context.ends_with(&format!(".{name}")) {
            context.clone()
        } else {
            join(&context, &name)
        };
        let expected = after
            .trim_start_matches(',')
            .trim()
            .strip_prefix("expected ")
            .map(|e| format!(" (expected {e})"))
            .unwrap_or_default();
        let parent = option.rsplit_once('.').map_or("", |(p, _)| p);
        let what = if header_path(line).is_some() {
            "section"
        } else {
            "option"
        };
        (
            option.clone(),
            format!(
                "unknown {what} `{option}` {}{expected}: remove it or fix its spelling",
                where_(parent)
            ),
        )
    } else if let Some((name, _)) = quoted("missing field `") {
        let option = join(&context, &name);
        let message = if context.is_empty() {
            let needs = if name == "downstream" {
                " with `doc_id` and [downstream.token_keys]"
            } else {
                ""
            };
            format!("missing required section [{name}]: add [{name}]{needs} (see docs/config.md)")
        } else if name == "kind" && context.ends_with("journal") {
            format!(
                "missing required option `{option}`: add `kind = \"file\"` (with `path`) or \
                 `kind = \"memory\"` {}",
                where_(&context)
            )
        } else {
            format!(
                "missing required option `{option}`: add `{name} = …` {}",
                where_(&context)
            )
        };
        (option, message)
    } else if let Some((value, after)) = quoted("unknown variant `") {
        let expected = after.trim_start_matches(',').trim().to_string();
        if expected.contains("`file` or `memory`") {
            let option = if context.ends_with(".kind") {
                context.clone()
            } else {
                join(&context, "kind")
            };
            let message = format!(
                "`{option}` = {value:?} is not a journal kind: use \"file\" (with `path`) for \
                 a durable journal or \"memory\" for none"
            );
            (option, message)
        } else {
            let message = format!("`{context}` = {value:?} is not allowed ({expected})");
            (context.clone(), message)
        }
    } else if raw == "duplicate key" {
        (
            context.clone(),
            format!("`{context}` is defined twice: keep one (merge the two if they differ)"),
        )
    } else if context.is_empty() {
        (String::new(), raw.clone())
    } else {
        (context.clone(), format!("`{context}`: {raw}"))
    };

    let width = line_no.to_string().len();
    let caret_len = text[start..span.end.clamp(start, line_end)]
        .chars()
        .count()
        .max(1);
    let pad = " ".repeat(width);
    let snippet = format!(
        "{pad} |\n{line_no} | {line}\n{pad} | {}{}",
        " ".repeat(col - 1),
        "^".repeat(caret_len)
    );
    ConfigError::from(ErrorInner {
        file: None,
        // A whole-document error has no useful line.
        location: (!root).then_some((line_no, col)),
        option: (!option.is_empty()).then_some(option),
        message,
        snippet: (!root).then_some(snippet),
        source: None,
    })
}
