//! A minimal zip writer for rewriting wheels: entries raw-copied from an [`Archive`] (their
//! compressed bytes, CRC and sizes unchanged) and new deflated entries, then the central
//! directory, with ZIP64 fields written exactly where a value does not fit its 32-bit field.
//!
//! Why not zip's `raw_copy_file`: zip 9.4 copies the source entry's parsed extra fields into
//! the new headers verbatim, ZIP64 field included. An entry of a ZIP64 wheel then carries a
//! ZIP64 field (sizes, or its *old* offset) that no 0xFFFFFFFF sentinel asks for, and uv
//! refuses the wheel ("zip64 extended information field was too long") — the pypa/wheel#692
//! defect again, on exactly the wheels over 4 GiB that promotion rewrites.

use crate::platform::host::ReadAt;
use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};

use crate::wheel::archive::{Archive, DataSpan, Entry, METHOD_DEFLATE, METHOD_STORED};

const LOCAL_SIG: u32 = 0x0403_4b50;
const CENTRAL_SIG: u32 = 0x0201_4b50;
const EOCD_SIG: u32 = 0x0605_4b50;
const EOCD64_SIG: u32 = 0x0606_4b50;
const EOCD64_LOCATOR_SIG: u32 = 0x0706_4b50;
const U32_MAX: u64 = 0xFFFF_FFFF;
const U16_MAX: u64 = 0xFFFF;
const FLAG_UTF8: u16 = 1 << 11;
/// Entries at least this big are copied file to file, smaller ones through the buffer.
const DIRECT_COPY_MIN: u64 = 1 << 20;
/// Unix host, spec version 4.5 (ZIP64).
const MADE_BY: u16 = (3 << 8) | 45;

struct Record {
    name: Vec<u8>,
    method: u16,
    dos_time: u16,
    dos_date: u16,
    crc32: u32,
    compressed: u64,
    size: u64,
    offset: u64,
    external_attributes: u32,
}

impl Record {
    fn flags(&self) -> u16 {
        if self.name.is_ascii() { 0 } else { FLAG_UTF8 }
    }
}

pub struct ZipOut {
    out: BufWriter<File>,
    offset: u64,
    records: Vec<Record>,
}

fn fits(value: u64) -> bool {
    value < U32_MAX
}

impl ZipOut {
    pub fn new(file: File) -> ZipOut {
        ZipOut {
            out: BufWriter::with_capacity(1 << 20, file),
            offset: 0,
            records: Vec::new(),
        }
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    fn local_header(&mut self, record: &Record) -> io::Result<()> {
        // A local header carries both sizes in ZIP64 form, or neither (APPNOTE 4.5.3).
        let zip64 = !fits(record.size) || !fits(record.compressed);
        let mut header = Vec::with_capacity(30 + record.name.len() + 20);
        header.extend_from_slice(&LOCAL_SIG.to_le_bytes());
        header.extend_from_slice(&(if zip64 { 45u16 } else { 20u16 }).to_le_bytes());
        header.extend_from_slice(&record.flags().to_le_bytes());
        header.extend_from_slice(&record.method.to_le_bytes());
        header.extend_from_slice(&record.dos_time.to_le_bytes());
        header.extend_from_slice(&record.dos_date.to_le_bytes());
        header.extend_from_slice(&record.crc32.to_le_bytes());
        let (compressed, size) = if zip64 {
            (U32_MAX as u32, U32_MAX as u32)
        } else {
            (record.compressed as u32, record.size as u32)
        };
        header.extend_from_slice(&compressed.to_le_bytes());
        header.extend_from_slice(&size.to_le_bytes());
        header.extend_from_slice(&(record.name.len() as u16).to_le_bytes());
        header.extend_from_slice(&(if zip64 { 20u16 } else { 0u16 }).to_le_bytes());
        header.extend_from_slice(&record.name);
        if zip64 {
            header.extend_from_slice(&1u16.to_le_bytes());
            header.extend_from_slice(&16u16.to_le_bytes());
            header.extend_from_slice(&record.size.to_le_bytes());
            header.extend_from_slice(&record.compressed.to_le_bytes());
        }
        self.write(&header)
    }

    /// Copies an entry's compressed data unchanged under `name` (no inflate, no deflate).
    pub fn raw_copy(
        &mut self,
        source: &Archive,
        entry: &Entry,
        span: DataSpan,
        name: &str,
    ) -> io::Result<()> {
        let record = Record {
            name: name.as_bytes().to_vec(),
            method: entry.method,
            dos_time: entry.dos_time,
            dos_date: entry.dos_date,
            crc32: entry.crc32,
            compressed: entry.compressed_size,
            size: entry.size,
            offset: self.offset,
            external_attributes: entry.external_attributes,
        };
        self.local_header(&record)?;
        let copied = if entry.compressed_size < DIRECT_COPY_MIN {
            // Small entries go through the buffer: one pread, no flush.
            let mut data = vec![0u8; entry.compressed_size as usize];
            source.file().read_exact_at(&mut data, span.start)?;
            self.out.write_all(&data)?;
            entry.compressed_size
        } else {
            // Big ones go file to file: std turns this into copy_file_range on Linux.
            self.out.flush()?;
            let mut reader = source.file().try_clone()?;
            reader.seek(SeekFrom::Start(span.start))?;
            io::copy(&mut reader.take(entry.compressed_size), self.out.get_mut())?
        };
        if copied != entry.compressed_size {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "'{}': copied {copied} of {} bytes",
                    entry.name, entry.compressed_size
                ),
            ));
        }
        self.offset += copied;
        self.records.push(record);
        Ok(())
    }

    /// Adds `data` deflated, with the time and mode of `template`.
    pub fn add(&mut self, name: &str, data: &[u8], template: &Entry) -> io::Result<()> {
        let mut encoder =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(data)?;
        let compressed = encoder.finish()?;
        self.add_encoded(name, data, &compressed, METHOD_DEFLATE, template)
    }

    /// Adds `data` stored as it is (already compressed data, such as a kernel pack, gains
    /// nothing from deflate), with the time and mode of `template`.
    pub fn add_stored(&mut self, name: &str, data: &[u8], template: &Entry) -> io::Result<()> {
        self.add_encoded(name, data, data, METHOD_STORED, template)
    }

    fn add_encoded(
        &mut self,
        name: &str,
        data: &[u8],
        compressed: &[u8],
        method: u16,
        template: &Entry,
    ) -> io::Result<()> {
        let mut crc = flate2::Crc::new();
        crc.update(data);
        let record = Record {
            name: name.as_bytes().to_vec(),
            method,
            dos_time: template.dos_time,
            dos_date: template.dos_date,
            crc32: crc.sum(),
            compressed: compressed.len() as u64,
            size: data.len() as u64,
            offset: self.offset,
            external_attributes: file_attributes(template.external_attributes),
        };
        self.local_header(&record)?;
        self.write(compressed)?;
        self.records.push(record);
        Ok(())
    }

    /// Writes the central directory and end records; returns the flushed file.
    pub fn finish(mut self) -> io::Result<File> {
        let cd_offset = self.offset;
        let records = std::mem::take(&mut self.records);
        for record in &records {
            let mut zip64 = Vec::new();
            let size = if fits(record.size) {
                record.size as u32
            } else {
                zip64.extend_from_slice(&record.size.to_le_bytes());
                U32_MAX as u32
            };
            let compressed = if fits(record.compressed) {
                record.compressed as u32
            } else {
                zip64.extend_from_slice(&record.compressed.to_le_bytes());
                U32_MAX as u32
            };
            let offset = if fits(record.offset) {
                record.offset as u32
            } else {
                zip64.extend_from_slice(&record.offset.to_le_bytes());
                U32_MAX as u32
            };
            let mut header = Vec::with_capacity(46 + record.name.len() + 28);
            header.extend_from_slice(&CENTRAL_SIG.to_le_bytes());
            header.extend_from_slice(&MADE_BY.to_le_bytes());
            header.extend_from_slice(&(if zip64.is_empty() { 20u16 } else { 45u16 }).to_le_bytes());
            header.extend_from_slice(&record.flags().to_le_bytes());
            header.extend_from_slice(&record.method.to_le_bytes());
            header.extend_from_slice(&record.dos_time.to_le_bytes());
            header.extend_from_slice(&record.dos_date.to_le_bytes());
            header.extend_from_slice(&record.crc32.to_le_bytes());
            header.extend_from_slice(&compressed.to_le_bytes());
            header.extend_from_slice(&size.to_le_bytes());
            header.extend_from_slice(&(record.name.len() as u16).to_le_bytes());
            let extra_len = if zip64.is_empty() { 0 } else { zip64.len() + 4 };
            header.extend_from_slice(&(extra_len as u16).to_le_bytes());
            header.extend_from_slice(&[0, 0, 0, 0, 0, 0]); // comment length, disk, internal attributes
            header.extend_from_slice(&record.external_attributes.to_le_bytes());
            header.extend_from_slice(&offset.to_le_bytes());
            header.extend_from_slice(&record.name);
            if !zip64.is_empty() {
                header.extend_from_slice(&1u16.to_le_bytes());
                header.extend_from_slice(&(zip64.len() as u16).to_le_bytes());
                header.extend_from_slice(&zip64);
            }
            self.write(&header)?;
        }
        let cd_size = self.offset - cd_offset;
        let count = records.len() as u64;
        if count >= U16_MAX || !fits(cd_size) || !fits(cd_offset) {
            let record_at = self.offset;
            let mut end64 = Vec::with_capacity(76);
            end64.extend_from_slice(&EOCD64_SIG.to_le_bytes());
            end64.extend_from_slice(&44u64.to_le_bytes());
            end64.extend_from_slice(&MADE_BY.to_le_bytes());
            end64.extend_from_slice(&45u16.to_le_bytes());
            end64.extend_from_slice(&[0; 8]); // this disk, directory disk
            end64.extend_from_slice(&count.to_le_bytes());
            end64.extend_from_slice(&count.to_le_bytes());
            end64.extend_from_slice(&cd_size.to_le_bytes());
            end64.extend_from_slice(&cd_offset.to_le_bytes());
            end64.extend_from_slice(&EOCD64_LOCATOR_SIG.to_le_bytes());
            end64.extend_from_slice(&0u32.to_le_bytes());
            end64.extend_from_slice(&record_at.to_le_bytes());
            end64.extend_from_slice(&1u32.to_le_bytes());
            self.write(&end64)?;
        }
        let count16 = count.min(U16_MAX) as u16;
        let mut end = Vec::with_capacity(22);
        end.extend_from_slice(&EOCD_SIG.to_le_bytes());
        end.extend_from_slice(&[0; 4]);
        end.extend_from_slice(&count16.to_le_bytes());
        end.extend_from_slice(&count16.to_le_bytes());
        end.extend_from_slice(&(cd_size.min(U32_MAX) as u32).to_le_bytes());
        end.extend_from_slice(&(cd_offset.min(U32_MAX) as u32).to_le_bytes());
        end.extend_from_slice(&0u16.to_le_bytes());
        self.write(&end)?;
        self.out.flush()?;
        self.out.into_inner().map_err(|e| e.into_error())
    }
}

/// The attributes of a written entry: a regular file keeps its template's; permissions without
/// a file type (what Python's `zipfile.writestr` writes, `0o600`) are a regular file with
/// those permissions, as an unpacker makes it; anything else becomes rw-r--r--.
fn file_attributes(template: u32) -> u32 {
    let mode = template >> 16;
    match mode & 0o170000 {
        0o100000 => template,
        0 if mode & 0o7777 != 0 => (0o100000 | (mode & 0o7777)) << 16,
        _ => 0o100644 << 16,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_entries_are_regular_files_keeping_their_permissions() {
        // An executable, zipfile.writestr's bare 0o600, a symlink, nothing at all.
        let modes = [0o100755 << 16, 0o600 << 16, 0o120777 << 16, 0];
        let written: Vec<u32> = modes.iter().map(|m| file_attributes(*m) >> 16).collect();
        assert_eq!(written, [0o100755, 0o100600, 0o100644, 0o100644]);
    }

    #[test]
    fn copies_entries_raw_and_writes_a_strictly_valid_archive() {
        // A source written by the zip crate: a stored entry big enough to be copied file to
        // file, and a small deflated one copied through the buffer.
        let mut source_file = tempfile::tempfile().expect("tempfile");
        {
            let mut writer = zip::ZipWriter::new(&mut source_file);
            let stored = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Stored);
            writer.start_file("a/stored.bin", stored).expect("start");
            writer.write_all(&vec![5u8; 2 << 20]).expect("write");
            let deflated = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated);
            writer
                .start_file("a/deflated.txt", deflated)
                .expect("start");
            writer.write_all(&b"text ".repeat(500)).expect("write");
            writer.finish().expect("finish");
        }
        let mut defects = Vec::new();
        let source = Archive::open(source_file, &mut defects).expect("source");
        let mut out = ZipOut::new(tempfile::tempfile().expect("tempfile"));
        for entry in &source.entries {
            let span = source.local_header(entry, &mut defects).expect("span");
            out.raw_copy(&source, entry, span, &format!("b/{}", entry.name))
                .expect("copy");
        }
        out.add("b/new.txt", b"hello", &source.entries[0])
            .expect("add");
        let written = out.finish().expect("finish");
        let copy = Archive::open(written, &mut defects).expect("reopens");
        assert!(defects.is_empty(), "{defects:?}");
        let names: Vec<&str> = copy.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["b/a/stored.bin", "b/a/deflated.txt", "b/new.txt"]);
        let mut contents = Vec::new();
        for entry in &copy.entries {
            let span = copy.local_header(entry, &mut defects).expect("span");
            let mut data = Vec::new();
            copy.reader(entry, span)
                .expect("reader")
                .read_to_end(&mut data)
                .expect("read");
            contents.push(data);
        }
        assert!(defects.is_empty(), "{defects:?}");
        // Compared by digest: a failure should not print megabytes.
        let digests: Vec<String> = contents
            .iter()
            .map(|c| crate::fsutil::sha256_hex(c))
            .collect();
        let expected: Vec<String> = [vec![5u8; 2 << 20], b"text ".repeat(500), b"hello".to_vec()]
            .iter()
            .map(|c| crate::fsutil::sha256_hex(c))
            .collect();
        assert_eq!(digests, expected);
        assert_eq!(copy.entries[0].dos_date, source.entries[0].dos_date);
    }
}
