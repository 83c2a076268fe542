//! The command line of `rindle-room` (parsed with `lexopt`): every command, its options
//! (`--opt value` and `--opt=value` alike), and the help texts (`--help` after any
//! command, or `help COMMAND`).

use std::ffi::OsString;
use std::path::PathBuf;

use lexopt::prelude::*;

/// The top-level help: every command, the environment and the exit codes.
pub const USAGE: &str = "\
usage:
  rindle-room --config room.toml
  rindle-room demo [--data FILE.json] [--port N] [--journal PATH] [--keep] [--log-format text|json]
  rindle-room demo --fleet [--data FILE.json] [--port N] [--keep] [--log-format text|json]
  rindle-room token --config room.toml [--doc DOC] --sub SUB --query AST [--ttl-ms N] [--kid KID]
  rindle-room journal check PATH
  rindle-room journal salvage PATH OUT
  rindle-room help [COMMAND]     (or COMMAND --help)
  rindle-room --version

commands:
  --config FILE    run the room a TOML file describes (see docs/config.md); with
                   [fleet], many rooms booted on demand (see docs/fleet.md)
  demo             a self-contained room on demo data (no rindled, no authority)
  token            mint a lease token from the config's key ring
  journal check    report a journal's intact records and damage (read-only)
  journal salvage  copy every intact record of a journal to a new file

Options take their value as `--opt value` or `--opt=value`.

environment:
  RINDLE_LOG                  which log lines to write: `info` (default), `debug`, or
                              per target, e.g. info,rindle_room_smol::server::room=debug
                              (docs/config.md#logging)
  RINDLE_TOKEN_KEYS           kid=secret,… merged into downstream.token_keys
  RINDLE_UPSTREAM_AUTH_TOKEN  upstream.auth_token
  RINDLE_CONTROL_AUTH_TOKEN   control.auth_token
  RINDLE_AUTHORITY_HEADERS    name=value,… merged into authority.headers
  RINDLE_ROOM_SHELL_SECRET    fleet.shell_secret
  SMOL_THREADS                executor threads (default: 1 for a room, one per core for
                              a fleet)
  TMPDIR                      where the demos keep their journals

exit codes:
  0  shut down after SIGINT/SIGTERM; a command that did its work
  1  start-up failed (configuration, ports, journal, rindled or the authority
     unreachable past server.startup_timeout_ms); a command failed; a damaged journal
     (journal check)
  2  usage error
  3  the authority fenced the room: another placement owns the document
";

/// `demo --help`.
pub const DEMO_USAGE: &str = "\
usage:
  rindle-room demo [--data FILE.json] [--port N] [--journal PATH] [--keep] [--log-format text|json]
  rindle-room demo --fleet [--data FILE.json] [--port N] [--keep] [--log-format text|json]

Runs a self-contained room on demo data: no rindled, no API server. Prints the websocket
and control-plane URLs, the control token, a lease token and client lines to paste.
Ctrl-C stops it (exit 0).

options:
  --data FILE      tables and rows as JSON (default: a built-in issue tracker)
  --port N         downstream websocket port (default 0: any free port)
  --journal PATH   the write journal (default: <tmp>/rindle-room-demo/journal); not
                   with --fleet
  --keep           keep the journal(s) of an earlier run; without it the demo starts
                   from an empty journal (a journal is only ever removed if it is one)
  --log-format F   text (default) or json
  --fleet          many rooms in one process: ws://127.0.0.1:<port>/rooms/demo%2F<name>,
                   each booted on its first connection by an embedded room-boot;
                   journals under <tmp>/rindle-room-demo-fleet

exit codes: 0 after Ctrl-C, 1 start-up failed, 2 usage error.
";

/// `token --help`.
pub const TOKEN_USAGE: &str = "\
usage:
  rindle-room token --config room.toml [--doc DOC] --sub SUB --query AST [--ttl-ms N] [--kid KID]

Mints a lease token (rt1) with a key of the config's ring (downstream.token_keys, with
RINDLE_TOKEN_KEYS merged) and prints it on stdout. A client subscribes with it:
{\"t\":\"subscribe\",\"queryId\":1,\"leaseToken\":\"<token>\"}.

options:
  --config FILE    the room's (or fleet's) configuration
  --doc DOC        the document (default: downstream.doc_id; required for a fleet)
  --sub SUB        the subject (user id) the token authenticates
  --query AST      the query it authorizes: a wire AST as JSON, e.g. '{\"table\":\"issue\"}'
  --ttl-ms N       how long it is valid (default 3600000: 1 h)
  --kid KID        the key to sign with (default: the ring's only key)

exit codes: 0 printed, 1 the config or the mint failed, 2 usage error.
";

/// `journal --help`.
pub const JOURNAL_USAGE: &str = "\
usage:
  rindle-room journal check PATH
  rindle-room journal salvage PATH OUT

check    reports the journal's intact records, a torn tail and any damage; read-only.
         Exit 0 when a room can open it (clean, or a torn tail it truncates), 1 when it
         is damaged.
salvage  writes every intact record of PATH to the new file OUT (synced; never in
         place; OUT must not exist). Exit 0 once written, 1 on failure.

exit code 2: usage error.
";

/// The default lifetime of a minted token.
pub const DEFAULT_TOKEN_TTL_MS: u64 = 60 * 60 * 1000;

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    /// Print a help text on stdout.
    Help(&'static str),
    /// Print the version.
    Version,
    /// Run the room (or fleet) a config describes.
    Run {
        /// The config file.
        config: PathBuf,
    },
    /// The demo.
    Demo(DemoArgs),
    /// Mint a lease token.
    Token(TokenArgs),
    /// `journal check PATH`.
    JournalCheck {
        /// The journal.
        path: PathBuf,
    },
    /// `journal salvage PATH OUT`.
    JournalSalvage {
        /// The journal.
        path: PathBuf,
        /// The new file.
        out: PathBuf,
    },
}

/// `demo` options.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct DemoArgs {
    /// `--data`.
    pub data: Option<PathBuf>,
    /// `--port`.
    pub port: u16,
    /// `--journal`.
    pub journal: Option<PathBuf>,
    /// `--log-format json`.
    pub json_logs: bool,
    /// `--fleet`.
    pub fleet: bool,
    /// `--keep`.
    pub keep: bool,
}

/// `token` options.
#[derive(Debug, PartialEq, Eq)]
pub struct TokenArgs {
    /// `--config`.
    pub config: PathBuf,
    /// `--doc`.
    pub doc: Option<String>,
    /// `--sub`.
    pub sub: String,
    /// `--query` (JSON text).
    pub query: String,
    /// `--ttl-ms`.
    pub ttl_ms: u64,
    /// `--kid`.
    pub kid: Option<String>,
}

/// A usage error: what was wrong, and the help text of the command it concerns.
#[derive(Debug, PartialEq, Eq)]
pub struct Usage {
    /// What was wrong.
    pub message: String,
    /// The help text to show with it.
    pub help: &'static str,
}

fn usage(help: &'static str) -> impl Fn(lexopt::Error) -> Usage {
    move |e| Usage {
        message: e.to_string(),
        help,
    }
}

fn fail<T>(help: &'static str, message: impl Into<String>) -> Result<T, Usage> {
    Err(Usage {
        message: message.into(),
        help,
    })
}

fn text(value: OsString, what: &str, help: &'static str) -> Result<String, Usage> {
    value
        .into_string()
        .or_else(|v| fail(help, format!("{what} {v:?} is not valid UTF-8")))
}

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, Usage> {
    let mut p = lexopt::Parser::from_args(args);
    let top = usage(USAGE);
    match p.next().map_err(&top)? {
        None => fail(
            USAGE,
            "nothing to do: run `rindle-room --config FILE`, or a command",
        ),
        Some(Short('h') | Long("help")) => Ok(Command::Help(USAGE)),
        Some(Short('V') | Long("version")) => Ok(Command::Version),
        Some(Long("config")) => {
            let config = PathBuf::from(p.value().map_err(&top)?);
            match p.next().map_err(&top)? {
                None => Ok(Command::Run { config }),
                Some(Short('h') | Long("help")) => Ok(Command::Help(USAGE)),
                Some(other) => fail(
                    USAGE,
                    format!(
                        "--config takes exactly one file; unexpected {}",
                        shown(&other)
                    ),
                ),
            }
        }
        Some(Value(cmd)) => match cmd.to_str() {
            Some("demo") => parse_demo(&mut p),
            Some("token") => parse_token(&mut p),
            Some("journal") => parse_journal(&mut p),
            Some("help") => {
                let topic = p.next().map_err(&top)?;
                match topic {
                    None => Ok(Command::Help(USAGE)),
                    Some(Value(t)) => Ok(Command::Help(match t.to_str() {
                        Some("demo") => DEMO_USAGE,
                        Some("token") => TOKEN_USAGE,
                        Some("journal") => JOURNAL_USAGE,
                        _ => return fail(USAGE, format!("no help for {t:?}")),
                    })),
                    Some(other) => fail(USAGE, format!("unexpected {}", shown(&other))),
                }
            }
            _ => fail(USAGE, format!("unknown command {cmd:?}")),
        },
        Some(other) => fail(USAGE, format!("unknown argument {}", shown(&other))),
    }
}

/// An argument as the user wrote it.
fn shown(arg: &lexopt::Arg<'_>) -> String {
    match arg {
        Short(c) => format!("-{c}"),
        Long(l) => format!("--{l}"),
        Value(v) => format!("{v:?}"),
    }
}

fn parse_demo(p: &mut lexopt::Parser) -> Result<Command, Usage> {
    let e = usage(DEMO_USAGE);
    let mut d = DemoArgs::default();
    while let Some(arg) = p.next().map_err(&e)? {
        match arg {
            Short('h') | Long("help") => return Ok(Command::Help(DEMO_USAGE)),
            Long("data") => d.data = Some(PathBuf::from(p.value().map_err(&e)?)),
            Long("journal") => d.journal = Some(PathBuf::from(p.value().map_err(&e)?)),
            Long("port") => {
                let v = text(p.value().map_err(&e)?, "--port", DEMO_USAGE)?;
                d.port = v
                    .parse()
                    .or_else(|_| fail(DEMO_USAGE, format!("--port {v:?} is not a port number")))?;
            }
            Long("log-format") => {
                match text(p.value().map_err(&e)?, "--log-format", DEMO_USAGE)?.as_str() {
                    "text" => d.json_logs = false,
                    "json" => d.json_logs = true,
                    other => {
                        return fail(
                            DEMO_USAGE,
                            format!("--log-format {other:?}: use text or json"),
                        )
                    }
                }
            }
            Long("fleet") => d.fleet = true,
            Long("keep") => d.keep = true,
            other => return fail(DEMO_USAGE, format!("unknown demo option {}", shown(&other))),
        }
    }
    if d.fleet && d.journal.is_some() {
        return fail(
            DEMO_USAGE,
            "--journal applies to the single-room demo; `demo --fleet` keeps one journal per \
             room under <tmp>/rindle-room-demo-fleet",
        );
    }
    Ok(Command::Demo(d))
}

fn parse_token(p: &mut lexopt::Parser) -> Result<Command, Usage> {
    let e = usage(TOKEN_USAGE);
    let (mut config, mut doc, mut sub, mut query, mut ttl_ms, mut kid) =
        (None, None, None, None, DEFAULT_TOKEN_TTL_MS, None);
    while let Some(arg) = p.next().map_err(&e)? {
        match arg {
            Short('h') | Long("help") => return Ok(Command::Help(TOKEN_USAGE)),
            Long("config") => config = Some(PathBuf::from(p.value().map_err(&e)?)),
            Long("doc") => doc = Some(text(p.value().map_err(&e)?, "--doc", TOKEN_USAGE)?),
            Long("sub") => sub = Some(text(p.value().map_err(&e)?, "--sub", TOKEN_USAGE)?),
            Long("query") => {
                query = Some(text(p.value().map_err(&e)?, "--query", TOKEN_USAGE)?);
            }
            Long("kid") => kid = Some(text(p.value().map_err(&e)?, "--kid", TOKEN_USAGE)?),
            Long("ttl-ms") => {
                let v = text(p.value().map_err(&e)?, "--ttl-ms", TOKEN_USAGE)?;
                ttl_ms = match v.parse::<u64>() {
                    Ok(n) if n > 0 => n,
                    _ => {
                        return fail(
                            TOKEN_USAGE,
                            format!("--ttl-ms {v:?}: give a positive number of milliseconds"),
                        )
                    }
                };
            }
            other => {
                return fail(
                    TOKEN_USAGE,
                    format!("unknown token option {}", shown(&other)),
                )
            }
        }
    }
    let need = |v: Option<String>, name: &str| {
        v.filter(|s| !s.is_empty())
            .map_or_else(|| fail(TOKEN_USAGE, format!("token needs {name}")), Ok)
    };
    let Some(config) = config else {
        return fail(
            TOKEN_USAGE,
            "token needs --config FILE (its key ring signs)",
        );
    };
    Ok(Command::Token(TokenArgs {
        config,
        doc,
        sub: need(sub, "--sub SUB")?,
        query: need(query, "--query AST (JSON)")?,
        ttl_ms,
        kid,
    }))
}

fn parse_journal(p: &mut lexopt::Parser) -> Result<Command, Usage> {
    let e = usage(JOURNAL_USAGE);
    let mut words: Vec<OsString> = Vec::new();
    while let Some(arg) = p.next().map_err(&e)? {
        match arg {
            Short('h') | Long("help") => return Ok(Command::Help(JOURNAL_USAGE)),
            Value(v) => words.push(v),
            other => {
                return fail(
                    JOURNAL_USAGE,
                    format!("unknown journal option {}", shown(&other)),
                )
            }
        }
    }
    let mut words = words.into_iter();
    let cmd = words.next();
    let rest: Vec<PathBuf> = words.map(PathBuf::from).collect();
    match (cmd.as_ref().and_then(|c| c.to_str()), rest.as_slice()) {
        (Some("check"), [path]) => Ok(Command::JournalCheck { path: path.clone() }),
        (Some("salvage"), [path, out]) => Ok(Command::JournalSalvage {
            path: path.clone(),
            out: out.clone(),
        }),
        _ => fail(
            JOURNAL_USAGE,
            "journal takes `check PATH` or `salvage PATH OUT`",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(args: &[&str]) -> Result<Command, Usage> {
        parse(args.iter().map(OsString::from))
    }

    #[test]
    fn options_take_their_value_either_way() {
        let run = Command::Run {
            config: PathBuf::from("x.toml"),
        };
        assert_eq!(parse_str(&["--config", "x.toml"]), Ok(run));
        assert_eq!(
            parse_str(&["--config=x.toml"]),
            Ok(Command::Run {
                config: PathBuf::from("x.toml")
            })
        );
        let Ok(Command::Demo(d)) = parse_str(&["demo", "--port=8080", "--log-format", "json"])
        else {
            panic!("a demo");
        };
        assert_eq!(
            (d.port, d.json_logs, d.fleet, d.keep),
            (8080, true, false, false)
        );
    }

    #[test]
    fn every_command_has_its_help() {
        assert_eq!(parse_str(&["--help"]), Ok(Command::Help(USAGE)));
        assert_eq!(
            parse_str(&["demo", "--help"]),
            Ok(Command::Help(DEMO_USAGE))
        );
        assert_eq!(
            parse_str(&["demo", "--fleet", "-h"]),
            Ok(Command::Help(DEMO_USAGE))
        );
        assert_eq!(
            parse_str(&["token", "--help"]),
            Ok(Command::Help(TOKEN_USAGE))
        );
        assert_eq!(
            parse_str(&["journal", "check", "--help"]),
            Ok(Command::Help(JOURNAL_USAGE))
        );
        assert_eq!(
            parse_str(&["help", "token"]),
            Ok(Command::Help(TOKEN_USAGE))
        );
        assert_eq!(
            parse_str(&["--config", "x.toml", "--help"]),
            Ok(Command::Help(USAGE))
        );
    }

    #[test]
    fn usage_errors_name_the_problem_and_the_command() {
        let e = parse_str(&["demo", "--port", "http"]).unwrap_err();
        assert_eq!(e.help, DEMO_USAGE);
        assert!(e.message.contains("not a port number"), "{}", e.message);
        let e = parse_str(&["demo", "--fleet", "--journal", "j"]).unwrap_err();
        assert!(e.message.contains("--journal applies"), "{}", e.message);
        let e = parse_str(&["token", "--config", "r.toml", "--sub", "u"]).unwrap_err();
        assert_eq!(e.help, TOKEN_USAGE);
        assert!(e.message.contains("--query"), "{}", e.message);
        let e = parse_str(&["--config", "a", "b"]).unwrap_err();
        assert!(e.message.contains("exactly one file"), "{}", e.message);
        let e = parse_str(&["--config"]).unwrap_err();
        assert!(e.message.contains("missing argument"), "{}", e.message);
        assert!(parse_str(&[]).is_err());
        assert!(parse_str(&["journal", "check"]).is_err());
        assert!(parse_str(&["frobnicate"]).is_err());
    }

    #[test]
    fn token_arguments() {
        let Ok(Command::Token(t)) = parse_str(&[
            "token",
            "--config=r.toml",
            "--sub",
            "u1",
            "--query",
            r#"{"table":"issue"}"#,
            "--ttl-ms=5000",
        ]) else {
            panic!("a token command");
        };
        assert_eq!(t.sub, "u1");
        assert_eq!(t.ttl_ms, 5000);
        assert_eq!(t.doc, None);
        assert!(parse_str(&[
            "token", "--config", "r", "--sub", "u", "--query", "{}", "--ttl-ms", "0"
        ])
        .is_err());
    }
}
