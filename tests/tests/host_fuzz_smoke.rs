//! The room host never panics on any input sequence, checked in CI without cargo-fuzz:
//! the `host` fuzz target's interpreter (`fuzz/src/host_script.rs`, included by path)
//! runs over a few thousand deterministic pseudo-random scripts. A failure here is a host
//! bug; rerun the printed script under `cargo fuzz run host` to minimize it.

#[path = "../../fuzz/src/host_script.rs"]
mod host_script;

use host_script::run_host_script;

/// How many scripts run.
const SCRIPTS: u64 = 2_000;

#[path = "support/script_bytes.rs"]
mod script_bytes;

use script_bytes::bytes;

#[test]
fn random_input_scripts_never_panic_the_host() {
    let (mut live, mut frames, mut journaled) = (0, 0, 0);
    for seed in 0..SCRIPTS {
        let script = bytes(seed, 64 + (seed as usize % 700));
        let r = std::panic::catch_unwind(|| run_host_script(&script))
            .unwrap_or_else(|_| panic!("script {seed} panicked: {script:?}"));
        live += usize::from(r.live);
        frames += r.frames;
        journaled += r.journaled;
    }
    eprintln!("{live} live, {frames} frames, {journaled} journaled");
    // The scripts reach deep enough to mean something.
    assert!(live > 100, "only {live} scripts went live");
    assert!(frames > 1_000, "only {frames} frames");
    assert!(journaled > 50, "only {journaled} mutations journaled");
}
