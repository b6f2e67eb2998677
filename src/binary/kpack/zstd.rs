//! One zstd frame per code object, as kpack's `zstd-per-kernel` scheme stores them.
//!
//! rocm-kpack compresses with python-zstandard (`ZstdCompressor(level=3).compress`), whose
//! frames record their content size; its own reader (`ZstdDecompressor().decompress`) needs
//! that size, so a frame without it is unreadable to the reference's tools. ruzstd, already
//! built for reading compressed offload bundles, encodes standard frames (its fastest
//! strategy, about zstd's level 1) but leaves the size out; [`compress`] writes it into the
//! frame header (RFC 8878 §3.1.1.1: the descriptor's `Frame_Content_Size_flag` and the field
//! after the window descriptor). The blocks are untouched, so the frame stays valid.

use std::io::Read;

const MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Why a frame cannot be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ZstdError {
    #[error("the encoder wrote an unexpected frame header")]
    Header,
    #[error("not a zstd frame: {0}")]
    Decode(String),
    #[error("decompressed {got} bytes, the table of contents says {expected}")]
    Size { got: u64, expected: u64 },
}

/// `data` as one zstd frame that records its content size.
pub fn compress(data: &[u8]) -> Result<Vec<u8>, ZstdError> {
    let frame =
        ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest);
    // ruzstd's header: magic, a descriptor with no flags but perhaps the checksum bit, one
    // window descriptor byte (no single-segment, no dictionary, no content size).
    if frame.len() < 6 || frame[..4] != MAGIC || frame[4] & !0x04 != 0 {
        return Err(ZstdError::Header);
    }
    let checksum = frame[4] & 0x04;
    let window = frame[5];
    let size = data.len() as u64;
    let (flag, field): (u8, Vec<u8>) = if (256..=65791).contains(&size) {
        (1, ((size - 256) as u16).to_le_bytes().to_vec())
    } else if let Ok(small) = u32::try_from(size) {
        (2, small.to_le_bytes().to_vec())
    } else {
        (3, size.to_le_bytes().to_vec())
    };
    let mut out = Vec::with_capacity(frame.len() + field.len());
    out.extend_from_slice(&MAGIC);
    out.push((flag << 6) | checksum);
    out.push(window);
    out.extend_from_slice(&field);
    out.extend_from_slice(&frame[6..]);
    Ok(out)
}

/// Decompresses one frame, which must yield exactly `expected` bytes.
pub fn decompress(frame: &[u8], expected: u64) -> Result<Vec<u8>, ZstdError> {
    let decoder = ruzstd::decoding::StreamingDecoder::new(frame)
        .map_err(|e| ZstdError::Decode(e.to_string()))?;
    let mut out = Vec::with_capacity(usize::try_from(expected.min(1 << 30)).unwrap_or(0));
    // One byte past the expected size is enough to notice a frame that says more.
    decoder
        .take(expected.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| ZstdError::Decode(e.to_string()))?;
    if out.len() as u64 != expected {
        return Err(ZstdError::Size {
            got: out.len() as u64,
            expected,
        });
    }
    Ok(out)
}

/// The content size a frame header records, if any (RFC 8878 §3.1.1.1.4).
#[cfg(test)]
pub fn content_size(frame: &[u8]) -> Option<u64> {
    let descriptor = *frame.get(4)?;
    let single_segment = descriptor & 0x20 != 0;
    let dictionary = [0usize, 1, 2, 4][usize::from(descriptor & 0x03)];
    let at = 5 + usize::from(!single_segment) + dictionary;
    let field = |n: usize| -> Option<u64> {
        let bytes = frame.get(at..at + n)?;
        Some(
            bytes
                .iter()
                .rev()
                .fold(0u64, |acc, b| (acc << 8) | u64::from(*b)),
        )
    };
    match descriptor >> 6 {
        0 if single_segment => field(1),
        0 => None,
        1 => field(2).map(|v| v + 256),
        2 => field(4),
        _ => field(8),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_record_their_size_and_round_trip() {
        for size in [0usize, 1, 255, 256, 4096, 65791, 65792, 300_000] {
            let data: Vec<u8> = (0..size)
                .map(|i| (i % 251) as u8 ^ (i / 997) as u8)
                .collect();
            let frame = compress(&data).expect("compress");
            assert_eq!(content_size(&frame), Some(size as u64), "size {size}");
            assert_eq!(decompress(&frame, size as u64).expect("decompress"), data);
        }
        let frame = compress(b"kernel").expect("compress");
        assert!(matches!(
            decompress(&frame, 5),
            Err(ZstdError::Size {
                got: 6,
                expected: 5
            })
        ));
        assert!(decompress(b"not zstd", 3).is_err());
    }
}
