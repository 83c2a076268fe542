use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::*;
use crate::host::{DrainError, JournalEntry, Outcome};
use crate::texts::StrandedMutation;

/// One output of every kind.
fn every_kind() -> Vec<Output> {
    vec![
        Output::Started,
        Output::StartFailed {
            reason: "no \"lease\"".to_string(),
        },
        Output::StopAccepting,
        Output::Stopped { moved: true },
        Output::Live {
            boot_id: "b1".to_string(),
        },
        Output::Send {
            conn: 3,
            text: "{\"t\":\"x\"}".to_string(),
            class: SendClass::Snapshot,
        },
        Output::Close {
            conn: 3,
            code: 1008,
            reason: "bye".to_string(),
            discard_queued: false,
        },
        Output::Terminate { conn: 4 },
        Output::MintLease,
        Output::OpenUpstream { link: 2 },
        Output::CloseUpstream,
        Output::UpstreamSend {
            link: 2,
            text: "hi".to_string(),
        },
        Output::JournalRead { io: 9 },
        Output::JournalAppend {
            io: 10,
            entries: vec![JournalEntry {
                client_id: "c".to_string(),
                mid: 1,
                name: "m".to_string(),
                args: "{\"a\":1}".to_string(),
                sub: "u".to_string(),
                outcome: Outcome::Deopt,
            }],
        },
        Output::JournalAppendFlush {
            io: 11,
            record: FlushRecord {
                seq: 5,
                epoch: 2,
                body: "{\"x\":\"y\"}".to_string(),
            },
        },
        Output::JournalConfirmFlush { io: 12, seq: 5 },
        Output::JournalCompact {
            io: 13,
            durable: BTreeMap::from([("a".to_string(), 3), ("b".to_string(), 4)]),
        },
        Output::AuthorityClaim {
            io: 14,
            doc: "d".to_string(),
        },
        Output::AuthorityLmids {
            io: 15,
            doc: "d".to_string(),
            clients: vec!["a".to_string(), "b\"".to_string()],
        },
        Output::AuthorityApply {
            io: 16,
            body: "{}".to_string(),
        },
        Output::ControlReply {
            id: 1,
            reply: ControlReply::Stats("{\"rows\":1}".to_string()),
        },
        Output::ControlReply {
            id: 2,
            reply: ControlReply::Drained(Err(DrainError::Unavailable("gone".to_string()))),
        },
        Output::ControlReply {
            id: 3,
            reply: ControlReply::Flushed,
        },
        Output::Log {
            level: Level::Warn,
            text: "careful".to_string(),
        },
        Output::Stranded {
            mutations: vec![StrandedMutation {
                doc: "d".to_string(),
                client_id: "c".to_string(),
                mid: 7,
                name: "m".to_string(),
            }],
        },
    ]
}

/// The JSON the C library hands out, one line per output of [`every_kind`]: a change
/// here is a change of the C ABI's documented shape.
const EVERY_KIND_JSON: &[&str] = &[
    r#"{"t":"started"}"#,
    r#"{"t":"startFailed","reason":"no \"lease\""}"#,
    r#"{"t":"stopAccepting"}"#,
    r#"{"t":"stopped","moved":true}"#,
    r#"{"t":"live","bootId":"b1"}"#,
    r#"{"t":"send","conn":3,"class":"snapshot","text":"{\"t\":\"x\"}"}"#,
    r#"{"t":"close","conn":3,"code":1008,"reason":"bye","discardQueued":false}"#,
    r#"{"t":"terminate","conn":4}"#,
    r#"{"t":"mintLease"}"#,
    r#"{"t":"openUpstream","link":2}"#,
    r#"{"t":"closeUpstream"}"#,
    r#"{"t":"upstreamSend","link":2,"text":"hi"}"#,
    r#"{"t":"journalRead","io":9}"#,
    r#"{"t":"journalAppend","io":10,"entries":[{"clientID":"c","mid":1,"name":"m","args":{"a":1},"sub":"u","outcome":"deopt","rejected":true}]}"#,
    r#"{"t":"journalAppendFlush","io":11,"record":{"seq":5,"epoch":2,"body":"{\"x\":\"y\"}"}}"#,
    r#"{"t":"journalConfirmFlush","io":12,"seq":5}"#,
    r#"{"t":"journalCompact","io":13,"durable":{"a":3,"b":4}}"#,
    r#"{"t":"authorityClaim","io":14,"doc":"d","body":"{\"doc\":\"d\"}"}"#,
    r#"{"t":"authorityLmids","io":15,"doc":"d","clients":["a","b\""],"body":"{\"doc\":\"d\",\"clients\":[\"a\",\"b\\\"\"]}"}"#,
    r#"{"t":"authorityApply","io":16,"body":"{}"}"#,
    r#"{"t":"controlReply","id":1,"reply":{"kind":"stats","value":{"rows":1}}}"#,
    r#"{"t":"controlReply","id":2,"reply":{"kind":"drainFailed","value":"gone"}}"#,
    r#"{"t":"controlReply","id":3,"reply":{"kind":"flushed"}}"#,
    r#"{"t":"log","level":"warn","text":"careful"}"#,
    r#"{"t":"stranded","mutations":[{"doc":"d","clientID":"c","mid":7,"name":"m"}]}"#,
];

#[test]
fn the_json_encoding_is_the_c_librarys() {
    let got: Vec<String> = every_kind().into_iter().map(output_json).collect();
    assert_eq!(got, EVERY_KIND_JSON);
    for text in got {
        serde_json::from_str::<serde_json::Value>(&text).expect("valid JSON");
    }
}

#[test]
fn every_kind_has_its_number_and_a_unique_name() {
    for (i, k) in OutputKind::ALL.iter().enumerate() {
        assert_eq!(usize::from(k.code()), i);
        assert_eq!(
            OutputKind::ALL
                .iter()
                .filter(|o| o.name() == k.name())
                .count(),
            1
        );
    }
    let v: serde_json::Value = serde_json::from_str(&output_kinds_json()).unwrap();
    assert_eq!(v["journalAppend"], 13);
    assert_eq!(v["stranded"], 22);
}

/// The flat encoding's values, as a driver that drops the names would push them.
#[derive(Default)]
struct Flat(Vec<String>);

impl OutputSink for Flat {
    fn kind(&mut self, kind: OutputKind) {
        self.0.push(kind.code().to_string());
    }
    fn number(&mut self, _: &'static str, value: u64) {
        self.0.push(value.to_string());
    }
    fn flag(&mut self, _: &'static str, value: bool) {
        self.0.push(value.to_string());
    }
    fn text(&mut self, _: &'static str, value: String) {
        self.0.push(value);
    }
    fn word(&mut self, _: &'static str, value: &'static str) {
        self.0.push(value.to_string());
    }
    fn json(&mut self, _: &'static str, value: String) {
        self.0.push(value);
    }
    fn optional_json(&mut self, _: &'static str, value: Option<String>) {
        self.0.push(value.unwrap_or_default());
    }
    fn begin(&mut self, _: &'static str) {}
    fn end(&mut self) {}
}

#[test]
fn the_flat_encoding_has_a_fixed_arity_per_kind() {
    // What the Node shell skips per kind: the kind's number plus its fields.
    let mut arity = BTreeMap::new();
    for o in every_kind() {
        let mut flat = Flat::default();
        encode_output(o, &mut flat);
        let kind = flat.0[0].clone();
        let n = flat.0.len();
        assert_eq!(*arity.entry(kind.clone()).or_insert(n), n, "kind {kind}");
    }
    let mut flat = Flat::default();
    encode_output(
        Output::ControlReply {
            id: 2,
            reply: ControlReply::Drained(Err(DrainError::Unavailable("gone".to_string()))),
        },
        &mut flat,
    );
    assert_eq!(flat.0, ["20", "2", "drainFailed", "\"gone\""]);
}
