//! Randomness for the host: its entropy seed, and ids for the demo.

use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh random incarnation id (UUID v4 text).
pub(crate) fn new_boot_id() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut bytes = [0u8; 16];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        // RandomState is seeded from the OS; the counter and time make every call differ.
        let mut h = RandomState::new().build_hasher();
        h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        h.write_usize(i);
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        chunk.copy_from_slice(&h.finish().to_le_bytes());
    }
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// 32 random bytes for the host's bootIds: the kernel's CSPRNG (`/dev/urandom`), or —
/// where that cannot be read — bytes mixed from the OS-seeded `RandomState`.
pub(crate) fn entropy() -> [u8; 32] {
    let mut bytes = [0u8; 32];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        if std::io::Read::read_exact(&mut f, &mut bytes).is_ok() {
            return bytes;
        }
    }
    for chunk in bytes.chunks_mut(16) {
        let hex: String = new_boot_id().chars().filter(|c| *c != '-').collect();
        for (j, b) in chunk.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[j * 2..j * 2 + 2], 16).unwrap_or(0);
        }
    }
    bytes
}

#[cfg(test)]
mod tests {
    #[test]
    fn boot_ids_are_uuid_shaped_and_differ() {
        let a = super::new_boot_id();
        let b = super::new_boot_id();
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert_ne!(a, b);
    }
}
