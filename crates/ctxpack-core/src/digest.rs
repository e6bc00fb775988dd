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
    fn known_vector() {
        // SHA-256 of the JSON string "abc" (five bytes with the quotes).
        assert_eq!(
            super::content_id(&"abc"),
            "6cc43f858fbb763301637b5af970e2a46b46f461f27e5a0f41e009c59b827b25"
        );
    }
}
