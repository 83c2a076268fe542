//! Append + fsync latency of the file journal, per batch of 1, 10 and 100 entries.
//!
//! `cargo run --release -p rindle-room-smol --example journal_bench -- [dir] [iterations]`
//!
//! `dir` defaults to the system temp directory; point it at the disk the journal will
//! live on (a tmpfs makes fsync free and the numbers meaningless).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rindle_room_smol::journal::file::FileJournal;
use rindle_room_smol::journal::{Journal, JournalEntry, Outcome};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().map_or_else(std::env::temp_dir, PathBuf::from);
    let iterations: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(200);
    let path = dir.join(format!("journal_bench-{}.journal", std::process::id()));

    println!(
        "file journal append+fsync, {iterations} batches per size, in {}",
        dir.display()
    );
    println!("batch   p50 µs   p90 µs   p99 µs   max µs  mean µs  µs/entry  bytes/batch");
    let mut mid = 0u64;
    for size in [1usize, 10, 100] {
        let _ = std::fs::remove_file(&path);
        let journal = FileJournal::open(&path)?;
        let mut samples = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            let batch: Vec<JournalEntry> = (0..size)
                .map(|_| {
                    mid += 1;
                    JournalEntry {
                        client_id: "client-0123456789abcdef".to_string(),
                        mid,
                        name: "setTitle".to_string(),
                        args: format!(r#"{{"id":"row-{mid}","title":"a typical short title"}}"#),
                        sub: "user-42".to_string(),
                        outcome: Outcome::Applied,
                    }
                })
                .collect();
            let start = Instant::now();
            journal.append(&batch)?;
            samples.push(start.elapsed());
        }
        let bytes_per_batch = journal.len_bytes()? / iterations as u64;
        samples.sort();
        let pct = |p: usize| samples[(samples.len() - 1) * p / 100];
        let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        println!(
            "{size:>5} {:>8.0} {:>8.0} {:>8.0} {:>8.0} {:>8.0} {:>9.1} {:>12}",
            us(pct(50)),
            us(pct(90)),
            us(pct(99)),
            us(pct(100)),
            us(mean),
            us(mean) / size as f64,
            bytes_per_batch
        );
        drop(journal);
    }
    let _ = std::fs::remove_file(&path);
    Ok(())
}
