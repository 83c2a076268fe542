//! Fuzzes the room host with byte scripts of inputs: see `src/host_script.rs` for the
//! format and the checks. Run it as `fuzz/README.md` describes.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../src/host_script.rs"]
mod host_script;

fuzz_target!(|data: &[u8]| {
    host_script::run_host_script(data);
});
