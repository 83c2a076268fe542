//! Fuzzes the JSON contract with byte scripts: see `src/script.rs` for the format and the
//! checks. Run it as `fuzz/README.md` describes.

#![no_main]

use libfuzzer_sys::fuzz_target;

// The smoke test in `tests/tests/fuzz_smoke.rs` includes the same file and uses the rest of
// its API (the fallback hello, traces), which this target does not need.
#[allow(dead_code)]
#[path = "../src/script.rs"]
mod script;

fuzz_target!(|data: &[u8]| {
    script::run_script(data);
});
