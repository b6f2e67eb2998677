//! Whether a stored `.whl` is a readable zip archive, judged from its tail alone (one ranged
//! read per file, however big the wheel): the end-of-central-directory record must be there,
//! and the central directory it points to must lie inside the file and start with a
//! central-directory header. A file that fails this is not a wheel pip can install, and an
//! index that lists it offers pip a broken newest version.

/// How many bytes from the end hold the end record: its 22 bytes plus the longest comment.
pub const TAIL: u64 = 22 + 0xFFFF;

const EOCD_SIG: [u8; 4] = 0x0605_4b50u32.to_le_bytes();
const EOCD64_LOCATOR_SIG: [u8; 4] = 0x0706_4b50u32.to_le_bytes();
const CENTRAL_SIG: [u8; 4] = 0x0201_4b50u32.to_le_bytes();

/// Checks the last bytes of a file of `size` bytes (`tail` is its last `min(size, TAIL)`).
pub fn check_zip_tail(tail: &[u8], size: u64) -> Result<(), &'static str> {
    if size < 22 || tail.len() < 22 {
        return Err("too short to be a zip archive");
    }
    let tail_start = size - tail.len() as u64;
    let Some(end) = (0..=tail.len() - 22)
        .rev()
        .find(|&at| tail[at..at + 4] == EOCD_SIG)
    else {
        return Err("no zip end-of-central-directory record (not a zip archive, or cut short)");
    };
    let word = |at: usize| u32::from_le_bytes([tail[at], tail[at + 1], tail[at + 2], tail[at + 3]]);
    let cd_size = u64::from(word(end + 12));
    let cd_offset = u64::from(word(end + 16));
    if cd_offset == 0xFFFF_FFFF || cd_size == 0xFFFF_FFFF {
        // Zip64: the real numbers are in the zip64 end record its locator points to.
        return match end.checked_sub(20) {
            Some(locator) if tail[locator..locator + 4] == EOCD64_LOCATOR_SIG => Ok(()),
            _ => Err("a zip64 end record without its locator"),
        };
    }
    let end_at = tail_start + end as u64;
    if cd_offset + cd_size > end_at {
        return Err("its central directory lies outside the file (cut short?)");
    }
    if cd_size == 0 {
        return Err("an empty zip archive");
    }
    if cd_offset >= tail_start {
        let at = (cd_offset - tail_start) as usize;
        if tail.get(at..at + 4) != Some(&CENTRAL_SIG[..]) {
            return Err("its central directory does not start where the end record says");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zip() -> Vec<u8> {
        let mut bytes = Vec::new();
        {
            let mut writer = zip::ZipWriter::new(std::io::Cursor::new(&mut bytes));
            writer
                .start_file("a/__init__.py", zip::write::SimpleFileOptions::default())
                .expect("start");
            writer.write_all(b"x = 1\n").expect("write");
            writer.finish().expect("finish");
        }
        bytes
    }

    #[test]
    fn zips_pass_and_other_bytes_do_not() {
        let good = zip();
        check_zip_tail(&good, good.len() as u64).expect("a zip");
        let text = b"<html>not found</html>".repeat(3);
        assert!(check_zip_tail(&text, text.len() as u64).is_err());
        assert!(check_zip_tail(b"PK", 2).is_err());
        // Cut short: the end record is gone.
        let cut = &good[..good.len() - 10];
        assert!(check_zip_tail(cut, cut.len() as u64).is_err());
        // A tail of a bigger file: offsets are relative to the whole file.
        let mut big = vec![0u8; 100];
        big.extend_from_slice(&good);
        let shifted = check_zip_tail(&big[50..], big.len() as u64);
        assert!(
            shifted.is_err(),
            "the central directory is not where it says"
        );
    }
}
