//! LIKE / ILIKE matching in time linear in the text (times the pattern length / 64).
//!
//! Semantics (docs/design/wire.md, "The query AST"): byte-level; `%` is any run of
//! bytes, `_` exactly one byte; `\` escapes `%`, `_` and `\`, any other escaped byte
//! keeps the backslash, and a trailing lone `\` is literal. LIKE is case-sensitive;
//! ILIKE folds ASCII letters only.
//!
//! The pattern is split at `%` into segments of literal bytes and `_` wildcards. The
//! first segment must match at the start, the last at the end, and each middle segment is
//! found leftmost after the previous one (greedy is exact when `%` separates segments).
//! The search is a bit-parallel shift-and, so a hostile pattern cannot make matching
//! quadratic.

use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;

/// One `%`-free run of the pattern: `None` is `_`.
#[derive(Clone, Debug)]
struct Segment {
    toks: Box<[Option<u8>]>,
    /// Shift-and masks: for each byte value, one bit per position that accepts it
    /// (`words` u64 per byte value). Built only for middle segments.
    masks: Box<[u64]>,
    words: usize,
}

impl Segment {
    fn new(toks: Vec<Option<u8>>, searchable: bool) -> Segment {
        let words = toks.len().div_ceil(64).max(1);
        let masks = if searchable && !toks.is_empty() {
            let mut m = vec![0u64; 256 * words];
            for (i, t) in toks.iter().enumerate() {
                let bit = 1u64 << (i % 64);
                match t {
                    Some(b) => m[*b as usize * words + i / 64] |= bit,
                    None => {
                        for b in 0..256 {
                            m[b * words + i / 64] |= bit;
                        }
                    }
                }
            }
            m.into_boxed_slice()
        } else {
            Box::default()
        };
        Segment {
            toks: toks.into_boxed_slice(),
            masks,
            words,
        }
    }

    fn len(&self) -> usize {
        self.toks.len()
    }

    /// Whether the segment matches `text` at `at` (bounds checked).
    fn matches_at(&self, text: &[u8], at: usize, fold: bool) -> bool {
        let Some(window) = text.get(at..at + self.len()) else {
            return false;
        };
        self.toks.iter().zip(window).all(|(t, &c)| match t {
            None => true,
            Some(b) => *b == norm(c, fold),
        })
    }

    /// The end (exclusive) of the leftmost match starting at or after `from` and ending
    /// at or before `limit`.
    fn find(&self, text: &[u8], from: usize, limit: usize, fold: bool) -> Option<usize> {
        let m = self.len();
        if m == 0 {
            return Some(from);
        }
        let words = self.words;
        let last_word = (m - 1) / 64;
        let last_bit = 1u64 << ((m - 1) % 64);
        let mut state = vec![0u64; words];
        for (j, &c) in text.iter().enumerate().take(limit).skip(from) {
            let c = norm(c, fold) as usize;
            let mask = &self.masks[c * words..(c + 1) * words];
            // state = ((state << 1) | 1) & mask, across words.
            let mut carry = 1u64;
            for w in 0..words {
                let next_carry = state[w] >> 63;
                state[w] = ((state[w] << 1) | carry) & mask[w];
                carry = next_carry;
            }
            if state[last_word] & last_bit != 0 {
                return Some(j + 1);
            }
        }
        None
    }
}

#[inline]
fn norm(b: u8, fold: bool) -> u8 {
    if fold {
        b.to_ascii_lowercase()
    } else {
        b
    }
}

/// A compiled LIKE / ILIKE pattern.
#[derive(Clone, Debug)]
pub struct LikeMatcher {
    /// Segments between `%`s; one segment means no `%` at all.
    segments: Box<[Segment]>,
    fold: bool,
}

impl LikeMatcher {
    /// Compiles `pattern`; `fold` makes it ILIKE.
    pub fn new(pattern: &[u8], fold: bool) -> LikeMatcher {
        let mut raw: Vec<Vec<Option<u8>>> = vec![Vec::new()];
        let mut i = 0;
        while i < pattern.len() {
            let b = pattern[i];
            let cur = raw.last_mut().expect("raw always holds a segment");
            match b {
                b'\\' => match pattern.get(i + 1) {
                    Some(&n @ (b'%' | b'_' | b'\\')) => {
                        cur.push(Some(norm(n, fold)));
                        i += 1;
                    }
                    _ => cur.push(Some(b'\\')),
                },
                b'%' => raw.push(Vec::new()),
                b'_' => cur.push(None),
                _ => cur.push(Some(norm(b, fold))),
            }
            i += 1;
        }
        let n = raw.len();
        let segments = raw
            .into_iter()
            .enumerate()
            .map(|(k, toks)| Segment::new(toks, k > 0 && k + 1 < n))
            .collect();
        LikeMatcher { segments, fold }
    }

    /// Whether `text` matches the whole pattern.
    pub fn matches(&self, text: &[u8]) -> bool {
        let segs = &self.segments;
        let fold = self.fold;
        let first = &segs[0];
        if segs.len() == 1 {
            return text.len() == first.len() && first.matches_at(text, 0, fold);
        }
        let last = &segs[segs.len() - 1];
        if first.len() + last.len() > text.len() {
            return false;
        }
        if !first.matches_at(text, 0, fold) {
            return false;
        }
        let end = text.len() - last.len();
        if !last.matches_at(text, end, fold) {
            return false;
        }
        let mut pos = first.len();
        for seg in &segs[1..segs.len() - 1] {
            match seg.find(text, pos, end, fold) {
                Some(after) => pos = after,
                None => return false,
            }
        }
        true
    }
}
