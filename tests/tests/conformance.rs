//! The cross-face conformance scenarios (`tests/conformance/*.json`, format in
//! `tests/conformance/README.md`), replayed through the call-by-name contract table
//! (`rindle_room_core::calls::call`).
//!
//! Every scenario runs in a fresh room slot; every step's output text must equal its
//! `expect` byte for byte, or its error message must contain every `error` substring.
//! All mismatches of all scenarios are collected and reported together.
//!
//! Environment:
//! - `BLESS=1` prints every step's actual output (run with `-- --nocapture`). It never
//!   writes a file: check each printed output by hand against the spec before copying it.
//! - `CONFORMANCE_ONLY=<name>[,<name>…]` runs only the named scenarios.
//!
//! `scenarios_match_the_generator` regenerates the scenarios with `gen/gen.py` into a
//! temporary directory and fails, naming each file, unless the scenario directory holds
//! exactly what the generator writes (it is skipped, with a notice, where `python3` is
//! not installed).

use core::fmt::Write as _;
use core::panic::AssertUnwindSafe;
use std::panic;
use std::path::{Path, PathBuf};
use std::process::Command;

use rindle_room_core::calls;
use rindle_room_core::contract::JsonRoom;
use rindle_room_core::json::tree::JsValue;
use serde_json::{Map, Value as Json};

/// The directory must hold at least this many scenarios.
const MIN_SCENARIOS: usize = 15;

/// One parsed step.
struct Step {
    call: String,
    /// The arguments, object key order as written in the file.
    args: Vec<JsValue>,
    want: Want,
}

/// What a step must produce.
enum Want {
    /// The exact output text.
    Expect(String),
    /// Substrings the error message must all contain.
    Error(Vec<String>),
}

struct Scenario {
    name: String,
    steps: Vec<Step>,
}

fn scenario_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance")
}

fn scenario_files() -> Vec<PathBuf> {
    let dir = scenario_dir();
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read the scenario directory {}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

fn check_keys(obj: &Map<String, Json>, allowed: &[&str], what: &str) -> Result<(), String> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(format!(
            "{what} has an unknown key {k:?} (allowed: {allowed:?})"
        )),
        None => Ok(()),
    }
}

fn parse_step(i: usize, v: &Json, ordered: &JsValue) -> Result<Step, String> {
    let what = format!("step {i}");
    let o = v
        .as_object()
        .ok_or_else(|| format!("{what} is not an object"))?;
    check_keys(o, &["call", "args", "expect", "error"], &what)?;
    let call = o
        .get("call")
        .and_then(Json::as_str)
        .ok_or_else(|| format!("{what} needs a string `call`"))?;
    let args = match ordered.get("args") {
        Some(JsValue::Arr(a)) => a.clone(),
        _ => return Err(format!("{what} needs an array `args`")),
    };
    let want = match (o.get("expect"), o.get("error")) {
        (Some(Json::String(s)), None) => Want::Expect(s.clone()),
        (None, Some(Json::String(s))) if !s.is_empty() => Want::Error(vec![s.clone()]),
        (None, Some(Json::Array(items))) if !items.is_empty() => {
            let mut subs = Vec::with_capacity(items.len());
            for item in items {
                match item.as_str() {
                    Some(s) if !s.is_empty() => subs.push(s.to_owned()),
                    _ => return Err(format!("{what}: `error` items must be non-empty strings")),
                }
            }
            Want::Error(subs)
        }
        (Some(_), Some(_)) | (None, None) => {
            return Err(format!("{what} needs exactly one of `expect` and `error`"))
        }
        _ => {
            return Err(format!(
                "{what}: `expect` must be a string; `error` a non-empty string or array of them"
            ))
        }
    };
    Ok(Step {
        call: call.to_owned(),
        args,
        want,
    })
}

fn load(path: &Path) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let v: Json = serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))?;
    let o = v.as_object().ok_or("the scenario is not a JSON object")?;
    check_keys(o, &["name", "description", "steps"], "the scenario")?;
    let name = o
        .get("name")
        .and_then(Json::as_str)
        .ok_or("the scenario needs a string `name`")?;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    if name != stem {
        return Err(format!("`name` {name:?} must equal the file name {stem:?}"));
    }
    match o.get("description").and_then(Json::as_str) {
        Some(d) if !d.trim().is_empty() => {}
        _ => return Err("the scenario needs a non-empty string `description`".into()),
    }
    let steps = match o.get("steps") {
        Some(Json::Array(s)) if !s.is_empty() => s,
        _ => return Err("the scenario needs a non-empty array `steps`".into()),
    };
    // The same file as an order-preserving tree: arguments keep their key order.
    let ordered = JsValue::parse(&text).map_err(|e| format!("not JSON: {e}"))?;
    let ordered_steps = match ordered.get("steps") {
        Some(JsValue::Arr(a)) => a.clone(),
        _ => Vec::new(),
    };
    let steps = steps
        .iter()
        .enumerate()
        .map(|(i, s)| parse_step(i, s, ordered_steps.get(i).unwrap_or(&JsValue::Null)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Scenario {
        name: name.to_owned(),
        steps,
    })
}

fn run_step(room: &mut Option<JsonRoom>, step: &Step) -> Result<String, String> {
    // Arguments keep their key order (`JsValue`), and `{"$text": …}` passes raw text:
    // the call table handles both, exactly as the C and Node runners do.
    calls::call_js(room, &step.call, &step.args)
        .map(|o| o.to_json_text())
        .map_err(|e| e.message().to_owned())
}

fn describe(r: &Result<String, String>) -> String {
    match r {
        Ok(text) => format!("ok    {text}"),
        Err(msg) => format!("error {msg}"),
    }
}

/// Runs one scenario; returns its mismatch reports.
fn run(s: &Scenario, bless: bool) -> Vec<String> {
    let mut failures = Vec::new();
    let mut room: Option<JsonRoom> = None;
    for (i, step) in s.steps.iter().enumerate() {
        let got = panic::catch_unwind(AssertUnwindSafe(|| run_step(&mut room, step)));
        let got = match got {
            Ok(r) => r,
            Err(p) => {
                let what = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                failures.push(format!(
                    "{} step {i} ({}): PANICKED: {what} (rest of the scenario skipped)",
                    s.name, step.call
                ));
                return failures;
            }
        };
        if bless {
            println!("{} step {i} {}: {}", s.name, step.call, describe(&got));
        }
        let ok = match (&step.want, &got) {
            (Want::Expect(want), Ok(text)) => want == text,
            (Want::Error(subs), Err(msg)) => subs.iter().all(|s| msg.contains(s.as_str())),
            _ => false,
        };
        if !ok {
            let want = match &step.want {
                Want::Expect(t) => format!("ok    {t}"),
                Want::Error(subs) => format!("error containing {subs:?}"),
            };
            failures.push(format!(
                "{} step {i} ({}):\n  expected: {want}\n  got:      {}",
                s.name,
                step.call,
                describe(&got)
            ));
        }
    }
    failures
}

#[test]
fn conformance_scenarios() {
    let bless = std::env::var("BLESS").is_ok_and(|v| v == "1");
    let only: Option<Vec<String>> = std::env::var("CONFORMANCE_ONLY")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_owned()).collect());
    let files = scenario_files();
    assert!(
        files.len() >= MIN_SCENARIOS,
        "expected at least {MIN_SCENARIOS} scenarios in {}, found {}",
        scenario_dir().display(),
        files.len()
    );
    let mut report = String::new();
    let (mut ran, mut failed) = (0usize, 0usize);
    for path in &files {
        let scenario = match load(path) {
            Ok(s) => s,
            Err(e) => {
                failed += 1;
                let _ = writeln!(report, "{}: invalid scenario file: {e}", path.display());
                continue;
            }
        };
        if only.as_ref().is_some_and(|o| !o.contains(&scenario.name)) {
            continue;
        }
        ran += 1;
        let failures = run(&scenario, bless);
        if !failures.is_empty() {
            failed += 1;
            for f in failures {
                let _ = writeln!(report, "{f}");
            }
        }
    }
    assert!(
        report.is_empty(),
        "{failed} of {ran} conformance scenarios failed:\n{report}"
    );
    assert!(ran > 0, "no scenario matched CONFORMANCE_ONLY");
}

/// The `.json` file names in `dir`, sorted.
fn json_names(dir: &Path) -> Vec<String> {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// Every scenario file is the generator's output, byte for byte: a hand edit of a
/// scenario (or a generator change not regenerated) fails here, naming the files.
#[test]
fn scenarios_match_the_generator() {
    let dir = scenario_dir();
    let out = std::env::temp_dir().join(format!(
        "rindle-conformance-gen-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&out);
    let run = Command::new("python3")
        .arg(dir.join("gen").join("gen.py"))
        .arg("--out")
        .arg(&out)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output();
    let run = match run {
        Ok(run) => run,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!(
                "scenarios_match_the_generator: SKIPPED, python3 is not installed \
                 (the scenario files were not compared with gen/gen.py)"
            );
            return;
        }
        Err(e) => panic!("cannot run python3: {e}"),
    };
    assert!(
        run.status.success(),
        "gen/gen.py failed ({}):\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    let want = json_names(&out);
    let have = json_names(&dir);
    let mut report = String::new();
    for name in want.iter().filter(|n| !have.contains(n)) {
        let _ = writeln!(report, "{name}: written by the generator, missing here");
    }
    for name in have.iter().filter(|n| !want.contains(n)) {
        let _ = writeln!(report, "{name}: not written by the generator");
    }
    for name in want.iter().filter(|n| have.contains(n)) {
        let generated = std::fs::read(out.join(name)).unwrap_or_default();
        let committed = std::fs::read(dir.join(name)).unwrap_or_default();
        if generated != committed {
            let line = generated
                .split(|b| *b == b'\n')
                .zip(committed.split(|b| *b == b'\n'))
                .position(|(g, c)| g != c)
                .map_or_else(|| "length".to_owned(), |i| format!("line {}", i + 1));
            let _ = writeln!(
                report,
                "{name}: differs from the generator's output ({line})"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    assert!(
        report.is_empty(),
        "the scenario files and tests/conformance/gen/gen.py disagree; edit the generator \
         module and run `python3 tests/conformance/gen/gen.py`:\n{report}"
    );
}
