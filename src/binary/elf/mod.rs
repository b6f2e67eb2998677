//! ELF files, read once: [`Elf::parse`] reads the headers (through the `object` crate) and
//! everything here reads from what it read: what verification asks of a library
//! ([`inspect`]: DT_NEEDED, RPATH/RUNPATH, the glibc versions it needs, the GPU code in its
//! `.hip_fatbin` section, the marker of a kpack split), the device code a split moves out
//! ([`fatbin_section`]), a host library's marker ([`read_marker`]) and the target a GPU code
//! object was compiled for ([`code_object_target`]). The writer beside it, [`transform`], edits
//! the headers read here.

pub mod transform;

pub use transform::transform;

use std::fmt;
use std::str::FromStr;

use object::elf;
use object::read::elf::{ElfFile, ElfFile32, ElfFile64, FileHeader, ProgramHeader, SectionHeader};
use object::{Endianness, FileKind};

use crate::binary::kpack::msgpack::{self, Value};
use crate::binary::kpack::{self, HIPK, Marker, WRAPPER_SIZE};
use crate::binary::offload::{SectionScan, scan_section};

/// The native libraries of a Linux wheel are ELF files (the platform seam says which format a
/// wheel for each platform carries).
pub const ELF_MAGIC: &[u8] = crate::platform::LibraryFormat::Elf.magic();
/// The marker section of a host library of a kpack split.
pub const MARKER_SECTION: &str = ".rocm_kpack_ref";
const FATBIN_SECTION: &str = ".hip_fatbin";
const WRAPPER_SECTION: &str = ".hipFatBinSegment";

const SHT_NOTE: u32 = 7;
const SHT_NOBITS: u32 = 8;
const EM_AMDGPU: u16 = 224;
const NT_AMDGPU_METADATA: u32 = 32;

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

/// Why an ELF file cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
    #[error("the file is truncated or a header points outside it ({0})")]
    Bounds(&'static str),
    #[error("address 0x{0:x} is in no segment")]
    Unmapped(u64),
}

/// A program header, its fields as wide as ELF64's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Phdr {
    pub kind: u32,
    pub flags: u32,
    pub offset: u64,
    pub vaddr: u64,
    pub paddr: u64,
    pub filesz: u64,
    pub memsz: u64,
    pub align: u64,
}

impl Phdr {
    pub fn contains_vaddr(&self, vaddr: u64) -> bool {
        self.vaddr <= vaddr && vaddr < self.vaddr + self.memsz
    }
}

/// A section header, its fields as wide as ELF64's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shdr {
    pub name: u32,
    pub kind: u32,
    pub flags: u64,
    pub addr: u64,
    pub offset: u64,
    pub size: u64,
    pub link: u32,
    pub info: u32,
    pub addralign: u64,
    pub entsize: u64,
}

/// What the `object` crate read, by class (the dynamic table and version needs are read
/// through it).
enum Class<'data> {
    Elf32(ElfFile32<'data, Endianness>),
    Elf64(ElfFile64<'data, Endianness>),
}

/// An ELF file and its headers.
pub struct Elf<'data> {
    pub(crate) data: &'data [u8],
    file: Class<'data>,
    pub(crate) e_type: u16,
    pub(crate) machine: u16,
    pub(crate) phoff: u64,
    pub(crate) shoff: u64,
    pub(crate) shstrndx: usize,
    pub(crate) phdrs: Vec<Phdr>,
    pub(crate) shdrs: Vec<Shdr>,
    /// Section names from `.shstrtab` (a name that cannot be read is empty, as the reference's
    /// `get_section_name` makes it).
    pub(crate) names: Vec<String>,
}

impl<'data> Elf<'data> {
    /// Reads the headers of an ELF file held in memory.
    pub fn parse(data: &'data [u8]) -> Result<Elf<'data>, ElfError> {
        match FileKind::parse(data)? {
            FileKind::Elf32 => Self::read(data, Class::Elf32(ElfFile32::parse(data)?)),
            FileKind::Elf64 => Self::read(data, Class::Elf64(ElfFile64::parse(data)?)),
            other => Err(ElfError::Kind(other)),
        }
    }

    fn read(data: &'data [u8], file: Class<'data>) -> Result<Elf<'data>, ElfError> {
        let headers = match &file {
            Class::Elf32(f) => headers(f)?,
            Class::Elf64(f) => headers(f)?,
        };
        let (e_type, machine, phoff, shoff, shstrndx, phdrs, shdrs) = headers;
        Ok(Elf {
            names: section_names(data, &shdrs, shstrndx),
            data,
            file,
            e_type,
            machine,
            phoff,
            shoff,
            shstrndx,
            phdrs,
            shdrs,
        })
    }

    /// Whether it is a 64-bit little-endian file, the only kind a kpack split transforms.
    pub fn is_64_le(&self) -> bool {
        matches!(&self.file, Class::Elf64(f) if f.endian() == Endianness::Little)
    }

    /// The index of the section named `name`.
    pub(crate) fn section(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// A section's bytes in the file.
    pub(crate) fn section_bytes(&self, index: usize) -> Result<&'data [u8], ElfError> {
        let shdr = self.shdrs[index];
        slice(self.data, shdr.offset, shdr.size, "a section")
    }

    /// `.hip_fatbin`'s bytes in the file: `None` when it has none or it is `NOBITS`.
    fn fatbin(&self) -> Result<Option<&'data [u8]>, ElfError> {
        match self.section(FATBIN_SECTION).map(|i| self.shdrs[i]) {
            Some(shdr) if shdr.kind != SHT_NOBITS => {
                slice(self.data, shdr.offset, shdr.size, ".hip_fatbin").map(Some)
            }
            _ => Ok(None),
        }
    }
}

/// The headers of a parsed file, widened: type, machine, program and section header offsets,
/// `.shstrtab`'s index, program and section headers.
type Headers = (u16, u16, u64, u64, usize, Vec<Phdr>, Vec<Shdr>);

fn headers<H: FileHeader<Endian = Endianness>>(file: &ElfFile<'_, H>) -> Result<Headers, ElfError> {
    let endian = file.endian();
    let header = file.elf_header();
    let phdrs = file
        .elf_program_headers()
        .iter()
        .map(|p| Phdr {
            kind: p.p_type(endian).0,
            flags: p.p_flags(endian).0,
            offset: p.p_offset(endian).into(),
            vaddr: p.p_vaddr(endian).into(),
            paddr: p.p_paddr(endian).into(),
            filesz: p.p_filesz(endian).into(),
            memsz: p.p_memsz(endian).into(),
            align: p.p_align(endian).into(),
        })
        .collect();
    let shdrs: Vec<Shdr> = file
        .elf_section_table()
        .iter()
        .map(|s| Shdr {
            name: s.sh_name(endian),
            kind: s.sh_type(endian).0,
            flags: s.sh_flags(endian).0,
            addr: s.sh_addr(endian).into(),
            offset: s.sh_offset(endian).into(),
            size: s.sh_size(endian).into(),
            link: s.sh_link(endian),
            info: s.sh_info(endian),
            addralign: s.sh_addralign(endian).into(),
            entsize: s.sh_entsize(endian).into(),
        })
        .collect();
    // Read (and checked) by `ElfFile::parse` whenever there are sections.
    let shstrndx = if shdrs.is_empty() {
        0
    } else {
        header.shstrndx(endian, file.data())? as usize
    };
    Ok((
        header.e_type(endian).0,
        header.e_machine(endian).0,
        header.e_phoff(endian).into(),
        header.e_shoff(endian).into(),
        shstrndx,
        phdrs,
        shdrs,
    ))
}

/// `len` bytes of `data` at `at`, or which part lies outside it.
pub(crate) fn slice<'a>(
    data: &'a [u8],
    at: u64,
    len: u64,
    what: &'static str,
) -> Result<&'a [u8], ElfError> {
    let start = usize::try_from(at).map_err(|_| ElfError::Bounds(what))?;
    let end = at
        .checked_add(len)
        .and_then(|e| usize::try_from(e).ok())
        .filter(|e| *e <= data.len())
        .ok_or(ElfError::Bounds(what))?;
    Ok(&data[start..end])
}

/// A little-endian `u32` of `data` at `at`.
pub(crate) fn read_u32(data: &[u8], at: u64) -> Result<u32, ElfError> {
    let b = slice(data, at, 4, "a value")?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The file offset of `vaddr` through the first program header (of any type) holding it, as
/// rocm-kpack's surgery.py `vaddr_to_file_offset` finds it.
pub(crate) fn vaddr_to_offset(phdrs: &[Phdr], vaddr: u64) -> Result<u64, ElfError> {
    phdrs
        .iter()
        .find(|p| p.contains_vaddr(vaddr))
        .map(|p| p.offset + (vaddr - p.vaddr))
        .ok_or(ElfError::Unmapped(vaddr))
}

/// Section names from `.shstrtab` (a name that cannot be read is empty).
pub(crate) fn section_names(data: &[u8], shdrs: &[Shdr], shstrndx: usize) -> Vec<String> {
    let Some(strtab) = shdrs.get(shstrndx).copied() else {
        return vec![String::new(); shdrs.len()];
    };
    shdrs
        .iter()
        .map(|s| {
            let at = strtab.offset.saturating_add(u64::from(s.name));
            let Some(rest) = usize::try_from(at).ok().and_then(|at| data.get(at..)) else {
                return String::new();
            };
            match rest.iter().position(|b| *b == 0) {
                Some(end) => String::from_utf8_lossy(&rest[..end]).into_owned(),
                None => String::new(),
            }
        })
        .collect()
}

/// What verification reads from an ELF file held in memory.
pub fn inspect(data: &[u8]) -> Result<ElfInfo, ElfError> {
    let elf = Elf::parse(data)?;
    let mut info = match &elf.file {
        Class::Elf32(file) => links(file)?,
        Class::Elf64(file) => links(file)?,
    };
    if elf.section(FATBIN_SECTION).is_some() {
        info.gpu = Some(scan_section(elf.fatbin()?.unwrap_or_default()));
    }
    if elf.section(MARKER_SECTION).is_some() {
        info.kpack = marker(&elf).transpose();
    }
    Ok(info)
}

/// The libraries, search paths and glibc versions a file needs, from its dynamic table and
/// version needs.
fn links<H: FileHeader<Endian = Endianness>>(file: &ElfFile<'_, H>) -> Result<ElfInfo, ElfError> {
    let part = |what| move |error| ElfError::Part { what, error };
    let (endian, data) = (file.endian(), file.data());
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
    let version_needs = part("version needs");
    if let Some((mut needs, link)) = sections.gnu_verneed(endian, data).map_err(version_needs)? {
        let strings = sections
            .strings(endian, data, link)
            .map_err(version_needs)?;
        while let Some((_, mut auxes)) = needs.next().map_err(version_needs)? {
            while let Some(aux) = auxes.next().map_err(version_needs)? {
                let name = aux.name(endian, strings).map_err(version_needs)?;
                let version = std::str::from_utf8(name)
                    .ok()
                    .and_then(|n| n.strip_prefix("GLIBC_"))
                    .and_then(|v| v.parse::<Glibc>().ok());
                info.glibc = info.glibc.max(version);
            }
        }
    }
    Ok(info)
}

/// The `.hip_fatbin` section of an ELF file: `Ok(None)` when it has none, when it is `NOBITS`
/// (a host library of a split) or when the file is not a 64-bit little-endian ELF file (only
/// those are split).
pub fn fatbin_section(data: &[u8]) -> Result<Option<&[u8]>, ElfError> {
    if !(data.len() >= 64 && data.starts_with(ELF_MAGIC) && data[4] == 2 && data[5] == 1) {
        return Ok(None);
    }
    Elf::parse(data)?.fatbin()
}

/// Reads the `.rocm_kpack_ref` marker of a host library, `None` when it has none.
pub fn read_marker(data: &[u8]) -> Result<Option<Marker>, String> {
    marker(&Elf::parse(data).map_err(|e| e.to_string())?)
}

fn marker(elf: &Elf<'_>) -> Result<Option<Marker>, String> {
    if !elf.is_64_le() {
        return Err("not a 64-bit little-endian ELF file".into());
    }
    let Some(index) = elf.section(MARKER_SECTION) else {
        return Ok(None);
    };
    let content = elf.section_bytes(index).map_err(|e| e.to_string())?;
    let (search_paths, kernel_name) = kpack::marker_fields(content)?;
    let mut wrappers = 0;
    if let Some(segment) = elf.section(WRAPPER_SECTION) {
        let segment = elf.shdrs[segment];
        for index in 0..segment.size / WRAPPER_SIZE {
            let at = vaddr_to_offset(&elf.phdrs, segment.addr + index * WRAPPER_SIZE)
                .map_err(|e| e.to_string())?;
            if read_u32(elf.data, at).map_err(|e| e.to_string())? == HIPK {
                wrappers += 1;
            }
        }
    }
    let fatbin_file_bytes = elf
        .section(FATBIN_SECTION)
        .map(|i| elf.shdrs[i])
        .filter(|s| s.kind != SHT_NOBITS)
        .map_or(0, |s| s.size);
    Ok(Some(Marker {
        search_paths,
        kernel_name,
        wrappers,
        fatbin_file_bytes,
    }))
}

/// The target a GPU code object was compiled for (`gfx906`, `gfx90a:xnack-`), as its own
/// metadata note says: the `amdhsa.target` of its `NT_AMDGPU_METADATA` note (code object v3
/// and later; AMDGPUUsage "Code Object Metadata"), without the `amdgcn-amd-amdhsa--` triple.
pub fn code_object_target(data: &[u8]) -> Result<String, String> {
    let elf = Elf::parse(data).map_err(|e| format!("not a code object: {e}"))?;
    if !elf.is_64_le() {
        return Err("not a code object: not a 64-bit little-endian ELF file".into());
    }
    if elf.machine != EM_AMDGPU {
        return Err(format!("machine {} is not AMDGPU", elf.machine));
    }
    for shdr in elf.shdrs.iter().filter(|s| s.kind == SHT_NOTE) {
        let mut notes =
            slice(data, shdr.offset, shdr.size, "a note section").map_err(|e| e.to_string())?;
        while notes.len() >= 12 {
            let word = |at: usize| {
                u32::from_le_bytes([notes[at], notes[at + 1], notes[at + 2], notes[at + 3]])
                    as usize
            };
            let (namesz, descsz, kind) = (word(0), word(4), word(8) as u32);
            let desc_at = 12 + namesz.div_ceil(4) * 4;
            let end = desc_at + descsz.div_ceil(4) * 4;
            let (Some(name), Some(desc)) = (
                notes.get(12..12 + namesz),
                notes.get(desc_at..desc_at + descsz),
            ) else {
                return Err("a note runs past its section".into());
            };
            if kind == NT_AMDGPU_METADATA && name.starts_with(b"AMDGPU") {
                let (value, _) =
                    msgpack::decode(desc).map_err(|e| format!("metadata note: {e}"))?;
                let target = value
                    .get("amdhsa.target")
                    .and_then(Value::as_str)
                    .ok_or("the metadata note has no amdhsa.target")?;
                return Ok(target.trim_start_matches("amdgcn-amd-amdhsa--").to_string());
            }
            notes = notes.get(end..).unwrap_or(&[]);
        }
    }
    Err("no AMDGPU metadata note (code object v2 or older?)".into())
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
