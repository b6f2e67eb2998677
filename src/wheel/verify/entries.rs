//! The entries of a wheel's archive: screened by their central directory records (paths,
//! duplicates, links, methods, the zip-bomb guard), then read in parallel, each once —
//! inflated, hashed and, for ELF and PE files, inspected in one stream, within a memory
//! budget.

use std::collections::{BTreeSet, HashMap};
use std::io::Read;
use std::sync::{Condvar, Mutex};

use rayon::prelude::*;

use crate::binary::elf::{self, ELF_MAGIC, ElfInfo};
use crate::binary::pe::{self, PE_MAGIC, PeInfo};
use crate::wheel::archive::{Archive, DataSpan, METHOD_DEFLATE, METHOD_STORED};
use crate::wheel::problem::Problem;
use crate::wheel::record::{HashAlgorithm, Hasher};

/// Entries above this size that inflate more than [`MAX_RATIO`] times are not read.
const RATIO_MIN_SIZE: u64 = 1 << 20;
/// Deflate cannot exceed ~1032:1; real files in wheels stay far below 200:1.
const MAX_RATIO: u64 = 200;

/// Checks every entry's central directory record; returns which entries may be read (not
/// directories, encrypted, of an unknown method or a suspicious compression ratio).
pub(super) fn screen(archive: &Archive, problems: &mut Vec<Problem>) -> Vec<bool> {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for entry in &archive.entries {
        *counts.entry(entry.name.as_str()).or_default() += 1;
    }
    let mut reported = BTreeSet::new();
    let mut readable = vec![true; archive.entries.len()];
    for (index, entry) in archive.entries.iter().enumerate() {
        if let Some(reason) = unsafe_path(&entry.name) {
            problems.push(Problem::UnsafePath {
                entry: entry.name.clone(),
                reason: reason.to_string(),
            });
        }
        let count = counts.get(entry.name.as_str()).copied().unwrap_or(1);
        if count > 1 && reported.insert(entry.name.as_str()) {
            problems.push(Problem::DuplicateEntry {
                entry: entry.name.clone(),
                count,
            });
        }
        if entry.is_symlink() {
            problems.push(Problem::UnsafePath {
                entry: entry.name.clone(),
                reason: "a symbolic link entry (the wheel format has no links; installers \
                         write it as a file or refuse it)"
                    .into(),
            });
        }
        if entry.is_dir() {
            readable[index] = false;
            continue;
        }
        if entry.encrypted() {
            problems.push(Problem::EntryData {
                entry: entry.name.clone(),
                detail: "it is encrypted; installers cannot read it".into(),
            });
            readable[index] = false;
        } else if entry.method != METHOD_STORED && entry.method != METHOD_DEFLATE {
            problems.push(Problem::EntryData {
                entry: entry.name.clone(),
                detail: format!(
                    "compression method {}; installers only reliably read stored (0) and \
                     deflate (8)",
                    entry.method
                ),
            });
            readable[index] = false;
        } else if entry.size > RATIO_MIN_SIZE
            && entry.size / entry.compressed_size.max(1) > MAX_RATIO
        {
            problems.push(Problem::CompressionRatio {
                entry: entry.name.clone(),
                compressed: entry.compressed_size,
                uncompressed: entry.size,
            });
            readable[index] = false;
        }
    }
    readable
}

/// Reads the entries `order` lists (biggest first), in parallel with hashing the whole wheel
/// file. Entries that may not be read only have their local header checked, for the layout
/// check. `algorithm_of` names the RECORD hash of an entry. Returns the wheel's SHA-256 and
/// one outcome per entry, in `order`.
pub(super) fn read_all(
    archive: &Archive,
    order: &[usize],
    readable: &[bool],
    algorithm_of: &(dyn Fn(&str) -> Option<HashAlgorithm> + Sync),
    budget: &MemoryBudget,
) -> (Option<String>, Vec<EntryOutcome>) {
    rayon::join(
        || {
            crate::fsutil::sha256_reader(archive.whole_file())
                .ok()
                .map(|(digest, _)| digest)
        },
        || {
            order
                .par_iter()
                .with_max_len(1)
                .map(|index| {
                    if !readable[*index] {
                        return header_only(archive, *index);
                    }
                    read_entry(
                        archive,
                        *index,
                        algorithm_of(&archive.entries[*index].name),
                        budget,
                    )
                })
                .collect()
        },
    )
}

/// Bounds the ELF bytes held in memory by parallel readers.
pub(super) struct MemoryBudget {
    total: u64,
    used: Mutex<u64>,
    freed: Condvar,
}

pub(super) struct BudgetGuard<'a> {
    budget: &'a MemoryBudget,
    amount: u64,
}

impl MemoryBudget {
    pub(super) fn new(total: u64) -> Self {
        MemoryBudget {
            total: total.max(1),
            used: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// Waits until `amount` bytes fit; a request above the whole budget waits for all of it.
    fn acquire(&self, amount: u64) -> BudgetGuard<'_> {
        let amount = amount.min(self.total);
        let mut used = self
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while *used + amount > self.total {
            used = self
                .freed
                .wait(used)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        *used += amount;
        BudgetGuard {
            budget: self,
            amount,
        }
    }
}

impl Drop for BudgetGuard<'_> {
    fn drop(&mut self) {
        let mut used = self
            .budget
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *used -= self.amount;
        self.budget.freed.notify_all();
    }
}

/// What reading one entry found.
pub(super) struct EntryOutcome {
    pub index: usize,
    pub span: Option<DataSpan>,
    /// Whether the data was read completely and as declared.
    pub read: bool,
    /// Digest in the RECORD algorithm, when RECORD has a hash for the entry.
    pub digest: Option<String>,
    pub size: u64,
    pub elf: Option<Result<ElfInfo, elf::ElfError>>,
    pub pe: Option<Result<PeInfo, pe::PeError>>,
    pub problems: Vec<Problem>,
}

/// The native library formats an entry is read as.
#[derive(Clone, Copy)]
enum Native {
    Elf,
    Pe,
}

/// Whether an entry's name says it is a Windows image (`.dll`, `.pyd`), which must then be
/// one: the loader refuses anything else under that name.
fn named_as_pe(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".dll") || lower.ends_with(".pyd")
}

/// Reads one entry: validates its local header, inflates, hashes and inspects ELF files and
/// PE images (by their first bytes, or by a `.dll`/`.pyd` name).
fn read_entry(
    archive: &Archive,
    index: usize,
    algorithm: Option<HashAlgorithm>,
    budget: &MemoryBudget,
) -> EntryOutcome {
    let entry = &archive.entries[index];
    let mut outcome = EntryOutcome {
        index,
        span: None,
        read: false,
        digest: None,
        size: 0,
        elf: None,
        pe: None,
        problems: Vec::new(),
    };
    let fail = |outcome: &mut EntryOutcome, detail: String| {
        outcome.problems.push(Problem::EntryData {
            entry: entry.name.clone(),
            detail,
        });
    };
    let span = match super::local_header(archive, entry, &mut outcome.problems) {
        Ok(span) => span,
        Err(detail) => {
            fail(&mut outcome, detail.to_string());
            return outcome;
        }
    };
    outcome.span = Some(span);
    let mut reader = match archive.reader(entry, span) {
        Ok(reader) => reader,
        Err(detail) => {
            fail(&mut outcome, detail.to_string());
            return outcome;
        }
    };
    let mut hasher = algorithm.map(Hasher::new);
    let chunk = usize::try_from(entry.size.saturating_add(1))
        .unwrap_or(usize::MAX)
        .clamp(4096, 1 << 20);
    let mut buffer = vec![0u8; chunk];
    let mut native: Option<(Native, Vec<u8>, BudgetGuard<'_>)> = None;
    let mut first = true;
    loop {
        let n = match reader.read(&mut buffer) {
            Ok(n) => n,
            Err(error) => {
                fail(&mut outcome, error.to_string());
                return outcome;
            }
        };
        if n == 0 {
            break;
        }
        let data = &buffer[..n];
        if first {
            first = false;
            let format = if data.starts_with(ELF_MAGIC) {
                Some(Native::Elf)
            } else if data.starts_with(PE_MAGIC) || named_as_pe(&entry.name) {
                Some(Native::Pe)
            } else {
                None
            };
            if let Some(format) = format {
                let guard = budget.acquire(entry.size);
                let capacity = usize::try_from(entry.size).unwrap_or(0);
                native = Some((format, Vec::with_capacity(capacity), guard));
            }
        }
        if let Some(hasher) = hasher.as_mut() {
            hasher.update(data);
        }
        if let Some((_, bytes, _)) = native.as_mut() {
            bytes.extend_from_slice(data);
        }
        outcome.size += n as u64;
    }
    outcome.read = true;
    outcome.digest = hasher.map(Hasher::finish);
    match native {
        Some((Native::Elf, bytes, _guard)) => outcome.elf = Some(elf::inspect(&bytes)),
        Some((Native::Pe, bytes, _guard)) => outcome.pe = Some(pe::inspect(&bytes)),
        // An empty `.dll` is no image either.
        None if first && named_as_pe(&entry.name) => outcome.pe = Some(pe::inspect(&[])),
        None => {}
    }
    outcome
}

/// Checks only the local header of an entry that is not read.
fn header_only(archive: &Archive, index: usize) -> EntryOutcome {
    let entry = &archive.entries[index];
    let mut problems = Vec::new();
    let span = match super::local_header(archive, entry, &mut problems) {
        Ok(span) => Some(span),
        Err(detail) => {
            problems.push(Problem::EntryData {
                entry: entry.name.clone(),
                detail: detail.to_string(),
            });
            None
        }
    };
    EntryOutcome {
        index,
        span,
        read: false,
        digest: None,
        size: 0,
        elf: None,
        pe: None,
        problems,
    }
}

/// Why an entry path is unsafe to extract, if it is.
fn unsafe_path(name: &str) -> Option<&'static str> {
    if name.contains('\0') {
        return Some("a NUL byte in the name");
    }
    if name.contains('\\') {
        return Some("a backslash in the name (a path separator on Windows)");
    }
    if name.starts_with('/') {
        return Some("an absolute path");
    }
    let bytes = name.as_bytes();
    if bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic() {
        return Some("a drive-letter path");
    }
    let trimmed = name.strip_suffix('/').unwrap_or(name);
    for component in trimmed.split('/') {
        match component {
            ".." => return Some("a '..' component escapes the wheel root"),
            "" | "." => return Some("an empty or '.' component (a non-canonical path)"),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_unsafe_paths() {
        for (name, reason) in [
            ("../evil.py", "'..'"),
            ("pkg/../../evil.py", "'..'"),
            ("/etc/passwd", "absolute"),
            ("C:/evil", "drive-letter"),
            ("pkg\\evil.py", "backslash"),
            ("pkg//a.py", "non-canonical"),
            ("./a.py", "non-canonical"),
        ] {
            let found = unsafe_path(name).unwrap_or_else(|| panic!("{name} passed"));
            assert!(found.contains(reason), "{name}: {found}");
        }
        for name in [
            "pkg/a.py",
            "pkg/sub/",
            "torch-2.0.dist-info/RECORD",
            "a..b/c",
        ] {
            assert_eq!(unsafe_path(name), None, "{name}");
        }
    }

    #[test]
    fn the_memory_budget_admits_oversized_requests_alone() {
        let budget = MemoryBudget::new(100);
        let big = budget.acquire(1000);
        assert_eq!(*budget.used.lock().expect("lock"), 100);
        drop(big);
        let a = budget.acquire(60);
        let b = std::thread::scope(|scope| {
            let waiter = scope.spawn(|| {
                let _c = budget.acquire(60);
                *budget.used.lock().expect("lock")
            });
            drop(a);
            waiter.join().expect("join")
        });
        assert_eq!(b, 60);
        assert_eq!(*budget.used.lock().expect("lock"), 0);
    }
}
