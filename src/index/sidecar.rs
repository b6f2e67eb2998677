//! A PEP 658 sidecar (`<wheel>.metadata`) is the METADATA of the wheel it describes, byte for
//! byte, and pip resolves from it without opening the wheel: a sidecar edited in a store
//! (`Requires-Dist: evil-pkg`, the ROCm pins dropped) would change what a release installs
//! while every wheel's SHA-256 still matches its evidence. So a sidecar is never taken from a
//! store: the index derives it from the stored wheel, through ranged reads (the central
//! directory, then the METADATA entry: a few requests however big the wheel), and a stored
//! sidecar that differs is replaced.

use std::io::{self, Read, Seek, SeekFrom};

use crate::store::Storage;

/// The largest METADATA read (a wheel's METADATA is a few KiB; its long description rarely
/// more than a few hundred).
pub const MAX_METADATA: u64 = 16 << 20;
/// Bytes fetched per ranged read: the tail holding the central directory, then the entry.
const CHUNK: u64 = 256 << 10;

/// The METADATA of the wheel stored at `key` (`size` bytes). The error says, in words, why
/// it cannot be read (the wheel is then not one an installer can use either).
pub fn derive(store: &dyn Storage, key: &str, size: u64) -> Result<Vec<u8>, String> {
    let reader = Ranged {
        store,
        key,
        size,
        position: 0,
        buffer_start: 0,
        buffer: Vec::new(),
    };
    let mut archive =
        zip::ZipArchive::new(reader).map_err(|e| format!("not a readable zip archive ({e})"))?;
    let names: Vec<String> = archive
        .file_names()
        .filter_map(|name| name.ok().map(|name| name.into_owned()))
        .filter(|name| {
            name.strip_suffix("/METADATA")
                .is_some_and(|dir| dir.ends_with(".dist-info") && !dir.contains('/'))
        })
        .collect();
    let name = match names.as_slice() {
        [one] => one,
        [] => return Err("it has no .dist-info/METADATA".into()),
        _ => return Err(format!("it has {} .dist-info directories", names.len())),
    };
    let entry = archive
        .by_name(name)
        .map_err(|e| format!("{name} cannot be read ({e})"))?;
    if entry.size() > MAX_METADATA {
        return Err(format!(
            "{name} is {} bytes, more than a METADATA may be",
            entry.size()
        ));
    }
    let mut bytes = Vec::new();
    entry
        .take(MAX_METADATA + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{name} cannot be read ({e})"))?;
    Ok(bytes)
}

/// A stored object as `Read + Seek`, fetched in ranged reads of [`CHUNK`] bytes (or what one
/// read asks for, when more).
struct Ranged<'a> {
    store: &'a dyn Storage,
    key: &'a str,
    size: u64,
    position: u64,
    buffer_start: u64,
    buffer: Vec<u8>,
}

impl Read for Ranged<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.position >= self.size || out.is_empty() {
            return Ok(0);
        }
        let buffer_end = self.buffer_start + self.buffer.len() as u64;
        if self.position < self.buffer_start || self.position >= buffer_end {
            let len = CHUNK.max(out.len() as u64).min(self.size - self.position);
            self.buffer = self
                .store
                .get_range(self.key, self.position, len)
                .map_err(io::Error::other)?;
            self.buffer_start = self.position;
            if self.buffer.is_empty() {
                return Ok(0);
            }
        }
        let at = (self.position - self.buffer_start) as usize;
        let n = out.len().min(self.buffer.len() - at);
        out[..n].copy_from_slice(&self.buffer[at..at + n]);
        self.position += n as u64;
        Ok(n)
    }
}

impl Seek for Ranged<'_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let position = match to {
            SeekFrom::Start(at) => Some(at),
            SeekFrom::End(delta) => self.size.checked_add_signed(delta),
            SeekFrom::Current(delta) => self.position.checked_add_signed(delta),
        };
        self.position = position
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        Ok(self.position)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;
    use crate::store::{Body, LocalDir, PutOptions};

    fn wheel(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut bytes = Vec::new();
        {
            let mut writer = zip::ZipWriter::new(io::Cursor::new(&mut bytes));
            for (name, data) in entries {
                writer
                    .start_file(*name, zip::write::SimpleFileOptions::default())
                    .expect("start");
                writer.write_all(data).expect("write");
            }
            writer.finish().expect("finish");
        }
        bytes
    }

    #[test]
    fn metadata_is_read_from_the_stored_wheel() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = LocalDir::new(dir.path().to_path_buf());
        // A wheel bigger than one ranged read, its METADATA at the start.
        let big = vec![7u8; 3 << 20];
        let bytes = wheel(&[
            (
                "torch-1.0.dist-info/METADATA",
                b"Name: torch\nVersion: 1.0\n",
            ),
            ("torch/lib.so", &big),
            ("torch-1.0.dist-info/RECORD", b""),
        ]);
        let put = |key: &str, bytes: &[u8]| {
            store
                .put(key, Body::Bytes(bytes), &PutOptions::default())
                .expect("put");
        };
        put("torch/torch-1.0-py3-none-any.whl", &bytes);
        assert_eq!(
            derive(
                &store,
                "torch/torch-1.0-py3-none-any.whl",
                bytes.len() as u64
            )
            .expect("derive"),
            b"Name: torch\nVersion: 1.0\n"
        );
        let none = wheel(&[("torch/__init__.py", b"")]);
        put("torch/torch-2.0-py3-none-any.whl", &none);
        assert_eq!(
            derive(
                &store,
                "torch/torch-2.0-py3-none-any.whl",
                none.len() as u64
            ),
            Err("it has no .dist-info/METADATA".into())
        );
        put(
            "torch/torch-3.0-py3-none-any.whl",
            b"<html>not a wheel</html>",
        );
        assert!(derive(&store, "torch/torch-3.0-py3-none-any.whl", 24).is_err());
    }
}
