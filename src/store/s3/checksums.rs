//! S3 checksums as rockbuild needs them: SHA-256 as lowercase hex everywhere, base64 on the
//! wire, and no composite multipart checksum mistaken for the SHA-256 of the bytes.

use base64::Engine as _;

pub(super) fn hex_to_base64(hex_digest: &str) -> Option<String> {
    hex::decode(hex_digest)
        .ok()
        .map(|bytes| base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// A full-object SHA-256 checksum as hex. Multipart objects report a checksum of the part
/// checksums (`…-N`), which is not the SHA-256 of the bytes.
pub(super) fn base64_to_hex(checksum: &str) -> Option<String> {
    if checksum.contains('-') {
        return None;
    }
    base64::engine::general_purpose::STANDARD
        .decode(checksum)
        .ok()
        .filter(|bytes| bytes.len() == 32)
        .map(hex::encode)
}

pub(super) fn valid_sha256(hex_digest: &str) -> Option<String> {
    let lower = hex_digest.to_ascii_lowercase();
    (lower.len() == 64 && lower.bytes().all(|b| b.is_ascii_hexdigit())).then_some(lower)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_encodings() {
        let hex_digest = crate::fsutil::sha256_hex(b"abc");
        let b64 = hex_to_base64(&hex_digest).expect("b64");
        assert_eq!(b64, "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
        assert_eq!(base64_to_hex(&b64).as_deref(), Some(hex_digest.as_str()));
        assert_eq!(
            base64_to_hex("ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=-3"),
            None,
            "composite"
        );
        assert_eq!(valid_sha256(&hex_digest.to_uppercase()), Some(hex_digest));
        assert_eq!(valid_sha256("nothex"), None);
    }
}
