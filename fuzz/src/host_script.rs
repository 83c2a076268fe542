//! The room host driven by byte scripts: each step's first byte picks an input —
//! a connection opening, closing or sending a frame (raw bytes or one of a few shapes
//! with fuzzed fields), upstream frames (a hello, snapshots, live batches, garbage),
//! answers to the journal and authority operations the host asked for (success, failure,
//! any reply shape), lease mints, control requests, time passing. The host must never
//! panic, every frame it sends must be JSON, every close reason must fit a close frame,
//! and an I/O answer it never asked for must be ignored.
//!
//! Shared by the `host` fuzz target and `tests/tests/host_fuzz_smoke.rs` (CI).

use std::collections::VecDeque;

use rindle_room_core::host::{
    ApplyResult, AuthorityError, AuthorityReply, ControlRequest, Driver, Host, HostConfig, Input,
    JournalContents, JournalEntry, MutatorOutcome, Outcome, Output, WriteSettings,
};
use rindle_room_core::{MutationTx, TableSchema, Value};

/// The most steps a script runs.
pub const MAX_HOST_STEPS: usize = 400;

struct FuzzDriver;

impl Driver for FuzzDriver {
    fn run_mutator(
        &mut self,
        name: &str,
        tx: &mut MutationTx<'_>,
        args: Option<&str>,
        user: &str,
    ) -> MutatorOutcome {
        let id = args.map_or(0.0, |a| a.len() as f64);
        let r = match name {
            "add" => tx.insert(
                "note",
                &[
                    ("id".into(), Value::num(id)),
                    ("body".into(), Value::str(args.unwrap_or(""))),
                    ("owner".into(), Value::str(user)),
                ],
            ),
            "set" => tx.update(
                "note",
                &[
                    ("id".into(), Value::num(id)),
                    ("body".into(), Value::str(user)),
                ],
            ),
            "del" => tx.delete("note", &[("id".into(), Value::num(id))]),
            "query" => tx.query(),
            "no" => return MutatorOutcome::Rejected("no".into()),
            _ => return MutatorOutcome::Unknown,
        };
        match r {
            Ok(()) => MutatorOutcome::Done,
            Err(e) => MutatorOutcome::Rejected(e.message().to_string()),
        }
    }
}

/// An answer the booting driver gives by itself.
enum Answer {
    Lease,
    Open(u64),
    Frame(u64, String),
    Read(u64),
    Claim(u64),
}

/// What a script reached (for the smoke test's sanity checks).
#[derive(Debug, Default)]
pub struct HostReached {
    /// Steps run.
    pub steps: usize,
    /// Whether the host went live at some point.
    pub live: bool,
    /// Frames the host sent to connections.
    pub frames: usize,
    /// Mutations journaled.
    pub journaled: usize,
}

fn hello(epoch: u64) -> String {
    let note = TableSchema::new("note", &["id", "body", "owner"], &[0]);
    let mut t = String::new();
    note.write_json(&mut t);
    let fp = rindle_room_core::fingerprint::normalized_fp([note].iter());
    format!(
        r#"{{"t":"nhello","queryId":1,"bootId":"b","hello":{{"epoch":{epoch},"comparatorVersion":2,"tables":[{t}],"normalizedFp":"{fp}"}}}}"#
    )
}

fn batch(epoch: u64, seq: u64, id: u8, op: u8) -> String {
    let note = TableSchema::new("note", &["id", "body", "owner"], &[0]);
    let fp = rindle_room_core::fingerprint::normalized_fp([note].iter());
    let ops = match op % 3 {
        0 => format!(r#"[{{"table":"note","op":"add","row":[{id},"b","u"]}}]"#),
        1 => format!(r#"[{{"table":"note","op":"remove","row":[{id},"b","u"]}}]"#),
        _ => String::from("[]"),
    };
    format!(
        r#"{{"t":"nbatch","queryId":1,"batch":{{"epoch":{epoch},"seq":{seq},"normalizedFp":"{fp}","ops":{ops},"cv":{}}}}}"#,
        100 + seq
    )
}

fn token(now: u64, sub: &str, ttl: u64) -> String {
    let ast = rindle_room_core::json::tree::JsValue::parse(r#"{"table":"note"}"#).unwrap();
    rindle_room_core::token::mint(&rindle_room_core::token::MintOptions {
        doc: "d",
        ast: Some(&ast),
        sub,
        kid: "k",
        key: "s",
        ttl_ms: ttl as f64,
        now_ms: now as f64,
        scopes_hash: None,
    })
    .unwrap_or_default()
}

/// Runs one script; panics (a host bug) if a check fails.
pub fn run_host_script(data: &[u8]) -> HostReached {
    let mut cfg = HostConfig::new("d", vec![("k".into(), "s".into())]);
    cfg.entropy = [1; 32];
    cfg.max_subscriptions_per_conn = 4;
    cfg.max_materializations = 3;
    cfg.send_budget_bytes = 2_000;
    cfg.writes = Some(WriteSettings {
        owned_tables: vec!["note".into()],
        scopes: None,
        group_commit_ms: 5,
        flush_debounce_ms: 20,
        flush_dirty_max: 3,
        authority: data.first().is_some_and(|b| b & 1 == 1),
        ack_after_flush: data.first().is_some_and(|b| b & 2 == 2),
    });
    let mut host = Host::new(cfg).expect("a valid config");
    let mut d = FuzzDriver;
    let mut now = 1_000_000u64;
    let mut reached = HostReached::default();
    let mut journal_ios: VecDeque<u64> = VecDeque::new();
    let mut read_ios: VecDeque<u64> = VecDeque::new();
    let mut authority_ios: VecDeque<u64> = VecDeque::new();
    let mut links: Vec<u64> = Vec::new();
    let mut next_conn = 1u64;
    let (mut epoch, mut seq) = (0u64, 0u64);
    let mut entries: Vec<JournalEntry> = Vec::new();
    let mut mids: std::collections::HashMap<&str, u64> = Default::default();
    host.start(now);
    // Most scripts boot first (the driver answers start-up and boot by itself until the
    // host is live), so the bytes exercise a live room; the rest start cold.
    let mut auto_boot = data.first().is_some_and(|b| b & 2 == 0);
    let mut bytes = data.iter().copied().skip(1);
    let mut next = move || bytes.next();
    while reached.steps < MAX_HOST_STEPS {
        // Carry out (record) what the host asked.
        let mut answers: Vec<Answer> = Vec::new();
        while let Some(o) = host.poll_output() {
            if auto_boot {
                match &o {
                    Output::MintLease => answers.push(Answer::Lease),
                    Output::OpenUpstream { link } => answers.push(Answer::Open(*link)),
                    Output::UpstreamSend { link, text } if text.contains("subscribe") => {
                        epoch += 1;
                        answers.push(Answer::Frame(*link, hello(epoch)));
                        answers.push(Answer::Frame(*link, batch(epoch, 0, 1, 0)));
                    }
                    Output::JournalRead { io } => answers.push(Answer::Read(*io)),
                    Output::AuthorityClaim { io, .. } => answers.push(Answer::Claim(*io)),
                    _ => {}
                }
            }
            match o {
                Output::Send { text, .. } => {
                    if std::env::var_os("HOST_SCRIPT_TRACE").is_some() {
                        eprintln!("send {text}");
                    }
                    reached.frames += 1;
                    assert!(
                        serde_json::from_str::<serde_json::Value>(&text).is_ok(),
                        "a frame that is not JSON: {text}"
                    );
                }
                Output::Close { reason, .. } => {
                    assert!(reason.len() <= 123, "a close reason too long: {reason}");
                }
                Output::OpenUpstream { link } => links.push(link),
                Output::JournalRead { io } => read_ios.push_back(io),
                Output::JournalAppend { io, entries: e } => {
                    reached.journaled += e.len();
                    entries.extend(e);
                    journal_ios.push_back(io);
                }
                Output::JournalAppendFlush { io, .. }
                | Output::JournalConfirmFlush { io, .. }
                | Output::JournalCompact { io, .. } => journal_ios.push_back(io),
                Output::AuthorityClaim { io, .. }
                | Output::AuthorityLmids { io, .. }
                | Output::AuthorityApply { io, .. } => authority_ios.push_back(io),
                _ => {}
            }
        }
        reached.live |= host.is_live();
        if auto_boot && host.is_live() {
            auto_boot = false;
        }
        if !answers.is_empty() {
            for a in answers {
                match a {
                    Answer::Lease => host.handle(now, Input::LeaseMinted(Ok("l".into())), &mut d),
                    Answer::Open(link) => host.handle(now, Input::UpstreamOpened { link }, &mut d),
                    Answer::Frame(link, text) => {
                        host.handle(now, Input::UpstreamFrame { link, text: &text }, &mut d)
                    }
                    Answer::Read(io) => {
                        read_ios.retain(|i| *i != io);
                        let result = Ok(JournalContents::default());
                        host.handle(now, Input::JournalRead { io, result }, &mut d)
                    }
                    Answer::Claim(io) => {
                        authority_ios.retain(|i| *i != io);
                        let result = Ok(AuthorityReply::Claimed(1));
                        host.handle(now, Input::Authority { io, result }, &mut d)
                    }
                }
            }
            continue;
        }
        let Some(op) = next() else { break };
        reached.steps += 1;
        let arg = next().unwrap_or(0);
        // Mostly the newest connection, so an init, a subscribe and pushes line up.
        let conn = if arg % 8 == 7 {
            u64::from(arg % 4) + 1
        } else {
            next_conn.saturating_sub(1).max(1)
        };
        match op % 22 {
            0 => {
                let conn = next_conn;
                next_conn += 1;
                host.handle(now, Input::ConnOpened { conn }, &mut d);
                if arg % 4 != 3 {
                    // A well-behaved client: init, then its lease subscribe.
                    let client = ["A", "B", "C", ""][conn as usize % 4];
                    let init = format!(r#"{{"t":"init","clientID":"{client}"}}"#);
                    host.handle(now, Input::ConnFrame { conn, text: &init }, &mut d);
                    let sub = format!(
                        r#"{{"t":"subscribe","queryId":1,"leaseToken":"{}"}}"#,
                        token(now, ["u1", "u2"][usize::from(arg & 1)], 600_000)
                    );
                    host.handle(now, Input::ConnFrame { conn, text: &sub }, &mut d);
                }
            }
            1 => {
                let len = usize::from(next().unwrap_or(0));
                let raw: Vec<u8> = (0..len).filter_map(|_| next()).collect();
                let text = String::from_utf8_lossy(&raw);
                host.handle(now, Input::ConnFrame { conn, text: &text }, &mut d);
            }
            2..=7 => {
                let k = next().unwrap_or(0);
                // One clientID per connection (mostly), so pushes can line up.
                let client = ["A", "B", "C", ""][(conn as usize + usize::from(k >= 250)) % 4];
                let text = match k % 7 {
                    0 => format!(r#"{{"t":"init","clientID":"{client}"}}"#),
                    1 => format!(
                        r#"{{"t":"subscribe","queryId":{},"name":"_rindle/clientLmid"}}"#,
                        k % 5
                    ),
                    2 => format!(
                        r#"{{"t":"subscribe","queryId":{},"leaseToken":"{}"}}"#,
                        k % 5,
                        token(
                            now,
                            ["u1", "u2"][usize::from(k & 1)],
                            1_000 + u64::from(k) * 1_000
                        )
                    ),
                    3 => format!(r#"{{"t":"unsubscribe","queryId":{}}}"#, k % 5),
                    _ => format!(
                        r#"{{"t":"pushMutation","envelope":{{"clientID":"{client}","mid":{},"name":"{}","args":{{"x":{}}}}}}}"#,
                        {
                            // Mostly the client's next mid; sometimes a fuzzed one.
                            let x = next().unwrap_or(0);
                            let m = mids.entry(client).or_insert(0);
                            if x % 8 == 0 {
                                u64::from(x % 5)
                            } else {
                                *m += 1;
                                *m
                            }
                        },
                        ["add", "set", "del", "query", "no", "zz"][usize::from(k % 6)],
                        k
                    ),
                };
                host.handle(now, Input::ConnFrame { conn, text: &text }, &mut d);
            }
            8 => {
                let input = if arg % 4 == 3 {
                    Input::ConnHeard { conn } // a pong
                } else {
                    Input::ConnClosed { conn }
                };
                host.handle(now, input, &mut d);
            }
            9 | 10 => {
                let Some(&link) = links.last() else { continue };
                let text = match arg % 5 {
                    0 => {
                        epoch += 1;
                        seq = 0;
                        hello(epoch)
                    }
                    1 => batch(epoch, 0, arg, 0),
                    2 => {
                        seq += 1;
                        batch(epoch, seq, arg % 7, arg)
                    }
                    3 => format!(r#"{{"t":"progress","frame":{{"cvMin":{}}}}}"#, 100 + seq),
                    _ => String::from("{\"t\":\"queryError\",\"queryId\":1,\"message\":\"x\"}"),
                };
                host.handle(now, Input::UpstreamFrame { link, text: &text }, &mut d);
            }
            11 => {
                let Some(&link) = links.last() else { continue };
                let input = match arg % 3 {
                    0 => Input::UpstreamOpened { link },
                    1 => Input::UpstreamClosed { link, error: None },
                    _ => Input::UpstreamHeard { link },
                };
                host.handle(now, input, &mut d);
            }
            12 | 13 => {
                // Answer the oldest journal write, sometimes out of thin air.
                let io = if arg % 11 == 0 {
                    u64::from(arg)
                } else {
                    let Some(io) = journal_ios.pop_front() else {
                        continue;
                    };
                    io
                };
                let result = if arg % 5 == 0 {
                    Err("EIO".into())
                } else {
                    Ok(())
                };
                host.handle(now, Input::JournalWritten { io, result }, &mut d);
            }
            14 => {
                let Some(io) = read_ios.pop_front() else {
                    continue;
                };
                let result = if arg % 7 == 0 {
                    Err("unreadable".into())
                } else {
                    let mut c = JournalContents {
                        entries: entries.clone(),
                        ..JournalContents::default()
                    };
                    if arg % 3 == 0 {
                        c.entries.push(JournalEntry {
                            client_id: "A".into(),
                            mid: u64::from(arg),
                            name: "add".into(),
                            args: "{}".into(),
                            sub: "u1".into(),
                            outcome: [Outcome::Applied, Outcome::Rejected][usize::from(arg & 1)],
                        });
                    }
                    Ok(c)
                };
                host.handle(now, Input::JournalRead { io, result }, &mut d);
            }
            15 | 16 => {
                let Some(io) = authority_ios.pop_front() else {
                    continue;
                };
                let result = match arg % 8 {
                    0 => Err(AuthorityError::Retryable("down".into())),
                    1 => Err(AuthorityError::Fatal("bad".into())),
                    2 => Ok(AuthorityReply::Claimed(u64::from(arg))),
                    3 => Ok(AuthorityReply::Lmids(Default::default())),
                    4 => Ok(AuthorityReply::Applied(ApplyResult::Conflict {
                        conflicts_json: String::from(
                            r#"[{"table":"note","pk":[1],"current":[1,"x","y"]}]"#,
                        ),
                    })),
                    5 => Ok(AuthorityReply::Applied(ApplyResult::Fenced {
                        current_epoch: Some(9),
                    })),
                    6 => Ok(AuthorityReply::Applied(ApplyResult::Conflict {
                        conflicts_json: String::from("not json"),
                    })),
                    _ => Ok(AuthorityReply::Applied(ApplyResult::Ok {
                        applied: true,
                        cv: Some(f64::from(arg)),
                    })),
                };
                host.handle(now, Input::Authority { io, result }, &mut d);
            }
            17 => {
                now += u64::from(arg) * u64::from(next().unwrap_or(1));
                host.handle_timeout(now, &mut d);
            }
            18 => {
                let request = match arg % 6 {
                    0 => ControlRequest::Stats,
                    1 => ControlRequest::Health,
                    2 => ControlRequest::Revoke { user: "u1".into() },
                    3 => ControlRequest::Drain,
                    4 => ControlRequest::FlushNow,
                    _ => ControlRequest::Shutdown,
                };
                host.handle(
                    now,
                    Input::Control {
                        id: u64::from(arg),
                        request,
                    },
                    &mut d,
                );
            }
            19 => {
                let r = if arg & 1 == 0 {
                    Ok("lease".into())
                } else {
                    Err("no".into())
                };
                host.handle(now, Input::LeaseMinted(r), &mut d);
            }
            _ => {
                if let Some(deadline) = host.next_deadline() {
                    now = now.max(deadline);
                    host.handle_timeout(now, &mut d);
                }
            }
        }
    }
    reached
}
