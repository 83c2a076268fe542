//! The allocation behind a [`Row`](super::Row): a 4-byte reference count followed by the
//! row's image, reached through one thin pointer.
//!
//! `Arc<[u8]>` costs a 16-byte pointer in every slot that holds a row and 16 bytes of
//! counters in front of every image; here a slot holds 8 bytes and the image 4. The
//! image says its own length (its last cell's end offset, see the module docs of
//! [`row`](super::row)), so neither the pointer nor the allocation keeps one.
//!
//! The count follows `Arc`'s protocol: a relaxed increment per clone, a releasing
//! decrement per drop, and an acquiring fence before the last holder frees the image.

use alloc::alloc::{alloc, dealloc, handle_alloc_error};
use core::alloc::Layout;
use core::mem::MaybeUninit;
use core::ptr::NonNull;
use core::sync::atomic::{fence, AtomicU32, Ordering};

/// Bytes in front of the image: the reference count.
const COUNT: usize = 4;
/// Holders past this are refused (a panic, after which the image is never freed).
const MAX_HOLDERS: u32 = i32::MAX as u32;

/// The image header's size: `width << 2 | offset width code`, a `u16`.
pub(super) const HEADER: usize = 2;

/// The most cells a row holds (the header keeps the width in 14 bits).
pub const MAX_ROW_CELLS: usize = (u16::MAX >> 2) as usize;

/// The width (cells) and the offset width's shift of the image at `b`: offsets are
/// `1 << shift` bytes (1, 2 or 4).
///
/// # Safety
///
/// `b` points at a packed image (at least its 2-byte header).
#[inline(always)]
pub(super) unsafe fn header(b: *const u8) -> (usize, u32) {
    // SAFETY: the caller's image has its header.
    let h = u16::from_le_bytes(unsafe { b.cast::<[u8; 2]>().read_unaligned() });
    // The code is 0, 1 or 2 (`header_bytes`): the offset width is 1, 2 or 4.
    ((h >> 2) as usize, u32::from(h & 3))
}

/// Where the cells of an image of `width` cells and offsets of `1 << shift` bytes
/// start: just past the offset table.
#[inline(always)]
pub(super) fn cells_start(width: usize, shift: u32) -> usize {
    HEADER + (width << shift)
}

/// The header of a row of `width` cells (at most [`MAX_ROW_CELLS`]) and offsets of `w`
/// bytes.
pub(super) fn header_bytes(width: usize, w: usize) -> [u8; HEADER] {
    let code = match w {
        1 => 0,
        2 => 1,
        _ => 2,
    };
    ((width as u16) << 2 | code).to_le_bytes()
}

/// Where cell `col` ends (the offset just past its last byte).
///
/// # Safety
///
/// `b` points at a packed image of offsets of `1 << shift` bytes with more than `col`
/// cells.
#[inline(always)]
pub(super) unsafe fn end_of(b: *const u8, shift: u32, col: usize) -> usize {
    // SAFETY: the offset table holds `width` entries of `1 << shift` bytes after the
    // header.
    unsafe {
        let at = b.add(HEADER + (col << shift));
        match shift {
            0 => *at as usize,
            1 => u16::from_le_bytes(at.cast::<[u8; 2]>().read_unaligned()) as usize,
            _ => u32::from_le_bytes(at.cast::<[u8; 4]>().read_unaligned()) as usize,
        }
    }
}

/// The image's length in bytes.
///
/// # Safety
///
/// `b` points at a whole packed image.
#[inline]
pub(super) unsafe fn image_len(b: *const u8) -> usize {
    // SAFETY: as the caller promises.
    unsafe {
        let (width, shift) = header(b);
        if width == 0 {
            HEADER
        } else {
            end_of(b, shift, width - 1)
        }
    }
}

/// One shared, immutable row image (see the module docs).
pub(super) struct Image(NonNull<u8>);

// SAFETY: the image is never written after it is built, and the count is atomic: like
// `Arc<[u8]>`, an `Image` may be sent and shared between threads.
unsafe impl Send for Image {}
// SAFETY: as above.
unsafe impl Sync for Image {}

impl Image {
    /// An image of `len` bytes written by `write`, which returns how many it wrote.
    ///
    /// # Panics
    ///
    /// If `write` wrote another number of bytes (the allocation is then leaked, never
    /// read), or `len` does not fit a layout.
    pub(super) fn new(len: usize, write: impl FnOnce(&mut [MaybeUninit<u8>]) -> usize) -> Image {
        let layout = Layout::from_size_align(COUNT + len, 4).expect("a row image fits in memory");
        // SAFETY: the layout is not zero-sized (it holds the count).
        let Some(base) = NonNull::new(unsafe { alloc(layout) }) else {
            handle_alloc_error(layout)
        };
        // SAFETY: `base` is a fresh allocation of `COUNT + len` bytes aligned to 4: the
        // count fits at its start, and the `len` bytes after it are ours to write.
        let buf = unsafe {
            base.as_ptr().cast::<AtomicU32>().write(AtomicU32::new(1));
            core::slice::from_raw_parts_mut(base.as_ptr().add(COUNT).cast::<MaybeUninit<u8>>(), len)
        };
        let written = write(buf);
        assert_eq!(written, len, "the cells changed while being packed");
        let image = Image(base);
        debug_assert_eq!(
            // SAFETY: every byte was written.
            unsafe { image_len(image.as_ptr()) },
            len,
            "an image says its own length"
        );
        image
    }

    /// The image's first byte.
    #[inline(always)]
    pub(super) fn as_ptr(&self) -> *const u8 {
        // SAFETY: the image follows the count inside the allocation.
        unsafe { self.0.as_ptr().add(COUNT) }
    }

    /// The image's bytes.
    #[inline]
    pub(super) fn bytes(&self) -> &[u8] {
        // SAFETY: the allocation holds a whole image, alive while `self` is.
        unsafe { core::slice::from_raw_parts(self.as_ptr(), image_len(self.as_ptr())) }
    }

    /// Heap bytes: the count and the image.
    pub(super) fn allocation_size(&self) -> usize {
        COUNT + self.bytes().len()
    }

    /// Whether both are the same image.
    #[inline]
    pub(super) fn same(a: &Image, b: &Image) -> bool {
        a.0 == b.0
    }

    #[inline(always)]
    fn count(&self) -> &AtomicU32 {
        // SAFETY: the allocation starts with the count, alive while `self` is.
        unsafe { self.0.cast::<AtomicU32>().as_ref() }
    }
}

impl Clone for Image {
    #[inline]
    fn clone(&self) -> Image {
        let before = self.count().fetch_add(1, Ordering::Relaxed);
        if before > MAX_HOLDERS {
            // Refused; the count stays past the limit, so the image is never freed.
            panic!("a row image shared by more than {MAX_HOLDERS} holders");
        }
        Image(self.0)
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        if self.count().fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        // SAFETY: this was the last holder: nothing else reads the image; the layout is
        // the one `new` allocated with (the image says its own length).
        unsafe {
            let len = image_len(self.as_ptr());
            dealloc(
                self.0.as_ptr(),
                Layout::from_size_align_unchecked(COUNT + len, 4),
            );
        }
    }
}
