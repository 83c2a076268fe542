//! Bad input never panics (docs/security.md), checked in CI without cargo-fuzz: the fuzz
//! target's own script interpreter (`fuzz/src/script.rs`, included by path) runs over the
//! committed seeds, a few thousand deterministic mutations of them, and hand-written nasty
//! inputs. A panic here is a core bug; `fuzz/README.md` says how to minimize and report it.
//!
//! To see what each seed does step by step:
//! `cargo test -p rindle-room-tests --test fuzz_smoke -- --ignored --nocapture`.

#[path = "../../fuzz/src/script.rs"]
mod script;

use serde_json::Value as Json;

use script::{run_script, trace_script, FALLBACK_FP, FALLBACK_HELLO, MAX_STEPS};

/// How many mutated scripts [`mutated_seeds_never_panic`] runs.
const MUTATIONS: usize = 3_000;

fn seeds() -> Vec<(String, Vec<u8>)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz/seeds/contract");
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {dir}: {e}"));
    let mut seeds: Vec<(String, Vec<u8>)> = entries
        .map(|entry| {
            // A directory entry that cannot be read means a broken checkout: fail loudly.
            let path = entry.expect("readable seed directory entry").path();
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
            (path.display().to_string(), bytes)
        })
        .collect();
    seeds.sort();
    assert!(seeds.len() >= 4, "expected the committed seeds in {dir}");
    seeds
}

#[test]
fn seeds_reach_live_rooms_that_ship_frames() {
    let (mut subscribed, mut frames) = (0, 0);
    for (name, bytes) in seeds() {
        let reached = run_script(&bytes);
        assert!(reached.live, "{name} never made the room live: {reached:?}");
        assert!(
            reached.errors * 2 < reached.steps,
            "{name}: most steps fail, the seed has gone stale: {:#?}",
            trace_script(&bytes).trace
        );
        subscribed += reached.subscribed;
        frames += reached.frames;
    }
    assert!(
        subscribed >= 10,
        "the seeds subscribed only {subscribed} times"
    );
    assert!(frames >= 10, "the seeds shipped only {frames} frames");
}

#[test]
#[ignore = "prints the seed traces; run with --ignored --nocapture"]
fn print_seed_traces() {
    for (name, bytes) in seeds() {
        println!("== {name}");
        for line in trace_script(&bytes).trace {
            println!("{line}");
        }
    }
}

/// A tiny xorshift64* generator: the same mutations on every run and every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Tokens that tend to sit on a parser's edge.
const TOKENS: &[&str] = &[
    "null",
    "-0",
    "1e400",
    "-1e400",
    "1e-400",
    "18446744073709551616",
    "9007199254740993",
    "\"\\ud800\"",
    "NaN",
    "Infinity",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    "\"",
    "\\",
    "\n",
    "\r",
    "%",
    "_",
    "\"EXISTS\"",
    "\"NOT EXISTS\"",
    "[[]]",
    "{}",
    "1.5",
    "-1",
    "true",
];

fn lines_of(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect()
}

fn mutate(rng: &mut Rng, script: &mut Vec<u8>, donors: &[Vec<Vec<u8>>]) {
    let pos = rng.below(script.len() + 1);
    match rng.below(9) {
        0 if !script.is_empty() => {
            let at = pos.min(script.len() - 1);
            script[at] ^= 1 << rng.below(8);
        }
        1 => script.insert(pos, rng.next() as u8),
        2 => {
            let end = (pos + 1 + rng.below(16)).min(script.len());
            script.drain(pos.min(end)..end);
        }
        3 => {
            let token = rng.pick(TOKENS).as_bytes();
            script.splice(pos..pos, token.iter().copied());
        }
        4 => script.truncate(pos),
        _ => {
            // Line-level edits keep most of the script's depth.
            let mut lines = lines_of(script);
            let at = 1 + rng.below(lines.len());
            match rng.below(4) {
                0 => {
                    let donor = rng.pick(donors);
                    lines.insert(at.min(lines.len()), rng.pick(donor).clone());
                }
                1 if at < lines.len() => {
                    lines.remove(at);
                }
                2 => {
                    let line = rng.pick(&lines).clone();
                    lines.insert(at.min(lines.len()), line);
                }
                _ => {
                    let other = rng.below(lines.len());
                    let at = at.min(lines.len() - 1);
                    lines.swap(at, other);
                }
            }
            *script = lines.join(&b'\n');
        }
    }
}

#[test]
fn mutated_seeds_never_panic() {
    let seeds = seeds();
    let donors: Vec<Vec<Vec<u8>>> = seeds.iter().map(|(_, b)| lines_of(b)).collect();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..MUTATIONS {
        let (_, seed) = rng.pick(&seeds);
        let mut script = seed.clone();
        for _ in 0..1 + rng.below(4) {
            mutate(&mut rng, &mut script, &donors);
        }
        let outcome = std::panic::catch_unwind(|| run_script(&script));
        if outcome.is_err() {
            panic!(
                "mutation {case} panicked; input:\n{}",
                String::from_utf8_lossy(&script)
            );
        }
    }
}

// ---- hand-written nasty inputs ----

const SNAPSHOT: &str = concat!(
    r#"{"epoch":1,"seq":0,"normalizedFp":"c4942c89204f7951","cv":1,"ops":["#,
    r#"{"table":"issue","op":"add","row":[1,"crash",true,3]},"#,
    r#"{"table":"issue","op":"add","row":[2,"slow",false,1]},"#,
    r#"{"table":"comment","op":"add","row":[10,1,"same",4]},"#,
    r#"{"table":"label","op":"add","row":[1,"bug"]}]}"#
);
const LIVE: &str = concat!(
    r#"{"epoch":1,"seq":1,"normalizedFp":"c4942c89204f7951","cv":2,"ops":["#,
    r#"{"table":"issue","op":"add","row":[3,"new",true,2]},"#,
    r#"{"table":"comment","op":"edit","old":[10,1,"same",4],"new":[10,1,"same",9]},"#,
    r#"{"table":"label","op":"remove","row":[1,"bug"]}]}"#
);
const AST: &str = concat!(
    r#"{"table":"issue","where":{"type":"or","conditions":["#,
    r#"{"type":"simple","op":"LIKE","left":{"type":"column","name":"title"},"#,
    r#""right":{"type":"literal","value":"%a%"}},"#,
    r#"{"type":"correlatedSubquery","op":"EXISTS","flip":true,"related":{"#,
    r#""correlation":{"parentField":["id"],"childField":["issueID"]},"#,
    r#""subquery":{"table":"label","alias":"l"}}}]},"#,
    r#""orderBy":[["rank","desc"]],"start":{"row":{"rank":9},"exclusive":false},"limit":5,"#,
    r#""related":[{"correlation":{"parentField":["id"],"childField":["issueID"]},"#,
    r#""subquery":{"table":"comment","alias":"comments","limit":1}}]}"#
);

/// An upstream batch at epoch 1 with the fallback fingerprint; `ops` is the array's inside.
fn batch(seq: &str, ops: &str) -> String {
    format!(r#"{{"epoch":1,"seq":{seq},"normalizedFp":"{FALLBACK_FP}","ops":[{ops}]}}"#)
}

/// An `issue` add op; `cells` is the row's inside.
fn add_issue(cells: &str) -> String {
    format!(r#"{{"table":"issue","op":"add","row":[{cells}]}}"#)
}

/// An `issue` query filtered by one simple condition on `column`.
fn simple_filter(column: &str, op: &str, value: &str) -> String {
    let left = format!(r#"{{"type":"column","name":"{column}"}}"#);
    let right = format!(r#"{{"type":"literal","value":{value}}}"#);
    let cond = format!(r#"{{"type":"simple","op":"{op}","left":{left},"right":{right}}}"#);
    format!(r#"{{"table":"issue","where":{cond}}}"#)
}

/// A script that opens the fallback room and runs `steps` (one per line).
fn script(steps: &[&str]) -> Vec<u8> {
    let mut out = String::from(FALLBACK_HELLO);
    for step in steps {
        out.push('\n');
        out.push_str(step);
    }
    out.into_bytes()
}

/// A live room with one subscriber, then `steps`, a live batch and a drain.
fn deep(steps: &[&str]) -> Vec<u8> {
    let snapshot = format!("a {SNAPSHOT}");
    let subscribe = format!("s c1:1 {AST}");
    let live = format!("a {LIVE}");
    let mut all = vec![snapshot.as_str(), subscribe.as_str()];
    all.extend_from_slice(steps);
    all.extend_from_slice(&[live.as_str(), "c", "u c1:1", "t 99999", "w", "c"]);
    script(&all)
}

/// Raw replacements for one JSON node: wrong types, edge numbers, bad strings.
const RAW: &[&str] = &[
    "null",
    "true",
    "0",
    "-0",
    "-1",
    "1.5",
    "1e400",
    "-1e400",
    "1e-400",
    "18446744073709551616",
    "9007199254740993",
    "4294967296",
    "\"\"",
    "\"x\"",
    "\"\\ud800\"",
    "\"\\udc00\\ud800\"",
    "[]",
    "[null]",
    "[{}]",
    "{}",
    "{\"\":{}}",
    "NaN",
    "Infinity",
];

/// Every node of `template` replaced by every [`RAW`] token (and every object member
/// dropped), as JSON text.
fn wrong_types(template: &str) -> Vec<String> {
    let root: Json = serde_json::from_str(template).expect("the template is JSON");
    let mut pointers = Vec::new();
    collect_pointers(&root, String::new(), &mut pointers);
    let mut out = Vec::new();
    for pointer in &pointers {
        for raw in RAW {
            let mut copy = root.clone();
            if let Some(node) = copy.pointer_mut(pointer) {
                *node = Json::String(String::from("\u{1}HOLE\u{1}"));
            }
            let text = copy.to_string();
            out.push(text.replace("\"\\u0001HOLE\\u0001\"", raw));
        }
        if let Some((parent, key)) = pointer.rsplit_once('/') {
            let mut copy = root.clone();
            if let Some(Json::Object(map)) = copy.pointer_mut(parent) {
                map.remove(key);
                out.push(copy.to_string());
            }
        }
    }
    out
}

fn collect_pointers(node: &Json, here: String, out: &mut Vec<String>) {
    match node {
        Json::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                collect_pointers(item, format!("{here}/{i}"), out);
            }
        }
        Json::Object(map) => {
            for (key, item) in map {
                let key = key.replace('~', "~0").replace('/', "~1");
                collect_pointers(item, format!("{here}/{key}"), out);
            }
        }
        _ => {}
    }
    if !here.is_empty() {
        out.push(here);
    }
}

fn run_all(name: &str, scripts: impl IntoIterator<Item = Vec<u8>>) {
    for (i, bytes) in scripts.into_iter().enumerate() {
        if std::panic::catch_unwind(|| run_script(&bytes)).is_err() {
            let head: String = String::from_utf8_lossy(&bytes)
                .chars()
                .take(4_000)
                .collect();
            panic!("{name} #{i} panicked; input (first 4000 chars):\n{head}");
        }
    }
}

#[test]
fn the_deep_baseline_ships_frames() {
    let reached = run_script(&deep(&[]));
    let trace = trace_script(&deep(&[])).trace;
    assert!(reached.live && reached.errors == 0, "{trace:#?}");
    assert!(reached.subscribed == 1 && reached.frames >= 1, "{trace:#?}");
}

#[test]
fn wrong_types_in_every_field_never_panic() {
    let hello = wrong_types(FALLBACK_HELLO);
    run_all(
        "hello line",
        hello
            .iter()
            .map(|h| format!("{h}\na {SNAPSHOT}").into_bytes()),
    );
    run_all("reopen", hello.iter().map(|h| deep(&[&format!("o {h}")])));
    run_all(
        "snapshot",
        wrong_types(SNAPSHOT)
            .iter()
            .map(|b| script(&[&format!("a {b}")])),
    );
    run_all(
        "live batch",
        wrong_types(LIVE).iter().map(|b| deep(&[&format!("a {b}")])),
    );
    let asts = wrong_types(AST);
    run_all(
        "AST",
        asts.iter().map(|a| deep(&[&format!("s c2:1 {a}"), "c"])),
    );
    let call = r#"{"call":"subscribe","args":["c2:1",1,{"table":"issue"},0]}"#;
    let calls = wrong_types(call);
    run_all("replay", calls.iter().map(|c| deep(&[&format!("r {c}")])));
}

fn nested(open: &str, inner: &str, close: &str, depth: usize) -> String {
    format!("{}{inner}{}", open.repeat(depth), close.repeat(depth))
}

/// `depth` levels of EXISTS (`related: false`) or related children (`related: true`).
fn subquery_chain(depth: usize, related: bool) -> String {
    let mut ast = String::from(r#"{"table":"issue","alias":"i"}"#);
    for _ in 0..depth {
        let link = r#"{"correlation":{"parentField":["id"],"childField":["id"]},"subquery":"#;
        let exists = r#"{"type":"correlatedSubquery","op":"EXISTS","related":"#;
        ast = if related {
            format!(r#"{{"table":"issue","alias":"i","related":[{link}{ast}}}]}}"#)
        } else {
            format!(r#"{{"table":"issue","alias":"i","where":{exists}{link}{ast}}}}}}}"#)
        };
    }
    ast
}

#[test]
fn deep_nesting_never_panics() {
    let arrays = nested("[", "1", "]", 10_000);
    let objects = nested("{\"a\":", "1", "}", 10_000);
    let conds = nested(
        r#"{"type":"and","conditions":["#,
        r#"{"type":"or"}"#,
        "]}",
        10_000,
    );
    let shallow_conds = nested(r#"{"type":"and","conditions":["#, "true", "]}", 60);
    let mut scripts = Vec::new();
    for deep_json in [&arrays, &objects, &conds] {
        scripts.push(format!("{deep_json}\na {SNAPSHOT}").into_bytes());
        scripts.push(deep(&[&format!("a {deep_json}")]));
        scripts.push(deep(&[&format!("s c2:1 {deep_json}")]));
        scripts.push(deep(&[&format!("r {deep_json}")]));
        scripts.push(deep(&[&format!("o {deep_json}")]));
        let row = batch("2", &add_issue(&format!("9,{deep_json},true,1")));
        scripts.push(deep(&[&format!("a {row}")]));
        let lit = simple_filter("id", "IN", deep_json);
        scripts.push(deep(&[&format!("s c2:1 {lit}")]));
    }
    let shallow = format!(r#"{{"table":"issue","where":{shallow_conds}}}"#);
    scripts.push(deep(&[&format!("s c2:1 {shallow}")]));
    for depth in [23, 24, 25, 40] {
        for related in [false, true] {
            let chain = subquery_chain(depth, related);
            scripts.push(deep(&[&format!("s c2:1 {chain}"), "c"]));
        }
    }
    run_all("deep nesting", scripts);
}

#[test]
fn edge_numbers_and_tokens_never_panic() {
    let numbers = [
        "1e400",
        "-1e400",
        "-0",
        "-0.0",
        "18446744073709551616",
        "18446744073709551615",
        "9007199254740992",
        "9007199254740993",
        "-9223372036854775809",
        "1e-400",
        "5e-324",
        "1.7976931348623157e308",
        "0.1",
        "NaN",
        "Infinity",
        "-Infinity",
        "nan",
        "inf",
        "0x10",
        "+1",
        ".5",
        "1.",
        "01",
        "-",
        "1e",
        "",
    ];
    let mut scripts = Vec::new();
    for n in numbers {
        let hello = FALLBACK_HELLO.replace("\"epoch\":1", &format!("\"epoch\":{n}"));
        scripts.push(format!("{hello}\na {SNAPSHOT}").into_bytes());
        let cv = FALLBACK_HELLO.replace(
            "\"comparatorVersion\":2",
            &format!("\"comparatorVersion\":{n}"),
        );
        scripts.push(format!("{cv}\na {SNAPSHOT}").into_bytes());
        let pk = FALLBACK_HELLO.replace("\"primaryKey\":[0]", &format!("\"primaryKey\":[{n}]"));
        scripts.push(deep(&[&format!("o {pk}")]));
        for (epoch, seq, cv) in [(n, "2", "3"), ("1", n, "3"), ("1", "2", n)] {
            let head = format!(r#"{{"epoch":{epoch},"seq":{seq},"cv":{cv}"#);
            let numbered = format!(r#"{head},"normalizedFp":"{FALLBACK_FP}","ops":[]}}"#);
            scripts.push(deep(&[&format!("a {numbered}")]));
        }
        let cells = batch("2", &add_issue(&format!("{n},{n},{n},{n}")));
        scripts.push(deep(&[&format!("a {cells}"), "c"]));
        let limit = format!(r#"{{"table":"issue","limit":{n}}}"#);
        let lit = simple_filter("rank", ">=", n);
        let start =
            format!(r#"{{"table":"issue","start":{{"row":{{"rank":{n}}},"exclusive":true}}}}"#);
        for ast in [&limit, &lit, &start] {
            scripts.push(deep(&[&format!("s c2:1 {ast}"), "c"]));
        }
        scripts.push(deep(&[
            &format!("t {n}"),
            "w",
            &format!("s c2:1 {AST}"),
            "u c2:1",
        ]));
        scripts.push(deep(&[&format!("e {n} c2:1 {AST}")]));
        let call = format!(r#"{{"call":"sweep","args":[{n}]}}"#);
        let open = format!(r#"{{"call":"open","args":[{FALLBACK_HELLO},{n}]}}"#);
        scripts.push(deep(&[&format!("r {call}"), &format!("r {open}")]));
    }
    run_all("edge numbers", scripts);
}

#[test]
fn bad_bytes_and_strings_never_panic() {
    let mut scripts: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"\n\n\n".to_vec(),
        b"\xff\xfe{\"epoch\":1}\na\xff\xc0\n".to_vec(),
        b"\xed\xa0\x80\ns \xed\xa0\x80 {\"table\":\"issue\"}\nr\xf4\x90\x80\x80\nc".to_vec(),
        script(&["c"; MAX_STEPS + 10]),
    ];
    let mut invalid_utf8 = script(&[&format!("a {SNAPSHOT}")]);
    invalid_utf8.extend_from_slice(b"\ns c1:\xff {\"table\":\"issue\"}\nc\nu c1:\xff\nc");
    scripts.push(invalid_utf8);
    for s in [
        "\\ud800",
        "\\udfff",
        "\\ud800\\u0041",
        "\\udc00\\ud800",
        "\\ud83d\\ude00",
        "\\u0000",
    ] {
        let name = FALLBACK_HELLO.replace("\"issue\"", &format!("\"is{s}sue\""));
        scripts.push(format!("{name}\na {SNAPSHOT}").into_bytes());
        let cell = LIVE.replace("\"new\"", &format!("\"{s}\""));
        scripts.push(deep(&[&format!("a {cell}")]));
        let ast = AST.replace("\"%a%\"", &format!("\"%{s}%\""));
        scripts.push(deep(&[&format!("s c2:1 {ast}"), "c"]));
        let call = format!(r#"{{"call":"subscribe","args":["c{s}",1,{{"table":"issue"}},0]}}"#);
        scripts.push(deep(&[&format!("r {call}"), "c"]));
    }
    let mb = "x".repeat(1 << 20);
    let objects_as_cells = LIVE.replace("\"new\"", "{\"a\":1}").replace("[3,", "[[3],");
    scripts.push(deep(&[&format!("a {objects_as_cells}")]));
    scripts.push(deep(&[&format!("s {mb} {AST}"), "c", &format!("u {mb}")]));
    scripts.push(deep(&[
        &format!("a {}", LIVE.replace("\"new\"", &format!("\"{mb}\""))),
        "c",
    ]));
    scripts.push(deep(&[&format!(
        "s c2:1 {}",
        AST.replace("\"issue\"", &format!("\"{mb}\""))
    )]));
    scripts.push(deep(&[&format!(
        "s c2:1 {}",
        AST.replace("%a%", &format!("%{mb}%"))
    )]));
    scripts.push(deep(&[&format!(
        "o {}",
        FALLBACK_HELLO.replace("\"title\"", &format!("\"{mb}\""))
    )]));
    scripts.push(deep(&[&format!("a {}", LIVE.replace(FALLBACK_FP, &mb))]));
    run_all("bad bytes and strings", scripts);
}
