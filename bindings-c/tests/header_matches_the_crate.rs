//! The committed header against the crate: its version macros against `Cargo.toml`, its
//! result codes against `rindle_room_result` (and so the core's `ErrorCode`), its
//! functions against the exported ones; and every exported body behind the panic guard.
//! (That the header is exactly cbindgen's output is checked by `scripts/test-c.sh`.)

use ::rindle_room::rindle_room_result;

const HEADER: &str = include_str!("../../include/rindle_room.h");
const SOURCES: [(&str, &str); 5] = [
    ("room.rs", include_str!("../src/room.rs")),
    ("write.rs", include_str!("../src/write.rs")),
    ("token.rs", include_str!("../src/token.rs")),
    ("buf.rs", include_str!("../src/buf.rs")),
    ("result.rs", include_str!("../src/result.rs")),
];

/// The value of `#define NAME value` in the header.
fn define(name: &str) -> Option<&'static str> {
    HEADER.lines().find_map(|l| {
        let rest = l.strip_prefix("#define ")?.strip_prefix(name)?;
        rest.starts_with(' ').then(|| rest.trim())
    })
}

#[test]
fn version_macros_match_cargo_toml() {
    for (part, value) in [
        ("MAJOR", env!("CARGO_PKG_VERSION_MAJOR")),
        ("MINOR", env!("CARGO_PKG_VERSION_MINOR")),
        ("PATCH", env!("CARGO_PKG_VERSION_PATCH")),
    ] {
        let name = format!("RINDLE_ROOM_VERSION_{part}");
        assert_eq!(define(&name), Some(value), "{name}");
    }
    assert!(define("RINDLE_ROOM_VERSION").is_some());
}

#[test]
fn result_codes_match_the_enum() {
    let mut declared = Vec::new();
    for line in HEADER.lines() {
        let Some(rest) = line.trim().strip_prefix("RINDLE_ROOM_RESULT_") else {
            continue;
        };
        let (name, value) = rest
            .trim_end_matches(',')
            .split_once(" = ")
            .expect("NAME = n");
        declared.push((name.to_owned(), value.parse::<u32>().expect("a number")));
    }
    let expected: Vec<(String, u32)> = rindle_room_result::all()
        .iter()
        .map(|r| (r.name().to_owned(), *r as u32))
        .collect();
    assert_eq!(declared, expected);
}

/// `(file, name, body)` of every exported function.
fn exported() -> Vec<(&'static str, &'static str, &'static str)> {
    let mut found = Vec::new();
    for (file, src) in SOURCES {
        for (i, _) in src.match_indices("extern \"C\" fn ") {
            let rest = &src[i + "extern \"C\" fn ".len()..];
            let name = rest.split('(').next().expect("a name");
            let body = &rest[..rest.find("\n}\n").expect("a body")];
            found.push((file, name, body));
        }
    }
    found
}

#[test]
fn every_exported_function_is_declared() {
    let all = exported();
    assert!(all.len() >= 45, "found {} functions", all.len());
    for (file, name, _) in all {
        assert!(
            HEADER.contains(&format!(" {name}(")) || HEADER.contains(&format!("*{name}(")),
            "{file}: {name} is not in the header"
        );
    }
}

#[test]
fn every_exported_body_runs_behind_the_panic_guard() {
    // The guards of `boundary.rs`, the helpers built on them, and `catch_unwind` itself.
    let guards = [
        "with_room(",
        "with_room_ref(",
        "with_thread(",
        "getter(",
        "stage(",
        "text_to_json(",
        "watermark(",
        "catch_unwind(",
    ];
    for (file, name, body) in exported() {
        assert!(
            guards.iter().any(|g| body.contains(g)) || body.trim_end().ends_with("as_ptr().cast()"),
            "{file}: {name} does not run behind the panic guard"
        );
    }
}
