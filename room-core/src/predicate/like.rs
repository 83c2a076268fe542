//! LIKE / ILIKE matching in time linear in the text (times the pattern length / 64),
//! in memory linear in the pattern.
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
//!
//! A shift-and search reads, for each byte of the text, the mask of the segment's
//! positions that accept it. A dense table of 256 masks per 64 positions is the fastest
//! way to read it, but it costs 2 KiB for a segment of one byte: a query of one
//! megabyte whose pattern is `%a%a%a…` would have held a gigabyte. So dense tables are
//! built only up to [`DENSE_WORDS`] per matcher (the first middle segments: every
//! pattern an application writes); the other segments keep one mask per distinct byte
//! they hold, found by a binary search, and all segments share a few flat arrays. A
//! matcher holds at most about 36 bytes per pattern byte (a segment of 256 distinct
//! bytes needs 257 masks per 64 of its positions), plus the dense tables.

use alloc::vec;
use alloc::vec::Vec;

/// The most words (`u64`) of dense tables one matcher builds: 64 KiB.
const DENSE_WORDS: usize = 8 * 1024;

/// The longest pattern a matcher takes (its flat arrays are indexed by `u32`); a query
/// of this size is far past any frame a room accepts.
pub const MAX_PATTERN_BYTES: usize = 64 << 20;

/// How a middle segment's search reads the mask of a byte.
#[derive(Clone, Copy, Debug)]
enum Masks {
    /// First or last segment: matched in place, never searched.
    None,
    /// 256 × `words` masks at `dense[at..]`, byte `b`'s at `at + b * words`.
    Dense { at: u32 },
    /// The segment's distinct literal bytes, sorted, are `bytes[bytes_at..][..n]`; byte
    /// `i`'s mask is at `masks[at + i * words]`, and the mask of the `_`s alone (what any
    /// other byte reads) follows them, at `at + n * words`.
    Sparse { bytes_at: u32, n: u16, at: u32 },
}

/// One `%`-free run of the pattern.
#[derive(Clone, Copy, Debug)]
struct Segment {
    /// Its tokens are `toks[start..start + len]`.
    start: u32,
    len: u32,
    masks: Masks,
}

/// A compiled LIKE / ILIKE pattern.
#[derive(Clone, Debug)]
pub struct LikeMatcher {
    /// Every segment's tokens, back to back: `None` is `_`.
    toks: Vec<Option<u8>>,
    /// The segments between `%`s; one segment means no `%` at all.
    segments: Vec<Segment>,
    dense: Vec<u64>,
    bytes: Vec<u8>,
    masks: Vec<u64>,
    fold: bool,
}

#[inline]
fn norm(b: u8, fold: bool) -> u8 {
    if fold {
        b.to_ascii_lowercase()
    } else {
        b
    }
}

/// How many `u64` words a segment of `len` positions searches with.
#[inline]
fn words_of(len: usize) -> usize {
    len.div_ceil(64).max(1)
}

/// An index into a flat array, which [`MAX_PATTERN_BYTES`] keeps within `u32`.
fn at(len: usize) -> u32 {
    u32::try_from(len).expect("a LIKE pattern within MAX_PATTERN_BYTES")
}

impl LikeMatcher {
    /// Compiles `pattern`; `fold` makes it ILIKE. `None` for a pattern longer than
    /// `MAX_PATTERN_BYTES` (64 MiB).
    pub fn new(pattern: &[u8], fold: bool) -> Option<LikeMatcher> {
        LikeMatcher::build(pattern, fold, DENSE_WORDS)
    }

    /// [`LikeMatcher::new`] with at most `dense_words` words of dense tables (tests
    /// take 0 to search every segment through its per-byte masks).
    pub(super) fn build(pattern: &[u8], fold: bool, dense_words: usize) -> Option<LikeMatcher> {
        if pattern.len() > MAX_PATTERN_BYTES {
            return None;
        }
        let mut toks: Vec<Option<u8>> = Vec::with_capacity(pattern.len());
        let mut bounds: Vec<(usize, usize)> = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i < pattern.len() {
            match pattern[i] {
                b'\\' => match pattern.get(i + 1) {
                    Some(&n @ (b'%' | b'_' | b'\\')) => {
                        toks.push(Some(norm(n, fold)));
                        i += 1;
                    }
                    _ => toks.push(Some(b'\\')),
                },
                b'%' => {
                    bounds.push((start, toks.len() - start));
                    start = toks.len();
                }
                b'_' => toks.push(None),
                b => toks.push(Some(norm(b, fold))),
            }
            i += 1;
        }
        bounds.push((start, toks.len() - start));
        let mut m = LikeMatcher {
            toks,
            segments: Vec::with_capacity(bounds.len()),
            dense: Vec::new(),
            bytes: Vec::new(),
            masks: Vec::new(),
            fold,
        };
        let last = bounds.len() - 1;
        for (k, &(start, len)) in bounds.iter().enumerate() {
            let masks = if k == 0 || k == last || len == 0 {
                Masks::None
            } else if m.dense.len() + 256 * words_of(len) <= dense_words {
                m.dense_masks(start, len)
            } else {
                m.sparse_masks(start, len)
            };
            m.segments.push(Segment {
                start: at(start),
                len: at(len),
                masks,
            });
        }
        m.toks.shrink_to_fit();
        m.bytes.shrink_to_fit();
        m.masks.shrink_to_fit();
        Some(m)
    }

    /// Builds the dense table of the segment at `toks[start..][..len]`.
    fn dense_masks(&mut self, start: usize, len: usize) -> Masks {
        let words = words_of(len);
        let base = self.dense.len();
        self.dense.resize(base + 256 * words, 0);
        for (i, t) in self.toks[start..start + len].iter().enumerate() {
            let bit = 1u64 << (i % 64);
            match t {
                Some(b) => self.dense[base + *b as usize * words + i / 64] |= bit,
                None => {
                    for b in 0..256 {
                        self.dense[base + b * words + i / 64] |= bit;
                    }
                }
            }
        }
        Masks::Dense { at: at(base) }
    }

    /// Builds the per-byte masks of the segment at `toks[start..][..len]`.
    fn sparse_masks(&mut self, start: usize, len: usize) -> Masks {
        let words = words_of(len);
        let toks = &self.toks[start..start + len];
        let bytes_at = self.bytes.len();
        self.bytes.extend(toks.iter().flatten());
        self.bytes[bytes_at..].sort_unstable();
        let mut n = bytes_at;
        for i in bytes_at..self.bytes.len() {
            if n == bytes_at || self.bytes[n - 1] != self.bytes[i] {
                self.bytes[n] = self.bytes[i];
                n += 1;
            }
        }
        self.bytes.truncate(n);
        let distinct = &self.bytes[bytes_at..];
        let base = self.masks.len();
        self.masks.resize(base + (distinct.len() + 1) * words, 0);
        let wild = distinct.len();
        for (i, t) in toks.iter().enumerate() {
            let bit = 1u64 << (i % 64);
            match t {
                Some(b) => {
                    let slot = distinct.binary_search(b).unwrap_or(wild);
                    self.masks[base + slot * words + i / 64] |= bit;
                }
                None => {
                    // A `_` accepts every byte: its bit is in every mask.
                    for slot in 0..=wild {
                        self.masks[base + slot * words + i / 64] |= bit;
                    }
                }
            }
        }
        Masks::Sparse {
            bytes_at: at(bytes_at),
            n: u16::try_from(wild).expect("at most 256 distinct bytes"),
            at: at(base),
        }
    }

    fn toks_of(&self, seg: &Segment) -> &[Option<u8>] {
        &self.toks[seg.start as usize..][..seg.len as usize]
    }

    /// The mask of the positions of searched segment `seg` (of `words` words) that
    /// accept byte `c`.
    #[inline]
    fn mask(&self, seg: &Segment, words: usize, c: u8) -> &[u64] {
        let from = match seg.masks {
            Masks::Dense { at } => &self.dense[at as usize + c as usize * words..],
            Masks::Sparse { bytes_at, n, at } => {
                let distinct = &self.bytes[bytes_at as usize..][..usize::from(n)];
                let slot = distinct.binary_search(&c).unwrap_or(usize::from(n));
                &self.masks[at as usize + slot * words..]
            }
            Masks::None => unreachable!("only middle segments are searched"),
        };
        &from[..words]
    }

    /// Whether segment `seg` matches `text` at `at` (bounds checked).
    fn matches_at(&self, seg: &Segment, text: &[u8], at: usize) -> bool {
        let toks = self.toks_of(seg);
        let Some(window) = text.get(at..at + toks.len()) else {
            return false;
        };
        toks.iter().zip(window).all(|(t, &c)| match t {
            None => true,
            Some(b) => *b == norm(c, self.fold),
        })
    }

    /// The end (exclusive) of the leftmost match of middle segment `seg` starting at or
    /// after `from` and ending at or before `limit`.
    fn find(&self, seg: &Segment, text: &[u8], from: usize, limit: usize) -> Option<usize> {
        let m = seg.len as usize;
        if m == 0 {
            return Some(from);
        }
        let words = words_of(m);
        let last_word = (m - 1) / 64;
        let last_bit = 1u64 << ((m - 1) % 64);
        let scan = text.iter().enumerate().take(limit).skip(from);
        if words == 1 {
            let mut state = 0u64;
            for (j, &c) in scan {
                state = ((state << 1) | 1) & self.mask(seg, 1, norm(c, self.fold))[0];
                if state & last_bit != 0 {
                    return Some(j + 1);
                }
            }
            return None;
        }
        let mut state = vec![0u64; words];
        for (j, &c) in scan {
            let mask = self.mask(seg, words, norm(c, self.fold));
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

    /// Whether `text` matches the whole pattern.
    pub fn matches(&self, text: &[u8]) -> bool {
        let segs = &self.segments;
        let first = &segs[0];
        if segs.len() == 1 {
            return text.len() == first.len as usize && self.matches_at(first, text, 0);
        }
        let last = &segs[segs.len() - 1];
        let (first_len, last_len) = (first.len as usize, last.len as usize);
        if first_len + last_len > text.len() {
            return false;
        }
        if !self.matches_at(first, text, 0) {
            return false;
        }
        let end = text.len() - last_len;
        if !self.matches_at(last, text, end) {
            return false;
        }
        let mut pos = first_len;
        for seg in &segs[1..segs.len() - 1] {
            match self.find(seg, text, pos, end) {
                Some(after) => pos = after,
                None => return false,
            }
        }
        true
    }

    /// Heap bytes, as `Room::retained_bytes` counts them.
    pub fn retained(&self) -> usize {
        use crate::retained as r;
        r::vec(&self.toks)
            + r::vec(&self.segments)
            + r::vec(&self.dense)
            + r::vec(&self.bytes)
            + r::vec(&self.masks)
    }
}
