//! What verification reads from an ELF file: the libraries it needs (DT_NEEDED), its search
//! paths (DT_RPATH, DT_RUNPATH) and the GPU code in its `.hip_fatbin` section.

pub mod transform;

use std::fmt;
use std::str::FromStr;

use object::elf;
use object::read::elf::{ElfFile, FileHeader, SectionHeader as _, SectionTable};
use object::{Endianness, FileKind};

use crate::binary::elf::transform::{MARKER_SECTION, read_marker};
use crate::binary::kpack::Marker;
use crate::binary::offload::{SectionScan, scan_section};

/// The native libraries of a Linux wheel are ELF files (the platform seam says which format a
/// wheel for each platform carries).
pub const ELF_MAGIC: &[u8] = crate::platform::LibraryFormat::Elf.magic();
const FATBIN_SECTION: &[u8] = b".hip_fatbin";

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ElfInfo {
    pub needed: Vec<String>,
    pub rpath: Vec<String>,
    pub runpath: Vec<String>,
    /// The bundles of `.hip_fatbin`, when the file has GPU code.
    pub gpu: Option<SectionScan>,
    /// The highest `GLIBC_x.y` among its version needs.
    pub glibc: Option<Glibc>,
    /// The `.rocm_kpack_ref` marker of a host library of a kpack split (or why it cannot be
    /// read).
    pub kpack: Option<Result<Marker, String>>,
}

impl ElfInfo {
    pub fn links_hip_runtime(&self) -> bool {
        self.needed
            .iter()
            .any(|lib| lib.starts_with("libamdhip64.so"))
    }
}

/// Why an ELF file cannot be inspected.
#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error(transparent)]
    Parse(#[from] object::read::Error),
    #[error("unexpected object kind {0:?}")]
    Kind(FileKind),
    #[error("{what}: {error}")]
    Part {
        what: &'static str,
        error: object::read::Error,
    },
}

/// Parses an ELF file held in memory.
pub fn inspect(data: &[u8]) -> Result<ElfInfo, ElfError> {
    match FileKind::parse(data)? {
        FileKind::Elf32 => inspect_as::<elf::FileHeader32<Endianness>>(data),
        FileKind::Elf64 => inspect_as::<elf::FileHeader64<Endianness>>(data),
        other => Err(ElfError::Kind(other)),
    }
}

fn inspect_as<Elf: FileHeader<Endian = Endianness>>(data: &[u8]) -> Result<ElfInfo, ElfError> {
    let part = |what| move |error| ElfError::Part { what, error };
    let file = ElfFile::<Elf>::parse(data)?;
    let endian = file.endian();
    let sections = file.elf_section_table();
    let mut info = ElfInfo::default();
    let dynamic = sections
        .dynamic_table(endian, data)
        .map_err(part("dynamic section"))?;
    for entry in &dynamic {
        let target = if entry.tag == elf::DT_NEEDED {
            &mut info.needed
        } else if entry.tag == elf::DT_RPATH {
            &mut info.rpath
        } else if entry.tag == elf::DT_RUNPATH {
            &mut info.runpath
        } else {
            continue;
        };
        let value = dynamic.string(entry).map_err(part("dynamic string"))?;
        let value = String::from_utf8_lossy(value);
        if entry.tag == elf::DT_NEEDED {
            target.push(value.into_owned());
        } else {
            target.extend(value.split(':').map(str::to_string));
        }
    }
    info.glibc = glibc_needed(sections, endian, data)?;
    if let Some((_, section)) = sections.section_by_name(endian, FATBIN_SECTION) {
        let bytes = section
            .data(endian, data)
            .map_err(part("section .hip_fatbin"))?;
        info.gpu = Some(scan_section(bytes));
    }
    if sections
        .section_by_name(endian, MARKER_SECTION.as_bytes())
        .is_some()
    {
        info.kpack = read_marker(data).transpose();
    }
    Ok(info)
}

/// A glibc version, `2.28`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Glibc {
    pub major: u32,
    pub minor: u32,
}

impl FromStr for Glibc {
    type Err = ();

    fn from_str(text: &str) -> Result<Self, ()> {
        let (major, minor) = text.split_once('.').ok_or(())?;
        // `GLIBC_2.2.5`: the third component never decides a manylinux level.
        let minor = minor.split('.').next().ok_or(())?;
        Ok(Glibc {
            major: major.parse().map_err(|_| ())?,
            minor: minor.parse().map_err(|_| ())?,
        })
    }
}

impl fmt::Display for Glibc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The highest `GLIBC_x.y` among an ELF file's version needs, if it has any.
pub fn glibc_needed<'data, Elf: FileHeader>(
    sections: &SectionTable<'data, Elf>,
    endian: Elf::Endian,
    data: &'data [u8],
) -> Result<Option<Glibc>, ElfError> {
    let version_needs = |error| ElfError::Part {
        what: "version needs",
        error,
    };
    let Some((mut needs, link)) = sections.gnu_verneed(endian, data).map_err(version_needs)? else {
        return Ok(None);
    };
    let strings = sections
        .strings(endian, data, link)
        .map_err(version_needs)?;
    let mut highest = None;
    while let Some((_, mut auxes)) = needs.next().map_err(version_needs)? {
        while let Some(aux) = auxes.next().map_err(version_needs)? {
            let name = aux.name(endian, strings).map_err(version_needs)?;
            let version = std::str::from_utf8(name)
                .ok()
                .and_then(|n| n.strip_prefix("GLIBC_"))
                .and_then(|v| v.parse::<Glibc>().ok());
            highest = highest.max(version);
        }
    }
    Ok(highest)
}

/// Why an RPATH/RUNPATH entry is unsafe, or `None` when it is `$ORIGIN`-relative.
pub fn search_path_problem(entry: &str) -> Option<&'static str> {
    if entry.starts_with("$ORIGIN") || entry.starts_with("${ORIGIN}") {
        None
    } else if entry.is_empty() {
        Some("an empty entry means the current working directory of the process")
    } else if entry.starts_with('/') {
        Some(
            "an absolute path from the build machine; it does not exist where the wheel is installed and could load foreign libraries where it does (TheRock#968); use an $ORIGIN-relative path",
        )
    } else {
        Some("a path relative to the process's working directory; use an $ORIGIN-relative path")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judges_search_paths() {
        assert_eq!(search_path_problem("$ORIGIN/../lib"), None);
        assert_eq!(search_path_problem("${ORIGIN}"), None);
        assert!(
            search_path_problem("/home/runner/venv/lib").is_some_and(|r| r.contains("absolute"))
        );
        assert!(search_path_problem("lib").is_some_and(|r| r.contains("working directory")));
        assert!(search_path_problem("").is_some_and(|r| r.contains("empty")));
    }

    #[test]
    fn inspects_a_real_shared_object() {
        // The test binary itself is an ELF file with DT_NEEDED entries.
        let exe = std::env::current_exe().expect("current exe");
        let data = fs_err::read(exe).expect("read");
        let info = inspect(&data).expect("parses");
        assert!(
            info.needed.iter().any(|lib| lib.starts_with("libc.so")),
            "{:?}",
            info.needed
        );
        assert!(!info.links_hip_runtime());
        assert_eq!(info.gpu, None);
        assert!(inspect(b"\x7fELFnot really").is_err());
    }
}
