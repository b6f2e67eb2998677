//! Local headers, checked against the central directory, and readers of an entry's data.

use crate::platform::host::ReadAt;

use super::central::{extra_fields, parse_zip64};
use super::data::{Decoder, EntryReader, RangeReader};
use super::{
    Archive, DESCRIPTOR_SIG, DataSpan, Defect, Entry, EntryError, FLAG_DESCRIPTOR, FLAG_ENCRYPTED,
    LOCAL_LEN, LOCAL_SIG, METHOD_DEFLATE, METHOD_STORED, U32_SENTINEL, ZIP64_EXTRA, read_exact_at,
    u16_at, u32_at,
};

impl Archive {
    /// Reads and checks an entry's local header against the central directory; returns where
    /// the data lies. Mismatches that leave the data readable are pushed to `defects`.
    pub fn local_header(
        &self,
        entry: &Entry,
        defects: &mut Vec<Defect>,
    ) -> Result<DataSpan, EntryError> {
        let header = read_exact_at(
            &self.file,
            self.len,
            entry.header_offset,
            LOCAL_LEN,
            "the local header",
        )?;
        if u32_at(&header, 0) != LOCAL_SIG {
            return Err(EntryError::NoLocalHeader(entry.header_offset));
        }
        let flags = u16_at(&header, 6);
        let method = u16_at(&header, 8);
        let crc = u32_at(&header, 14);
        let compressed32 = u32_at(&header, 18);
        let size32 = u32_at(&header, 22);
        let name_len = usize::from(u16_at(&header, 26));
        let extra_len = usize::from(u16_at(&header, 28));
        let variable = read_exact_at(
            &self.file,
            self.len,
            entry.header_offset + LOCAL_LEN as u64,
            name_len + extra_len,
            "the local header's name and extra field",
        )?;
        let (name, extra) = variable.split_at(name_len);
        let mut mismatch = |what: String| defects.push(Defect::new(Some(&entry.name), what));
        if name != entry.raw_name.as_slice() {
            mismatch(format!(
                "the local header names it '{}' but the central directory says '{}'",
                String::from_utf8_lossy(name),
                entry.name
            ));
        }
        if method != entry.method {
            mismatch(format!(
                "compression method {method} in the local header, {} in the central directory",
                entry.method
            ));
        }
        if (flags ^ entry.flags) & (FLAG_ENCRYPTED | FLAG_DESCRIPTOR) != 0 {
            mismatch(format!(
                "flags 0x{flags:04x} in the local header, 0x{:04x} in the central directory",
                entry.flags
            ));
        }
        let mut local_zip64 = false;
        let mut size = u64::from(size32);
        let mut compressed = u64::from(compressed32);
        match extra_fields(extra) {
            Err(detail) => mismatch(format!("local header: {detail}")),
            Ok(fields) => {
                for (id, data) in fields {
                    if id != ZIP64_EXTRA {
                        continue;
                    }
                    local_zip64 = true;
                    // In a local header the ZIP64 field carries both sizes or nothing.
                    let sentinel = size32 == U32_SENTINEL || compressed32 == U32_SENTINEL;
                    match parse_zip64(data, [sentinel, sentinel, false, false], "local header") {
                        Ok(values) => {
                            size = values.size.unwrap_or(size);
                            compressed = values.compressed_size.unwrap_or(compressed);
                        }
                        Err(detail) => mismatch(detail.to_string()),
                    }
                }
            }
        }
        if !local_zip64 && (size32 == U32_SENTINEL || compressed32 == U32_SENTINEL) {
            mismatch("the local header holds 0xFFFFFFFF sizes but no ZIP64 extra field".into());
        }
        let deferred = flags & FLAG_DESCRIPTOR != 0;
        // With a data descriptor the local values may be zero; otherwise they must agree.
        let agrees = |local: u64, central: u64| local == central || (deferred && local == 0);
        if !agrees(u64::from(crc), u64::from(entry.crc32)) {
            mismatch(format!(
                "CRC-32 {crc:08x} in the local header, {:08x} in the central directory",
                entry.crc32
            ));
        }
        if !agrees(size, entry.size) || !agrees(compressed, entry.compressed_size) {
            mismatch(format!(
                "sizes {compressed}/{size} (compressed/uncompressed) in the local header, {}/{} \
                 in the central directory",
                entry.compressed_size, entry.size
            ));
        }
        let start = entry.header_offset + (LOCAL_LEN + name_len + extra_len) as u64;
        let data_end = start
            .checked_add(entry.compressed_size)
            .filter(|end| *end <= self.central_directory_offset)
            .ok_or(EntryError::PastCentralDirectory {
                size: entry.compressed_size,
                start,
                central: self.central_directory_offset,
            })?;
        let end = if deferred {
            data_end + self.descriptor_len(data_end, local_zip64)
        } else {
            data_end
        };
        Ok(DataSpan { start, end })
    }

    /// Length of the data descriptor at `at` (optional signature, CRC, two sizes).
    fn descriptor_len(&self, at: u64, zip64: bool) -> u64 {
        let mut sig = [0u8; 4];
        let signed = self.file.read_exact_at(&mut sig, at).is_ok()
            && u32::from_le_bytes(sig) == DESCRIPTOR_SIG;
        let sizes = if zip64 { 16 } else { 8 };
        if signed { 8 + sizes } else { 4 + sizes }
    }

    /// A reader of the entry's uncompressed data; it fails on a size or CRC mismatch.
    pub fn reader<'a>(
        &'a self,
        entry: &Entry,
        span: DataSpan,
    ) -> Result<EntryReader<'a>, EntryError> {
        let raw = RangeReader {
            file: &self.file,
            pos: span.start,
            end: span.start + entry.compressed_size,
        };
        let inner = match entry.method {
            METHOD_STORED => Decoder::Stored(raw),
            METHOD_DEFLATE => Decoder::Deflate(Box::new(
                flate2::read::DeflateDecoder::new_with_buf(raw, vec![0; 256 * 1024]),
            )),
            other => return Err(EntryError::Method(other)),
        };
        Ok(EntryReader {
            inner,
            declared: entry.size,
            crc_expected: entry.crc32,
            read: 0,
            crc: flate2::Crc::new(),
        })
    }
}
