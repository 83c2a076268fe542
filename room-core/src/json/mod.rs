//! JSON in and out: cells and rows from serde, and a writer whose output is
//! byte-identical to JavaScript's `JSON.stringify`.

pub(crate) mod read;
pub mod tree;
pub mod write;
