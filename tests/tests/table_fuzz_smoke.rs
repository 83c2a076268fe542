//! The box's room table keeps its rules on any input sequence, checked in CI without
//! cargo-fuzz: the `table` fuzz target's interpreter (`fuzz/src/table_script.rs`,
//! included by path) runs over a few thousand deterministic pseudo-random scripts. A
//! failure here is a table bug; rerun the printed script under `cargo fuzz run table`.

#[path = "../../fuzz/src/table_script.rs"]
mod table_script;

use table_script::run_table_script;

/// How many scripts run.
const SCRIPTS: u64 = 3_000;

#[path = "support/script_bytes.rs"]
mod script_bytes;

use script_bytes::bytes;

#[test]
fn random_input_scripts_keep_the_room_tables_rules() {
    let (mut admitted, mut refused, mut hibernated) = (0, 0, 0);
    for seed in 0..SCRIPTS {
        let script = bytes(seed ^ 0x7AB1E, 32 + (seed as usize % 900));
        let r = std::panic::catch_unwind(|| run_table_script(&script))
            .unwrap_or_else(|_| panic!("script {seed} broke a rule: {script:?}"));
        admitted += r.admitted;
        refused += r.refused;
        hibernated += r.hibernated;
    }
    eprintln!("{admitted} admitted, {refused} refused, {hibernated} hibernated");
    // The scripts reach deep enough to mean something.
    assert!(admitted > 1_000, "{admitted} admitted");
    assert!(refused > 1_000, "{refused} refused");
    assert!(hibernated > 100, "{hibernated} hibernated");
}

#[test]
fn the_committed_seeds_run() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz/seeds/table");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).expect("the seed directory") {
        let path = entry.expect("a seed").path();
        run_table_script(&std::fs::read(&path).expect("a readable seed"));
        n += 1;
    }
    assert!(n > 0, "no seeds in {dir}");
}
