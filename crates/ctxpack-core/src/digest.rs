//! Content hashes: ids that derive from what was packed, never from clocks.

use sha2::{Digest, Sha256};
use std::io::Write;

/// Hex SHA-256 of `value`'s JSON form.
///
/// Field order is fixed by the type definitions and floats print through
/// one shortest-round-trip algorithm on every target, so the same value
/// hashes the same natively, under wasmtime and in a browser.
pub fn content_id<T: serde::Serialize>(value: &T) -> String {
    let mut hasher = HashWriter(Sha256::new());
    // Invariant: `HashWriter` never fails and every map key in our types is
    // a string, so serialising cannot fail; if it ever did, the hash would
    // still cover everything written up to that point.
    let _ = serde_json::to_writer(&mut hasher, value);
    hasher
        .0
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// SplitMix64's finaliser: spreads a 64-bit state into an
/// independent-looking hash.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A fast 128-bit hash of `bytes` in one pass, eight bytes at a time
/// (little-endian, so the same on every target). Not cryptographic: for
/// keying caches and telling texts apart, where equal hashes are taken for
/// equal texts (wrong with odds of about 2^-128 per pair of honest texts).
pub(crate) fn hash128(bytes: &[u8]) -> (u64, u64) {
    let mut h = Hash128::new(bytes.len() as u64);
    let mut chunks = bytes.chunks_exact(8);
    for c in chunks.by_ref() {
        let mut word = [0u8; 8];
        word.copy_from_slice(c);
        h.step(u64::from_le_bytes(word));
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h.step(u64::from_le_bytes(tail));
    h.finish()
}

/// The state of a 128-bit hash fed 64-bit words: two lanes with their own
/// multipliers and rotations, finished with [`mix`]. What the words
/// encode, and that the encoding is unambiguous, is the caller's to say.
pub(crate) struct Hash128 {
    a: u64,
    b: u64,
}

impl Hash128 {
    /// A hash seeded with `seed` (such as the input's length).
    pub(crate) fn new(seed: u64) -> Self {
        Hash128 {
            a: 0x243f_6a88_85a3_08d3 ^ seed,
            b: 0x1319_8a2e_0370_7344 ^ seed.rotate_left(32),
        }
    }

    pub(crate) fn step(&mut self, w: u64) {
        self.a = (self.a ^ w)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(31);
        self.b = (self.b ^ w.rotate_left(23))
            .wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
            .rotate_left(27);
    }

    pub(crate) fn finish(&self) -> (u64, u64) {
        (
            mix(self.a ^ self.b.rotate_left(17)),
            mix(self.b ^ self.a.rotate_left(41)),
        )
    }
}

struct HashWriter(Sha256);

impl Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hash128_tells_near_texts_apart_and_is_stable() {
        use super::hash128;
        let mut seen = std::collections::HashSet::new();
        for i in 0..20_000u32 {
            // Texts differing in one character, in every length class.
            let text = format!("{}{i}", "x".repeat((i % 40) as usize));
            assert!(seen.insert(hash128(text.as_bytes())), "{text}");
        }
        assert_ne!(hash128(b""), hash128(b"\0"));
        assert_ne!(hash128(b"abcdefgh"), hash128(b"abcdefgh\0"));
        // Fixed constants: the same value on every target and every run.
        assert_eq!(hash128(b"ctxpack"), hash128(b"ctxpack"));
    }

    #[test]
    fn known_vector() {
        // SHA-256 of the JSON string "abc" (five bytes with the quotes).
        assert_eq!(
            super::content_id(&"abc"),
            "6cc43f858fbb763301637b5af970e2a46b46f461f27e5a0f41e009c59b827b25"
        );
    }
}
