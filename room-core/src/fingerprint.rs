//! FNV-1a fingerprints: `normalizedFp` (docs/design/wire.md, "The normalized protocol")
//! and the flat `schemaFp`
//! primitives it shares.

use alloc::string::String;
use alloc::sync::Arc;
use core::fmt::Write;

/// What `normalizedFp` reads of a table: its name, its columns in order and its
/// primary key as column positions. [`crate::schema::TableSchema`] is one.
pub trait FpTable {
    /// The table's name.
    fn fp_name(&self) -> &str;
    /// The column names, in order.
    fn fp_columns(&self) -> &[Arc<str>];
    /// The primary key's column positions.
    fn fp_primary_key(&self) -> &[usize];
}

/// Streaming FNV-1a 64 with the length-prefixed string encoding of the wire protocol.
#[derive(Clone, Copy, Debug)]
pub struct Fnv64(u64);

impl Default for Fnv64 {
    fn default() -> Self {
        Fnv64::new()
    }
}

impl Fnv64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    /// A fresh hasher at the offset basis.
    pub fn new() -> Fnv64 {
        Fnv64(Self::OFFSET)
    }

    /// Mixes one byte.
    #[inline]
    pub fn byte(&mut self, b: u8) {
        self.0 = (self.0 ^ b as u64).wrapping_mul(Self::PRIME);
    }

    /// Mixes bytes.
    pub fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    /// Mixes a `u32`, little-endian.
    pub fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }

    /// Mixes a string as its UTF-8 byte length (`u32`) followed by its bytes.
    pub fn text(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.bytes(s.as_bytes());
    }

    /// The hash so far.
    pub fn finish(&self) -> u64 {
        self.0
    }

    /// The hash as 16 lowercase hex characters.
    pub fn hex(&self) -> String {
        let mut s = String::with_capacity(16);
        let _ = write!(s, "{:016x}", self.0);
        s
    }
}

/// `normalizedFp` over a list of tables in the order given: the table count, then per
/// table its name, columns, and primary key **by column name**.
pub fn normalized_fp<'a, T: FpTable + 'a>(tables: impl ExactSizeIterator<Item = &'a T>) -> String {
    let mut f = Fnv64::new();
    f.u32(tables.len() as u32);
    for t in tables {
        let columns = t.fp_columns();
        f.text(t.fp_name());
        f.u32(columns.len() as u32);
        for c in columns {
            f.text(c);
        }
        let key = t.fp_primary_key();
        f.u32(key.len() as u32);
        for &i in key {
            f.text(&columns[i]);
        }
    }
    f.hex()
}

/// FNV-1a 32 over bytes, as 8 lowercase hex characters.
pub fn fnv1a32_hex(bytes: &[u8]) -> String {
    fnv1a32_units_hex(bytes.iter().map(|&b| u32::from(b)))
}

/// FNV-1a 32 over the UTF-16 code units of `text` — one step per unit, as JavaScript's
/// `charCodeAt` reads a string — as 8 lowercase hex characters (`scopeSpecsHash`). For
/// ASCII text it equals [`fnv1a32_hex`] of the bytes; past ASCII it does not (`é` is
/// one unit, two UTF-8 bytes; `😀` two units, four bytes).
pub fn fnv1a32_utf16_hex(text: &str) -> String {
    fnv1a32_units_hex(text.encode_utf16().map(u32::from))
}

fn fnv1a32_units_hex(units: impl Iterator<Item = u32>) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for u in units {
        h = (h ^ u).wrapping_mul(0x0100_0193);
    }
    let mut s = String::with_capacity(8);
    let _ = write!(s, "{:08x}", h);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::TableSchema;
    use alloc::vec::Vec;

    fn t(name: &str, cols: &[&str], pk: &[usize]) -> TableSchema {
        TableSchema::new(name, cols, pk)
    }

    fn fp(tables: &[TableSchema]) -> String {
        normalized_fp(tables.iter())
    }

    #[test]
    fn matches_the_fact_sheet_values() {
        assert_eq!(fp(&[]), "4d25767f9dce13f5");
        let lmid = t(
            "_rindle_client_mutations",
            &["client_id", "last_mutation_id"],
            &[0],
        );
        assert_eq!(fp(&[lmid]), "ff539a32a611f1b5");
        assert_eq!(fp(&[t("note", &["id", "body"], &[0])]), "d0ffe1b66912a02b");
        assert_eq!(
            fp(&[t("issue", &["id", "title"], &[0])]),
            "38961d9f6348135c"
        );
        assert_eq!(fp(&[t("issue", &["id"], &[0])]), "d49e7a4de37c677c");
        let comment = t("comment", &["id", "issueID", "body"], &[0]);
        let issue = t("issue", &["id", "title"], &[0]);
        assert_eq!(fp(&[comment.clone(), issue.clone()]), "d149cef5e6c6d8f2");
        assert_eq!(fp(&[issue, comment]), "fccb1cca35da3e9a");
        let note = t("note", &["id", "body"], &[0]);
        let acl = t("acl", &["id", "principal"], &[0]);
        assert_eq!(fp(&[note.clone(), acl.clone()]), "9b2818472a17be7f");
        assert_eq!(fp(&[acl, note]), "7e03c732f8965727");
        assert_eq!(fp(&[t("t", &["a", "b", "c"], &[0, 1])]), "c9e1cd747b2c220e");
        assert_eq!(fp(&[t("t", &["a", "b", "c"], &[1, 0])]), "4d7c6430abf59f10");
        let room = t(
            "_rindle_room_client_mutations",
            &["doc", "client_id", "last_mutation_id"],
            &[0, 1],
        );
        assert_eq!(fp(&[room]), "102903abdbe695a6");
        let _: Vec<u8> = Vec::new();
    }

    #[test]
    fn fnv32_known_values() {
        // FNV-1a 32 reference values.
        assert_eq!(fnv1a32_hex(b""), "811c9dc5");
        assert_eq!(fnv1a32_hex(b"a"), "e40c292c");
        assert_eq!(fnv1a32_hex(b"foobar"), "bf9cf968");
        assert_eq!(fnv1a32_utf16_hex("foobar"), "bf9cf968");
        // One step per UTF-16 unit: "é" is 0x00e9 (not 0xc3 0xa9), "😀" 0xd83d 0xde00.
        let by_units = |units: &[u32]| fnv1a32_units_hex(units.iter().copied());
        assert_eq!(fnv1a32_utf16_hex("é"), by_units(&[0xe9]));
        assert_eq!(fnv1a32_utf16_hex("😀"), by_units(&[0xd83d, 0xde00]));
        assert_ne!(fnv1a32_utf16_hex("é"), fnv1a32_hex("é".as_bytes()));
    }
}
