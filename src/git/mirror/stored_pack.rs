//! Writes a pack of objects stored as-is: pack format 2 with an index of version 2
//! (gitformat-pack(5)), every entry a whole object (no deltas) in a zlib stream of *stored*
//! blocks (RFC 1950/1951: no compression, as `pack-objects --compression=0` writes them).
//!
//! Why not `git pack-objects`: it reads every object from the mirror's packs, so it inflates
//! and un-deltas each one, then checksums the result with collision-detecting SHA-1 — at torch
//! scale 0.65 CPU-s for one commit, 1.8 CPU-s for a whole stack, on the machine a cold checkout
//! already keeps busy. The files were just written by the checkout and are in the page cache:
//! read from the working tree and hashed (SHA-1 with the CPU's instructions), a blob whose hash
//! is its object id *is* that blob, whatever hipify or a filter did to other files. The ones
//! that differ, trees and the commit come from the object database.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use git2::{ObjectType, Oid};
use sha1::{Digest, Sha1};

/// Bytes of data in one stored deflate block (its length field is 16 bits).
const BLOCK: usize = 0xffff;

/// Whether `data` is the object `id` of `kind` (its id is the SHA-1 of a header and `data`).
pub fn is_object(id: Oid, kind: ObjectType, data: &[u8]) -> bool {
    let mut hasher = Sha1::new();
    hasher.update(format!("{} {}\0", kind.str(), data.len()).as_bytes());
    hasher.update(data);
    hasher.finalize().as_slice() == id.as_bytes()
}

/// A pack being written: its entries as they are added, then the checksum and the index.
pub struct StoredPack {
    out: Checksummed<BufWriter<std::fs::File>>,
    /// (object id, CRC-32 of its entry, offset of its entry)
    entries: Vec<(Oid, u32, u64)>,
    count: u32,
}

impl StoredPack {
    /// Starts the pack at `path` for exactly `count` objects (the header says how many).
    pub fn create(path: &Path, count: u32) -> io::Result<Self> {
        let file = crate::fsutil::create(path)?;
        let mut out = Checksummed::new(BufWriter::with_capacity(1 << 20, file));
        out.write_all(b"PACK")?;
        out.write_all(&2u32.to_be_bytes())?;
        out.write_all(&count.to_be_bytes())?;
        Ok(Self {
            out,
            entries: Vec::with_capacity(count as usize),
            count,
        })
    }

    /// Appends `data` as the object `id` of `kind` (the caller vouches that it hashes to `id`
    /// and adds each object once).
    pub fn add(&mut self, id: Oid, kind: ObjectType, data: &[u8]) -> io::Result<()> {
        let header = entry_header(kind, data.len())
            .ok_or_else(|| io::Error::other(format!("{id}: not a commit, tree, blob or tag")))?;
        let offset = self.out.written;
        // The entry's CRC-32 covers its header and zlib stream, nothing before.
        self.out.crc = crc32fast::Hasher::new();
        self.out.write_all(&header)?;
        // The zlib header: deflate, 32K window, no dictionary, "fastest" (its check bits make
        // the 16 bits a multiple of 31).
        self.out.write_all(&[0x78, 0x01])?;
        let mut blocks = data.chunks(BLOCK).peekable();
        if blocks.peek().is_none() {
            self.out.write_all(&[1, 0, 0, 0xff, 0xff])?;
        }
        while let Some(block) = blocks.next() {
            let last = u8::from(blocks.peek().is_none());
            // The length fits: chunks of at most BLOCK bytes.
            let len = block.len() as u16;
            self.out.write_all(&[last])?;
            self.out.write_all(&len.to_le_bytes())?;
            self.out.write_all(&(!len).to_le_bytes())?;
            self.out.write_all(block)?;
        }
        let mut adler = simd_adler32::Adler32::new();
        adler.write(data);
        self.out.write_all(&adler.finish().to_be_bytes())?;
        let crc = self.out.crc.clone().finalize();
        self.entries.push((id, crc, offset));
        Ok(())
    }

    /// Ends the pack with its checksum and writes its index to `idx`. Returns the checksum.
    /// Neither file is synced: a pack torn by a crash no longer ends with the checksum its
    /// index names, which is how the cache finds a damaged pack (`damage_in_packs`).
    pub fn finish(mut self, idx: &Path) -> io::Result<[u8; 20]> {
        if self.entries.len() != self.count as usize {
            return Err(io::Error::other(format!(
                "a pack of {} objects got {}",
                self.count,
                self.entries.len()
            )));
        }
        let checksum: [u8; 20] = std::mem::take(&mut self.out.sha).finalize().into();
        self.out.inner.write_all(&checksum)?;
        self.out.inner.flush()?;
        write_index(idx, &mut self.entries, &checksum)?;
        Ok(checksum)
    }
}

/// An entry's header: the type in bits 4–6 of the first byte, the size in 4 bits there and 7
/// bits per following byte, least significant first; the top bit says another byte follows.
fn entry_header(kind: ObjectType, size: usize) -> Option<Vec<u8>> {
    let code: u8 = match kind {
        ObjectType::Commit => 1,
        ObjectType::Tree => 2,
        ObjectType::Blob => 3,
        ObjectType::Tag => 4,
        ObjectType::Any => return None,
    };
    let mut header = Vec::with_capacity(10);
    let mut byte = (code << 4) | (size & 0x0f) as u8;
    let mut rest = size >> 4;
    while rest > 0 {
        header.push(byte | 0x80);
        byte = (rest & 0x7f) as u8;
        rest >>= 7;
    }
    header.push(byte);
    Some(header)
}

/// The index (version 2): fan-out table, sorted ids, CRC-32s, 31-bit offsets with an overflow
/// table for packs past 2 GiB, the pack's checksum, then its own.
fn write_index(path: &Path, entries: &mut [(Oid, u32, u64)], pack: &[u8; 20]) -> io::Result<()> {
    entries.sort_by_key(|(id, _, _)| *id);
    if let Some(pair) = entries.windows(2).find(|pair| pair[0].0 == pair[1].0) {
        // git would find only one of them: an index with a name twice is invalid.
        return Err(io::Error::other(format!("{} added twice", pair[0].0)));
    }
    let file = crate::fsutil::create(path)?;
    let mut out = Checksummed::new(BufWriter::new(file));
    out.write_all(&[0xff, b't', b'O', b'c'])?;
    out.write_all(&2u32.to_be_bytes())?;
    let mut fanout = [0u32; 256];
    for (id, _, _) in entries.iter() {
        fanout[usize::from(id.as_bytes()[0])] += 1;
    }
    let mut total = 0;
    for count in fanout {
        total += count;
        out.write_all(&total.to_be_bytes())?;
    }
    for (id, _, _) in entries.iter() {
        out.write_all(id.as_bytes())?;
    }
    for (_, crc, _) in entries.iter() {
        out.write_all(&crc.to_be_bytes())?;
    }
    let mut large = Vec::new();
    for (_, _, offset) in entries.iter() {
        let small = match u32::try_from(*offset) {
            Ok(small) if small < 0x8000_0000 => small,
            _ => {
                let at = u32::try_from(large.len()).map_err(io::Error::other)?;
                large.push(*offset);
                0x8000_0000 | at
            }
        };
        out.write_all(&small.to_be_bytes())?;
    }
    for offset in large {
        out.write_all(&offset.to_be_bytes())?;
    }
    out.write_all(pack)?;
    let checksum: [u8; 20] = std::mem::take(&mut out.sha).finalize().into();
    out.inner.write_all(&checksum)?;
    out.inner.flush()
}

/// A writer that keeps the SHA-1 of everything written through it (the file's checksum), the
/// CRC-32 since it was last reset (an index entry's) and the count of bytes (the offsets).
struct Checksummed<W> {
    inner: W,
    sha: Sha1,
    crc: crc32fast::Hasher,
    written: u64,
}

impl<W: Write> Checksummed<W> {
    fn new(inner: W) -> Self {
        Self {
            inner,
            sha: Sha1::new(),
            crc: crc32fast::Hasher::new(),
            written: 0,
        }
    }
}

impl<W: Write> Write for Checksummed<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.sha.update(&buf[..n]);
        self.crc.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An index naming an object twice would be invalid; a kind that is no object has no
    /// entry type. Both are refused, and nothing is renamed into place by the caller.
    #[test]
    fn an_object_added_twice_or_of_no_kind_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (pack, idx) = (dir.path().join("pack"), dir.path().join("idx"));
        let id = Oid::hash_object(ObjectType::Blob, b"x").expect("hash");
        let mut out = StoredPack::create(&pack, 2).expect("create");
        out.add(id, ObjectType::Blob, b"x").expect("add");
        out.add(id, ObjectType::Blob, b"x").expect("add");
        let error = out.finish(&idx).expect_err("refused");
        assert_eq!(error.to_string(), format!("{id} added twice"));

        let mut out = StoredPack::create(&pack, 1).expect("create");
        let error = out.add(id, ObjectType::Any, b"x").expect_err("refused");
        assert_eq!(
            error.to_string(),
            format!("{id}: not a commit, tree, blob or tag")
        );
        assert!(is_object(id, ObjectType::Blob, b"x"));
        assert!(!is_object(id, ObjectType::Blob, b"y"));
    }
}
