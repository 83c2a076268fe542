//! [`Key`]: an owned key that keeps short keys inline.
//!
//! Keys live in the room's ordered and hashed maps (a partition's sort order, the
//! primary-key index, a level's partitions). A search compares the probe with many stored
//! keys; a boxed key makes every comparison a pointer chase to a cold allocation, which
//! dominated the cost of a W1 change. Most keys (a number or two and a short id) fit in
//! [`INLINE`] bytes and are compared where the map already holds them.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::borrow::Borrow;
use core::cmp::Ordering;
use core::hash::{Hash, Hasher};
use core::ops::Deref;

/// The longest key kept inline (the whole `Key` is then 32 bytes).
const INLINE: usize = 30;

/// An owned order-preserving key: it compares, hashes and borrows exactly as its bytes
/// (`[u8]`) do, so maps keyed by it are searched with a `&[u8]` built in a reusable
/// buffer.
#[derive(Clone)]
pub(crate) enum Key {
    /// `len` bytes at the start of `bytes`.
    Inline { len: u8, bytes: [u8; INLINE] },
    /// A key longer than [`INLINE`] bytes.
    Heap(Box<[u8]>),
}

const _: () = assert!(core::mem::size_of::<Key>() == 32);

impl Key {
    /// The key's bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            // `len <= INLINE` by construction; `get` keeps this panic-free regardless.
            Key::Inline { len, bytes } => bytes.get(..usize::from(*len)).unwrap_or(bytes),
            Key::Heap(b) => b,
        }
    }
}

impl From<&[u8]> for Key {
    #[inline]
    fn from(b: &[u8]) -> Key {
        if b.len() <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..b.len()].copy_from_slice(b);
            Key::Inline {
                len: b.len() as u8,
                bytes,
            }
        } else {
            Key::Heap(Box::from(b))
        }
    }
}

impl From<Vec<u8>> for Key {
    #[inline]
    fn from(v: Vec<u8>) -> Key {
        if v.len() <= INLINE {
            Key::from(v.as_slice())
        } else {
            Key::Heap(v.into_boxed_slice())
        }
    }
}

impl Default for Key {
    fn default() -> Key {
        Key::Inline {
            len: 0,
            bytes: [0; INLINE],
        }
    }
}

impl Deref for Key {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Borrow<[u8]> for Key {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq for Key {
    #[inline]
    fn eq(&self, other: &Key) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    #[inline]
    fn partial_cmp(&self, other: &Key) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    #[inline]
    fn cmp(&self, other: &Key) -> Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

/// Hashes as `[u8]` does, as `Borrow<[u8]>` requires.
impl Hash for Key {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl core::fmt::Debug for Key {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.as_bytes().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn compares_and_borrows_as_its_bytes() {
        let short: &[u8] = &[3, 1, 2];
        let edge = vec![7u8; INLINE];
        let long = vec![7u8; INLINE + 1];
        let keys = [
            Key::from(short),
            Key::from(edge.clone()),
            Key::from(long.clone()),
        ];
        assert!(matches!(keys[1], Key::Inline { .. }));
        assert!(matches!(keys[2], Key::Heap(_)));
        let raw: [&[u8]; 3] = [short, &edge, &long];
        for (a, ra) in keys.iter().zip(raw) {
            assert_eq!(&**a, ra);
            for (b, rb) in keys.iter().zip(raw) {
                assert_eq!(a.cmp(b), ra.cmp(rb));
                assert_eq!(a == b, ra == rb);
            }
        }
        let mut set = hashbrown::HashSet::new();
        set.insert(Key::from(long.clone()));
        set.insert(Key::from(short));
        assert!(set.contains(short) && set.contains(long.as_slice()));
        assert!(!set.contains(edge.as_slice()));
        assert_eq!(&*Key::default(), &[] as &[u8]);
    }
}
