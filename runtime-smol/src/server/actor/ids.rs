//! Randomness for the host (its entropy seed), bootIds and the demo's secrets, all from
//! the OS CSPRNG (`getrandom`: `getrandom(2)` on Linux, the platform's equivalent
//! elsewhere).

/// `N` bytes from the OS CSPRNG.
///
/// # Panics
///
/// When the OS cannot supply randomness (no `getrandom(2)` and no readable
/// `/dev/urandom`) — as std's `HashMap` seeding does: nothing that needs a secret can
/// run safely without it.
pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    if let Err(e) = getrandom::fill(&mut bytes) {
        panic!("the operating system's random number generator failed: {e}");
    }
    bytes
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

/// A fresh random incarnation id (UUID v4 text).
pub(crate) fn new_boot_id() -> String {
    let mut bytes: [u8; 16] = random_bytes();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex = hex(&bytes);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// 32 random bytes for the host's bootIds.
pub(crate) fn entropy() -> [u8; 32] {
    random_bytes()
}

#[cfg(test)]
mod tests {
    #[test]
    fn boot_ids_are_uuid_shaped_and_differ() {
        let a = super::new_boot_id();
        let b = super::new_boot_id();
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
        assert_ne!(a, b);
    }

    #[test]
    fn entropy_differs_and_hex_is_lowercase() {
        assert_ne!(super::entropy(), super::entropy());
        assert_eq!(super::hex(&[0x00, 0xab, 0x7f]), "00ab7f");
    }
}
