//! The server side of the load benchmark: the data set, the room's configuration, and
//! the real `rindle-room` binary as a child process (start, wait until live, memory and
//! CPU from `/proc`, stop).

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The room's document id.
pub const DOC: &str = "load/issues";
/// The key id of the lease-token key ring.
pub const KID: &str = "load";
/// The key's secret.
pub const KEY: &str = "load-bench-secret";
/// The control plane's bearer token.
pub const CONTROL: &str = "load-bench-control";
/// Columns of `issue`; `modified` (index 5) carries the mutation number.
pub const ISSUE_COLUMNS: [&str; 7] = [
    "id",
    "title",
    "open",
    "created",
    "creatorID",
    "modified",
    "description",
];
/// The index of `modified` in an `issue` row.
pub const MODIFIED: usize = 5;
/// The index of `creatorID` in an `issue` row.
pub const CREATOR: usize = 4;

/// Which journal the room writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JournalKind {
    /// The durable file journal (append + `fdatasync` per group commit).
    File,
    /// The in-memory journal (no I/O).
    Memory,
}

impl JournalKind {
    pub fn name(self) -> &'static str {
        match self {
            JournalKind::File => "file",
            JournalKind::Memory => "memory",
        }
    }
}

/// Writes the demo data file: `issue` with `rows` rows (`creatorID = id % users`) and
/// `user` with `users` rows.
pub fn write_data(path: &Path, rows: usize, users: usize) -> std::io::Result<()> {
    let mut s = String::with_capacity(rows * 120 + users * 30 + 512);
    s.push_str("{\"tables\":[{\"name\":\"issue\",\"columns\":[");
    for (i, c) in ISSUE_COLUMNS.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "\"{c}\"");
    }
    s.push_str("],\"primaryKey\":[0],\"rows\":[");
    for id in 0..rows {
        if id > 0 {
            s.push(',');
        }
        let _ = write!(
            s,
            "[{id},\"issue {id}\",{open},{id},{creator},{id},\"the description of issue {id}\"]",
            open = id % 3 != 0,
            creator = id % users,
        );
    }
    s.push_str("]},{\"name\":\"user\",\"columns\":[\"id\",\"name\"],\"primaryKey\":[0],\"rows\":[");
    for id in 0..users {
        if id > 0 {
            s.push(',');
        }
        let _ = write!(s, "[{id},\"user {id}\"]");
    }
    s.push_str("]}]}\n");
    std::fs::write(path, s)
}

/// A TOML string literal.
fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Writes the room's configuration: the embedded upstream serving `data`, the key ring,
/// `issue` owned with the generated CRUD mutators (`issue.update`), and the journal.
pub fn write_config(
    path: &Path,
    data: &Path,
    journal: JournalKind,
    journal_path: &Path,
    group_commit_ms: u64,
) -> std::io::Result<()> {
    let mut s = String::new();
    let _ = write!(
        s,
        "[server]\nport = 0\n\
         [demo]\ndata = {data}\n\
         [downstream]\ndoc_id = {doc}\n\
         [downstream.token_keys]\n{KID} = {key}\n\
         [control]\nauth_token = {control}\n\
         [writes]\nowned_tables = [\"issue\"]\ncrud = true\ngroup_commit_ms = {group_commit_ms}\n",
        data = toml_str(&data.display().to_string()),
        doc = toml_str(DOC),
        key = toml_str(KEY),
        control = toml_str(CONTROL),
    );
    match journal {
        JournalKind::File => {
            let _ = write!(
                s,
                "[writes.journal]\nkind = \"file\"\npath = {}\n",
                toml_str(&journal_path.display().to_string())
            );
        }
        JournalKind::Memory => s.push_str("[writes.journal]\nkind = \"memory\"\n"),
    }
    std::fs::write(path, s)
}

/// Memory and thread figures of a process, from `/proc/<pid>/status`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mem {
    /// Resident set, KiB.
    pub rss_kib: u64,
    /// Peak resident set over the process's life, KiB.
    pub hwm_kib: u64,
    /// Threads.
    pub threads: u64,
}

/// Reads [`Mem`] for `pid`.
pub fn mem_of(pid: u32) -> Mem {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return Mem::default();
    };
    let field = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    Mem {
        rss_kib: field("VmRSS:"),
        hwm_kib: field("VmHWM:"),
        threads: field("Threads:"),
    }
}

/// Clock ticks per second (`getconf CLK_TCK`; 100 when it cannot be asked).
pub fn clock_ticks() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// User + system CPU time of a process (`"self"` or a pid), in seconds.
pub fn cpu_seconds(pid: &str, ticks: u64) -> f64 {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // The command name may hold spaces: fields count from after its closing paren.
    let Some(rest) = text.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); utime and stime are fields 14 and 15.
    let at = |n: usize| {
        f.get(n - 3)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (at(14) + at(15)) as f64 / ticks as f64
}

/// The system's 1-minute load average.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(String::from))
        .unwrap_or_else(|| String::from("?"))
}

/// The server's counters of interest, from `GET /metrics` on the control plane.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    /// Journal appends (each one write + `fdatasync` for the file journal).
    pub appends: f64,
    /// Their total duration, seconds.
    pub append_secs: f64,
    /// Appends that took at most 5 ms, and at most 10 ms.
    pub appends_le_5ms: f64,
    pub appends_le_10ms: f64,
    /// Frames and bytes the room queued to its clients.
    pub frames_out: f64,
    pub bytes_out: f64,
    /// Sockets terminated by the send budget.
    pub budget_terminations: f64,
}

impl Counters {
    /// Reads the counters (`None` when the room has no control plane or it fails).
    pub async fn fetch(control_port: Option<u16>) -> Option<Counters> {
        let url = format!("http://127.0.0.1:{}/metrics", control_port?);
        let headers = [(String::from("authorization"), format!("Bearer {CONTROL}"))];
        let res =
            rindle_room_smol::http::request("GET", &url, &headers, b"", Duration::from_secs(10))
                .await
                .ok()?;
        if res.status != 200 {
            return None;
        }
        let text = res.body_text();
        let get = |name: &str| -> f64 {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0.0)
        };
        let h = "rindle_room_journal_append_seconds";
        Some(Counters {
            appends: get(&format!("{h}_count")),
            append_secs: get(&format!("{h}_sum")),
            appends_le_5ms: get(&format!("{h}_bucket{{le=\"0.005\"}}")),
            appends_le_10ms: get(&format!("{h}_bucket{{le=\"0.01\"}}")),
            frames_out: get("rindle_room_frames_out_total"),
            bytes_out: get("rindle_room_bytes_out_total"),
            budget_terminations: get("rindle_room_budget_terminations_total"),
        })
    }

    /// `self - before`.
    pub fn since(&self, before: &Counters) -> Counters {
        Counters {
            appends: self.appends - before.appends,
            append_secs: self.append_secs - before.append_secs,
            appends_le_5ms: self.appends_le_5ms - before.appends_le_5ms,
            appends_le_10ms: self.appends_le_10ms - before.appends_le_10ms,
            frames_out: self.frames_out - before.frames_out,
            bytes_out: self.bytes_out - before.bytes_out,
            budget_terminations: self.budget_terminations - before.budget_terminations,
        }
    }
}

/// A running `rindle-room` child process.
pub struct ServerProc {
    child: Child,
    /// The downstream websocket port.
    pub port: u16,
    /// The control plane's port, when the room has one.
    pub control_port: Option<u16>,
    /// Warning and error lines the server logged (`WARN`, `ERROR`).
    pub complaints: Arc<Mutex<Vec<String>>>,
}

impl ServerProc {
    /// Starts `bin` with `args`, and waits until it logs `live` (the seed landed) and
    /// its listening port.
    pub fn start(bin: &Path, args: &[&str], what: &str) -> Result<ServerProc, String> {
        let mut child = Command::new(bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        let stderr = child.stderr.take().expect("stderr is piped");
        let complaints = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel::<String>();
        let sink = complaints.clone();
        std::thread::spawn(move || {
            // Keeps draining stderr for the whole life of the child.
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if line.contains(" WARN ") || line.contains(" ERROR ") {
                    sink.lock().unwrap().push(line.clone());
                }
                if std::env::var_os("LOAD_SERVER_LOG").is_some() {
                    eprintln!("[server] {line}");
                }
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut port = None;
        let mut control_port = None;
        let mut live = false;
        let mut seen = Vec::new();
        while !(live && port.is_some()) {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match rx.recv_timeout(left) {
                Ok(l) => l,
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!(
                        "{what}: the server did not go live within 60 s; it logged:\n{}",
                        seen.join("\n")
                    ));
                }
            };
            if let Some(rest) = line.split("listening on ws://").nth(1) {
                port = rest
                    .trim()
                    .rsplit(':')
                    .next()
                    .and_then(|p| p.parse::<u16>().ok());
            }
            if let Some(rest) = line.split("control plane on http://").nth(1) {
                control_port = rest
                    .trim()
                    .rsplit(':')
                    .next()
                    .and_then(|p| p.parse::<u16>().ok());
            }
            if line.contains(": live (") {
                live = true;
            }
            seen.push(line);
        }
        Ok(ServerProc {
            child,
            port: port.expect("checked above"),
            control_port,
            complaints,
        })
    }

    /// The child's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the child is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Stops the child: SIGTERM (graceful shutdown), SIGKILL after 10 s.
    pub fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A scratch directory for one bench process, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// `rindle-room-load-<pid>` in `$LOAD_DIR` (default: the temp directory), created
    /// empty. The journals go there: put it on the disk to measure.
    pub fn new() -> std::io::Result<Scratch> {
        let parent = std::env::var_os("LOAD_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
        let dir = parent.join(format!("rindle-room-load-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
