//! Fuzzes the box's room table with byte scripts of inputs: see `src/table_script.rs`
//! for the format and the checks. Run it as `fuzz/README.md` describes.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../src/table_script.rs"]
mod table_script;

fuzz_target!(|data: &[u8]| {
    table_script::run_table_script(data);
});
