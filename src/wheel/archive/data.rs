//! Reading an entry's bytes: positioned reads of a range of the file, inflated when
//! deflated, checked against the declared size and CRC-32 as they stream.

use crate::platform::host::ReadAt;
use std::fs::File;
use std::io::{self, Read};

/// Sequential reads of a byte range of a file through `pread`.
pub struct RangeReader<'a> {
    pub(super) file: &'a File,
    pub(super) pos: u64,
    pub(super) end: u64,
}

impl Read for RangeReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.end.saturating_sub(self.pos);
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..want], self.pos)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file ends early",
            ));
        }
        self.pos += n as u64;
        Ok(n)
    }
}

pub(super) enum Decoder<'a> {
    Stored(RangeReader<'a>),
    Deflate(Box<flate2::read::DeflateDecoder<RangeReader<'a>>>),
}

/// The uncompressed data of one entry. Reading past the declared size, ending before it, or a
/// CRC-32 mismatch is an `InvalidData` error naming the numbers.
pub struct EntryReader<'a> {
    pub(super) inner: Decoder<'a>,
    pub(super) declared: u64,
    pub(super) crc_expected: u32,
    pub(super) read: u64,
    pub(super) crc: flate2::Crc,
}

impl Read for EntryReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // Ask for one byte more than declared so an overlong stream is noticed, never more:
        // a zip bomb cannot make us inflate beyond what the header promised.
        let left = self.declared.saturating_sub(self.read).saturating_add(1);
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = match &mut self.inner {
            Decoder::Stored(r) => r.read(&mut buf[..want]),
            Decoder::Deflate(r) => r.read(&mut buf[..want]),
        }
        .map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the compressed data is corrupt: {e}"),
            )
        })?;
        self.read += n as u64;
        if self.read > self.declared {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "it inflates to more than the {} bytes its header declares",
                    self.declared
                ),
            ));
        }
        self.crc.update(&buf[..n]);
        if n == 0 {
            if self.read != self.declared {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "its data ends after {} bytes but its header declares {}",
                        self.read, self.declared
                    ),
                ));
            }
            if self.crc.sum() != self.crc_expected {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "CRC-32 of its data is {:08x} but its header says {:08x}",
                        self.crc.sum(),
                        self.crc_expected
                    ),
                ));
            }
        }
        Ok(n)
    }
}
