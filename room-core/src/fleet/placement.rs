//! Placement and storage names (`docs/fleet.md`, "Per-room storage" and "Placement across
//! boxes"): the rendezvous score the reference `locateRoom` ranks boxes by, and the directory a room's files live in.

use alloc::string::String;

use sha2::{Digest, Sha256};

/// Longest sanitized-doc part of a room directory name, in bytes.
pub const DIR_DOC_BYTES: usize = 32;

/// The rendezvous (highest-random-weight) score of `box_id` for `doc`: the first 8
/// bytes of SHA-256(`doc` + `"\n"` + `box_id`), big-endian.
pub fn rendezvous_score(doc: &str, box_id: &str) -> u64 {
    let mut h = Sha256::new();
    h.update(doc.as_bytes());
    h.update(b"\n");
    h.update(box_id.as_bytes());
    let digest = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// The box that wins `doc` among `live` boxes (the highest score; ties, which need a
/// SHA-256 collision in 64 bits, go to the smaller id). `None` when no box is live.
pub fn locate_room<'a>(doc: &str, live: &[&'a str]) -> Option<&'a str> {
    live.iter()
        .map(|b| (rendezvous_score(doc, b), *b))
        .max_by(|x, y| x.0.cmp(&y.0).then(y.1.cmp(x.1)))
        .map(|(_, b)| b)
}

/// The directory (under `<data_dir>/rooms/`) of `doc`'s files: the first 16 hex digits
/// of SHA-256 of the doc's bytes, `-`, and the doc with every byte outside
/// `[A-Za-z0-9._-]` replaced by `_`, cut to [`DIR_DOC_BYTES`]. Safe as one file name on
/// every file system, distinct per doc (by the hash); readable by the suffix. A box never
/// derives a doc from it: the journal's first record names the doc.
pub fn room_dir_name(doc: &str) -> String {
    let digest = Sha256::digest(doc.as_bytes());
    let mut out = String::with_capacity(17 + DIR_DOC_BYTES);
    for b in &digest[..8] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        out.push(HEX[(b >> 4) as usize] as char);
        out.push(HEX[(b & 15) as usize] as char);
    }
    out.push('-');
    for &b in doc.as_bytes().iter().take(DIR_DOC_BYTES) {
        let keep = b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-');
        out.push(if keep { b as char } else { '_' });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::vec::Vec;

    #[test]
    fn directory_names_are_safe_and_distinct() {
        let a = room_dir_name("deck/7");
        assert_eq!(a.len(), 16 + 1 + 6);
        assert!(a.ends_with("-deck_7"), "{a}");
        assert_ne!(room_dir_name("deck/7"), room_dir_name("deck_7"));
        let long = room_dir_name(&"ü../".repeat(40));
        assert_eq!(long.len(), 16 + 1 + DIR_DOC_BYTES);
        assert!(long
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.'));
        assert!(!room_dir_name("..").contains('/'));
    }

    #[test]
    fn removing_a_box_moves_only_its_docs() {
        let boxes = ["box-a", "box-b", "box-c"];
        let docs: Vec<String> = (0..300).map(|i| format!("doc-{i}")).collect();
        let before: Vec<&str> = docs
            .iter()
            .map(|d| locate_room(d, &boxes).unwrap())
            .collect();
        for b in boxes {
            let n = before.iter().filter(|w| **w == b).count();
            assert!(n > 60, "{b} wins only {n} of 300");
        }
        let survivors = ["box-a", "box-c"];
        for (d, was) in docs.iter().zip(&before) {
            let now = locate_room(d, &survivors).unwrap();
            if *was != "box-b" {
                assert_eq!(now, *was, "{d} moved although its box stayed");
            }
        }
        assert_eq!(locate_room("d", &[]), None);
    }
}
