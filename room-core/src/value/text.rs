//! [`Text`]: a text cell's string in 15 bytes, so a whole [`Value`](super::Value) is two
//! words.
//!
//! Strings of up to [`INLINE`] bytes live in the cell itself (most keys, names, enum-like
//! columns: no allocation at all); longer ones own one exact-size heap allocation, its
//! length kept beside the pointer rather than in a header. The 15 bytes have alignment 1,
//! so the enum tag packs in front of them; the pointer is therefore stored unaligned and
//! read back with its exposed provenance.

use alloc::alloc::{alloc, dealloc, handle_alloc_error};
use alloc::boxed::Box;
use alloc::string::String;
use core::alloc::Layout;
use core::fmt;
use core::hash::{Hash, Hasher};
use core::ops::Deref;

/// The longest string kept inline.
pub const INLINE: usize = 14;

/// `meta` of a heap-held string; any smaller value is an inline length.
const HEAP: u8 = 0xFF;

/// An immutable UTF-8 string of at most `u32::MAX` bytes.
///
/// Layout: `meta` is the inline length (0..=14) or `HEAP` (`0xFF`); for a heap string `data`
/// holds the length (`u32`, little-endian) and the address of the bytes.
#[repr(C)]
pub struct Text {
    meta: u8,
    data: [u8; INLINE],
}

const _: () = assert!(core::mem::size_of::<Text>() == 15);

impl Text {
    /// Copies `s` into a new text.
    ///
    /// # Panics
    ///
    /// If `s` is longer than `u32::MAX` bytes (no frame the room accepts comes close).
    pub fn new(s: &str) -> Text {
        let bytes = s.as_bytes();
        let mut data = [0u8; INLINE];
        if bytes.len() <= INLINE {
            data[..bytes.len()].copy_from_slice(bytes);
            return Text {
                meta: bytes.len() as u8,
                data,
            };
        }
        let len = u32::try_from(bytes.len()).expect("a text cell longer than 4 GiB");
        let layout = Layout::array::<u8>(bytes.len()).expect("text layout");
        // SAFETY: the layout has a non-zero size (len > INLINE).
        let ptr = unsafe { alloc(layout) };
        if ptr.is_null() {
            handle_alloc_error(layout);
        }
        // SAFETY: `ptr` is a fresh allocation of `len` bytes, disjoint from `bytes`.
        unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr, bytes.len()) };
        data[..4].copy_from_slice(&len.to_le_bytes());
        data[4..12].copy_from_slice(&ptr.expose_provenance().to_ne_bytes());
        Text { meta: HEAP, data }
    }

    /// The heap length and address, for a heap-held text.
    #[inline]
    fn heap(&self) -> (usize, *mut u8) {
        let mut len = [0u8; 4];
        len.copy_from_slice(&self.data[..4]);
        let mut addr = [0u8; 8];
        addr.copy_from_slice(&self.data[4..12]);
        (
            u32::from_le_bytes(len) as usize,
            core::ptr::with_exposed_provenance_mut(usize::from_ne_bytes(addr)),
        )
    }

    /// The string.
    #[inline]
    pub fn as_str(&self) -> &str {
        let bytes = if self.meta == HEAP {
            let (len, ptr) = self.heap();
            // SAFETY: a heap text owns `len` initialized bytes at `ptr` until it drops.
            unsafe { core::slice::from_raw_parts(ptr, len) }
        } else {
            &self.data[..self.meta as usize]
        };
        // SAFETY: every constructor copies the bytes of a `&str`.
        unsafe { core::str::from_utf8_unchecked(bytes) }
    }

    /// Heap bytes this text owns (0 when inline).
    #[inline]
    pub fn heap_bytes(&self) -> usize {
        if self.meta == HEAP {
            self.heap().0
        } else {
            0
        }
    }
}

impl Drop for Text {
    fn drop(&mut self) {
        if self.meta == HEAP {
            let (len, ptr) = self.heap();
            // SAFETY: allocated in `new` with exactly this layout, freed once.
            unsafe { dealloc(ptr, Layout::array::<u8>(len).expect("text layout")) };
        }
    }
}

impl Clone for Text {
    #[inline]
    fn clone(&self) -> Text {
        if self.meta == HEAP {
            Text::new(self.as_str())
        } else {
            Text {
                meta: self.meta,
                data: self.data,
            }
        }
    }
}

impl Deref for Text {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl core::borrow::Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for Text {
    #[inline]
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Text) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Text {
    fn cmp(&self, other: &Text) -> core::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl Hash for Text {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text::new(s)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text::new(&s)
    }
}

impl From<Box<str>> for Text {
    fn from(s: Box<str>) -> Text {
        Text::new(&s)
    }
}

impl From<&Text> for String {
    fn from(t: &Text) -> String {
        String::from(t.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn inline_and_heap_round_trip() {
        for s in [
            "",
            "a",
            "fourteen bytes",
            "fifteen bytes!!",
            "ü€𝄞 longer than inline",
        ] {
            let t = Text::new(s);
            assert_eq!(t.as_str(), s);
            assert_eq!(t.clone().as_str(), s);
            assert_eq!(t.heap_bytes(), if s.len() > INLINE { s.len() } else { 0 });
        }
    }

    #[test]
    fn order_and_equality_are_bytewise() {
        let long = "x".repeat(40);
        assert!(Text::new("a") < Text::new("b"));
        assert!(Text::new("abc") < Text::new(&long));
        assert_eq!(Text::new(&long), Text::new(&long.to_string()));
    }
}
