//! Random tokens for names a page or another process must not guess.

/// `n` random bytes as hex: `/dev/urandom`, else the standard library's
/// randomly keyed hasher (never the same twice in a process).
pub(crate) fn random_hex(n: usize) -> String {
    use std::io::Read;
    let mut bytes = vec![0u8; n];
    let urandom = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if urandom.is_err() {
        use std::hash::{BuildHasher, Hasher};
        for chunk in bytes.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(0);
            chunk.copy_from_slice(&h.finish().to_le_bytes()[..chunk.len()]);
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
