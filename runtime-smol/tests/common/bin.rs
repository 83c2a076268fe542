//! The real `rindle-room` binary as a child process, for the tests that need a process
//! (kill -9, signals, resource limits).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::within;

/// The real `rindle-room` binary, its stderr collected line by line.
pub struct Room {
    pub child: Child,
    pub port: u16,
    /// The control plane's port (fleet mode; 0 when unknown).
    pub control_port: u16,
    lines: async_channel::Receiver<String>,
    pub log: Vec<String>,
}

impl Room {
    /// Starts the binary and waits until it is live.
    pub async fn start(config: &std::path::Path) -> Room {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rindle-room"));
        cmd.arg("--config").arg(config);
        Room::spawn(cmd).await
    }

    /// Starts the binary in fleet mode and waits until it listens (its start-up
    /// settlement may still run: see `/readyz`).
    pub async fn start_fleet(config: &std::path::Path) -> Room {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rindle-room"));
        cmd.arg("--config").arg(config);
        let mut room = Room::launch(cmd);
        let listening = room.wait_for("fleet listening on ws://127.0.0.1:").await;
        let after = listening.split("ws://127.0.0.1:").nth(1).unwrap();
        room.port = after.split('/').next().unwrap().parse().unwrap();
        let control = room.wait_for("fleet control plane on http://").await;
        room.control_port = control.rsplit(':').next().unwrap().trim().parse().unwrap();
        room
    }

    /// Runs `cmd` (the binary, perhaps under a wrapper) and waits until it is live.
    pub async fn spawn(cmd: Command) -> Room {
        let mut room = Room::launch(cmd);
        let listening = room.wait_for("listening on ws://127.0.0.1:").await;
        // The digits after the last `:` (a JSON line ends with `"}`).
        room.port = listening
            .rsplit(':')
            .next()
            .unwrap()
            .trim_end_matches(|c: char| !c.is_ascii_digit())
            .parse()
            .unwrap();
        room.wait_for("live (bootId").await;
        room
    }

    fn launch(mut cmd: Command) -> Room {
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = async_channel::unbounded();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if std::env::var("RINDLE_TEST_LOG").is_ok() {
                    eprintln!("child: {line}");
                }
                let _ = tx.send_blocking(line);
            }
        });
        Room {
            child,
            port: 0,
            control_port: 0,
            lines,
            log: Vec::new(),
        }
    }

    pub async fn wait_for(&mut self, needle: &str) -> String {
        loop {
            let line = within(self.lines.recv()).await.unwrap_or_else(|_| {
                panic!(
                    "the room exited before {needle:?}:\n{}",
                    self.log.join("\n")
                )
            });
            self.log.push(line.clone());
            if line.contains(needle) {
                return line;
            }
        }
    }

    pub async fn drain_log(&mut self) {
        while let Ok(line) = self.lines.try_recv() {
            self.log.push(line);
        }
    }
}

/// The child's exit code within `limit` (killed and `None` past it).
pub fn wait_exit(child: &mut Child, limit: Duration) -> Option<i32> {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if let Ok(Some(status)) = child.try_wait() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    None
}
