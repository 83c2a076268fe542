//! The incarnation: the room opened from the current upstream hello, whether it is live,
//! its number and its downstream bootId. Each new upstream hello opens a new one; a
//! violation, a lost link or a fence ends it.

use alloc::string::String;

use crate::contract::JsonRoom;

/// The current incarnation.
#[derive(Debug, Default)]
pub(super) struct Incarnation {
    /// The room, once the upstream hello opened it.
    pub(super) room: Option<JsonRoom>,
    /// Whether the room serves (its seq-0 snapshot landed, the write plane booted).
    pub(super) live: bool,
    /// Counts incarnations: a result tagged with an older number is stale.
    pub(super) number: u64,
    /// The downstream bootId clients see in `nhello`.
    pub(super) boot_id: String,
    /// bootIds drawn so far (the counter their entropy is hashed with).
    pub(super) boot_seq: u64,
}

impl Incarnation {
    /// Draws the next bootId: a UUID v4 from SHA-256 of the driver's `entropy` and a
    /// counter.
    pub(super) fn next_boot_id(&mut self, entropy: &[u8]) {
        use sha2::{Digest, Sha256};
        self.boot_seq += 1;
        let mut h = Sha256::new();
        h.update(entropy);
        h.update(self.boot_seq.to_le_bytes());
        let digest = h.finalize();
        let mut b = [0u8; 16];
        b.copy_from_slice(&digest[..16]);
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        let mut s = String::with_capacity(36);
        for (i, byte) in b.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                s.push('-');
            }
            let hex = b"0123456789abcdef";
            s.push(char::from(hex[usize::from(byte >> 4)]));
            s.push(char::from(hex[usize::from(byte & 15)]));
        }
        self.boot_id = s;
    }
}
