//! PE/COFF images (a Windows DLL, `.pyd` or `.exe`), read once: [`Image::parse`] reads the
//! headers and section table, and everything here reads from what it read: what verification
//! asks of an image ([`inspect`]: the DLLs it imports, the DLLs it delay-loads, the GPU code in
//! its HIP fat binary section, the marker of a kpack split), its layout as the loader judges it
//! ([`layout_problems`]), the device code a split moves out ([`fatbin_section`]) and a host
//! image's marker ([`read_marker`]). The writer beside it, [`transform`], edits the headers
//! read here.
//!
//! rockbuild's own reader, for hostile input (the `object` crate reads PE too, but its errors
//! do not say which table or name is wrong, and verification reports exactly that): every header, table and name is bounds-checked
//! against the file, every count is capped, and a defect is an error naming what was being
//! read. It reads (PE format, Microsoft's "PE Format" specification):
//!
//! - the DOS header's `e_lfanew` and the `PE\0\0` signature;
//! - the COFF file header (machine, section count, optional header size, symbol table);
//! - the optional header (PE32 or PE32+) and its data directories;
//! - the section table, with `/<n>` long names resolved in the COFF string table (GNU ld keeps
//!   long names in images; MSVC's link and lld-link cut them to 8 characters);
//! - the import directory (data directory 1): one descriptor per imported DLL, with its name;
//! - the delay-load import directory (data directory 13), RVA- or (old format) VA-based,
//!   bounded by the directory's size as well as by its null descriptor.
//!
//! HIP device code: clang puts the offload bundles of a HIP host object in `.hip_fatbin`
//! (CGCUDANV.cpp), which MSVC's link and lld-link write into an image as `.hip_fat`, the
//! 8-character COFF name (rocm-kpack's `coff/kpack_transform.py` reads that section); a GNU
//! linked image keeps the long name. Both are read, with the bundle walker ELF files use.

pub mod transform;

pub use transform::transform;

use crate::binary::kpack::{self, HIPK, Marker, PAGE, WRAPPER_SIZE};
use crate::binary::offload::{SectionScan, scan_section};
use crate::platform::LibraryFormat;

/// The native libraries of a Windows wheel are PE/COFF images (the platform seam says which
/// format a wheel for each platform carries).
pub const PE_MAGIC: &[u8] = LibraryFormat::Pe.magic();
/// The fat binary section's name in an image linked by MSVC's link or lld-link (the one a
/// kpack split moves out), and in a GNU-linked image (or an object file).
const FATBIN_SECTION: &str = ".hip_fat";
const FATBIN_SECTIONS: [&str; 2] = [FATBIN_SECTION, ".hip_fatbin"];
/// The fat binary wrappers' section (`.hipFatBinSegment`, cut to 8 characters).
const WRAPPER_SECTION: &str = ".hipFatB";
/// The marker section of a host image of a kpack split.
pub const MARKER_SECTION: &str = ".kpackrf";

/// Caps that no real image reaches, so a corrupt header cannot make the reader loop or
/// allocate absurdly. The section cap is the format's own (the loader refuses more).
const MAX_SECTIONS: u16 = 96;
const MAX_DIRECTORIES: u32 = 16;
const MAX_DESCRIPTORS: usize = 4096;
/// Windows file names are at most 255 characters.
const MAX_NAME: usize = 255;

const EXPORT_DIRECTORY: usize = 0;
const IMPORT_DIRECTORY: usize = 1;
const BASE_RELOCATION_DIRECTORY: usize = 5;
const DELAY_IMPORT_DIRECTORY: usize = 13;
const IMPORT_DESCRIPTOR_SIZE: usize = 20;
const DELAY_DESCRIPTOR_SIZE: usize = 32;
const SECTION_HEADER_SIZE: usize = 40;
const SYMBOL_SIZE: u64 = 18;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PeInfo {
    /// The DLLs of its import directory, in table order, as written (the loader compares
    /// them without regard to case).
    pub imports: Vec<String>,
    /// The DLLs it delay-loads (loaded on first call, not when it is loaded).
    pub delay_imports: Vec<String>,
    /// The offload bundles of its HIP fat binary section, when it has GPU code (not read in
    /// a host image of a kpack split whose whole pages of device code are gone).
    pub gpu: Option<SectionScan>,
    /// The `.kpackrf` marker of a host image of a kpack split (or why it cannot be read).
    pub kpack: Option<Result<Marker, String>>,
}

impl PeInfo {
    /// Whether it imports the HIP runtime (`amdhip64.dll`, `amdhip64_7.dll`).
    pub fn links_hip_runtime(&self) -> bool {
        self.imports
            .iter()
            .any(|dll| dll.to_ascii_lowercase().starts_with("amdhip64"))
    }
}

/// Why a file cannot be read as a PE image.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeError {
    #[error("it does not start with 'MZ' (no DOS header)")]
    NotMz,
    #[error(
        "{what} ({len} bytes at offset 0x{offset:x}) lies past the end of the file ({size} bytes)"
    )]
    Truncated {
        what: String,
        offset: u64,
        len: u64,
        size: usize,
    },
    #[error(
        "no 'PE\\0\\0' signature at offset 0x{0:x} (e_lfanew): a DOS program, not a Windows image"
    )]
    Signature(u32),
    #[error("the optional header magic is 0x{0:x}, neither PE32 (0x10b) nor PE32+ (0x20b)")]
    OptionalMagic(u16),
    #[error("the optional header is {size} bytes, too small for {what}")]
    OptionalHeader { size: u16, what: &'static str },
    #[error("{0} sections, more than the format allows ({MAX_SECTIONS})")]
    Sections(u16),
    #[error("{0} data directories, more than the format defines ({MAX_DIRECTORIES})")]
    Directories(u32),
    #[error("section {index}'s long name '{name}' is not in the COFF string table")]
    LongName { index: usize, name: String },
    #[error("{what} at RVA 0x{rva:x} lies in no section's file data")]
    Rva { what: String, rva: u64 },
    #[error("{what} at RVA 0x{rva:x} runs past the end of its section's file data")]
    Cut { what: String, rva: u64 },
    #[error(
        "{what}: the name at RVA 0x{rva:x} is not a NUL-terminated file name of 1 to \
         {MAX_NAME} printable ASCII characters without a path"
    )]
    Name { what: &'static str, rva: u64 },
    #[error(
        "{what}: more than {MAX_DESCRIPTORS} descriptors without the null one that ends the table"
    )]
    Unterminated { what: &'static str },
}

/// Bounds-checked little-endian reads of the file.
struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    fn slice(&self, offset: u64, len: u64, what: impl Fn() -> String) -> Result<&'a [u8], PeError> {
        let end = offset.checked_add(len);
        match end {
            Some(end) if end <= self.0.len() as u64 => Ok(&self.0[offset as usize..end as usize]),
            _ => Err(PeError::Truncated {
                what: what(),
                offset,
                len,
                size: self.0.len(),
            }),
        }
    }

    fn u32(&self, offset: u64, what: &'static str) -> Result<u32, PeError> {
        let bytes = self.slice(offset, 4, || what.to_string())?;
        Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }
}

fn le_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

fn le_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(std::array::from_fn(|i| bytes[at + i]))
}

/// One entry of the section table.
#[derive(Debug, Clone)]
pub(crate) struct Section {
    /// Its name, a `/<n>` long name resolved.
    pub name: Vec<u8>,
    pub rva: u64,
    pub virtual_size: u64,
    pub raw_offset: u64,
    pub raw_size: u64,
}

impl Section {
    pub fn end_rva(&self) -> u64 {
        self.rva + self.virtual_size
    }

    /// The bytes the loader maps: its virtual size, or its raw size when that is 0 (the
    /// loader copies at most the virtual size of the raw data).
    fn memory_size(&self) -> u64 {
        if self.virtual_size > 0 {
            self.virtual_size
        } else {
            self.raw_size
        }
    }

    /// The section's bytes in the file: its raw data, cut to its virtual size when that is
    /// smaller (the raw data is padded to the file alignment).
    fn data<'a>(&self, file: &'a [u8]) -> &'a [u8] {
        let len = if self.virtual_size > 0 {
            self.raw_size.min(self.virtual_size)
        } else {
            self.raw_size
        };
        // The section table was checked against the file when it was read.
        &file[self.raw_offset as usize..(self.raw_offset + len) as usize]
    }
}

/// A PE image and its headers.
pub struct Image<'a> {
    file: Bytes<'a>,
    pub(crate) sections: Vec<Section>,
    image_base: u64,
    /// Whether it is PE32+ (64-bit), the only kind a kpack split transforms.
    pub(crate) pe32_plus: bool,
    /// File offsets of the COFF file header, the optional header and the section table.
    pub(crate) coff: u64,
    pub(crate) optional: u64,
    pub(crate) table: u64,
    pub(crate) directories: Vec<(u32, u32)>,
    layout: Layout,
}

/// The optional header's layout fields (at the same offsets in PE32 and PE32+).
struct Layout {
    section_alignment: u64,
    file_alignment: u64,
    size_of_image: u64,
    size_of_headers: u64,
    checksum: u32,
    /// File offset of the checksum field (left out of the sum).
    checksum_at: usize,
    /// File offset where the section table ends.
    headers_end: u64,
}

impl Image<'_> {
    /// The file offset of `rva`, with how many bytes of its section's file data follow it.
    fn offset(&self, rva: u64, what: impl Fn() -> String) -> Result<(u64, u64), PeError> {
        self.sections
            .iter()
            .find(|s| rva >= s.rva && rva - s.rva < s.raw_size)
            .map(|s| {
                let into = rva - s.rva;
                (s.raw_offset + into, s.raw_size - into)
            })
            .ok_or_else(|| PeError::Rva { what: what(), rva })
    }

    /// A data directory (RVA, size), when the image has it.
    fn directory(&self, index: usize) -> Option<(u32, u32)> {
        self.directories
            .get(index)
            .copied()
            .filter(|(rva, _)| *rva != 0)
    }

    /// A DLL name at `rva`: NUL-terminated, within its section, a plain file name.
    fn name(&self, rva: u64, what: &'static str) -> Result<String, PeError> {
        let bad = || PeError::Name { what, rva };
        let (offset, remain) = self.offset(rva, || format!("{what}: a name"))?;
        let window = self
            .file
            .slice(offset, remain.min(MAX_NAME as u64 + 1), || what.to_string())?;
        let len = window.iter().position(|b| *b == 0).ok_or_else(bad)?;
        let name = &window[..len];
        let plain = !name.is_empty()
            && name.iter().all(|b| b.is_ascii_graphic() || *b == b' ')
            && !name.iter().any(|b| matches!(b, b'/' | b'\\' | b':'));
        if !plain {
            return Err(bad());
        }
        Ok(String::from_utf8_lossy(name).into_owned())
    }

    /// Walks a table of fixed-size descriptors until the all-zero one (or, with `limit`,
    /// until that many bytes are read), calling `each` with every other one.
    fn descriptors(
        &self,
        rva: u32,
        size: usize,
        limit: Option<u32>,
        what: &'static str,
        mut each: impl FnMut(&[u8]) -> Result<(), PeError>,
    ) -> Result<(), PeError> {
        let count = limit.map_or(MAX_DESCRIPTORS + 1, |bytes| bytes as usize / size);
        for index in 0..MAX_DESCRIPTORS.min(count) {
            let at = u64::from(rva) + (index * size) as u64;
            let (offset, remain) = self.offset(at, || format!("{what}: descriptor {index}"))?;
            if remain < size as u64 {
                return Err(PeError::Cut {
                    what: format!("{what}: descriptor {index}"),
                    rva: at,
                });
            }
            let descriptor = self.file.slice(offset, size as u64, || {
                format!("{what}: descriptor {index}")
            })?;
            if descriptor.iter().all(|b| *b == 0) {
                return Ok(());
            }
            each(descriptor)?;
        }
        if count <= MAX_DESCRIPTORS {
            return Ok(());
        }
        Err(PeError::Unterminated { what })
    }
}

/// What verification reads from a PE image held in memory.
pub fn inspect(data: &[u8]) -> Result<PeInfo, PeError> {
    let image = Image::parse(data)?;
    let mut info = PeInfo::default();
    if let Some((rva, _)) = image.directory(IMPORT_DIRECTORY) {
        image.descriptors(
            rva,
            IMPORT_DESCRIPTOR_SIZE,
            None,
            "the import directory",
            |descriptor| {
                let name = u64::from(le_u32(descriptor, 12));
                info.imports.push(image.name(name, "an import descriptor")?);
                Ok(())
            },
        )?;
    }
    // The delay-load table ends at its null descriptor or at the directory's size, whichever
    // comes first: GNU ld places dlltool's descriptors without a null one after them.
    if let Some((rva, size)) = image.directory(DELAY_IMPORT_DIRECTORY) {
        image.descriptors(
            rva,
            DELAY_DESCRIPTOR_SIZE,
            Some(size),
            "the delay-load import directory",
            |descriptor| {
                let attributes = le_u32(descriptor, 0);
                let name = u64::from(le_u32(descriptor, 4));
                // Bit 0 set: the fields are RVAs; clear (Visual C++ 6's format): VAs.
                let name = if attributes & 1 == 1 {
                    name
                } else {
                    name.checked_sub(image.image_base).ok_or(PeError::Name {
                        what: "a delay-load descriptor (a VA below the image base)",
                        rva: name,
                    })?
                };
                info.delay_imports
                    .push(image.name(name, "a delay-load descriptor")?);
                Ok(())
            },
        )?;
    }
    if image.find(MARKER_SECTION).is_some() {
        // A host image of a kpack split: its marker, and its layout after the surgery.
        let problems = image.layout_problems();
        info.kpack = Some(if problems.is_empty() {
            marker(&image).and_then(|m| m.ok_or_else(|| "no marker".to_string()))
        } else {
            Err(format!("its layout is broken: {}", problems.join("; ")))
        });
    }
    let gutted = matches!(&info.kpack, Some(Ok(m)) if m.fatbin_file_bytes == 0);
    if let Some(section) = image
        .sections
        .iter()
        .find(|s| FATBIN_SECTIONS.iter().any(|n| s.name == n.as_bytes()))
        && !gutted
    {
        info.gpu = Some(scan_section(section.data(data)));
    }
    Ok(info)
}

/// What is wrong with an image's layout, as the loader and tools judge it (the checks of
/// rocm-kpack's `CoffVerifier`, and the checksum): sections whose file data overlap or are
/// not aligned, sections out of order or overlapping in memory, a section table that does
/// not fit in `SizeOfHeaders`, export/import/relocation directories outside the file data,
/// `SizeOfImage` short of the last section, a `FileAlignment` that is not a power of two and a
/// non-zero `CheckSum` that is not the image's.
pub fn layout_problems(data: &[u8]) -> Result<Vec<String>, PeError> {
    Ok(Image::parse(data)?.layout_problems())
}

impl Image<'_> {
    fn layout_problems(&self) -> Vec<String> {
        let layout = &self.layout;
        let mut problems = Vec::new();
        let name = |s: &Section| String::from_utf8_lossy(&s.name).into_owned();
        let alignment = layout.file_alignment;
        if alignment == 0 || !alignment.is_power_of_two() {
            problems.push(format!(
                "FileAlignment 0x{alignment:x} is not a power of two"
            ));
        }
        if layout.headers_end > layout.size_of_headers {
            problems.push(format!(
                "the section table ends at 0x{:x}, past SizeOfHeaders 0x{:x}",
                layout.headers_end, layout.size_of_headers
            ));
        }
        let with_data: Vec<&Section> = self.sections.iter().filter(|s| s.raw_size > 0).collect();
        for (i, a) in with_data.iter().enumerate() {
            if alignment.is_power_of_two() && a.raw_offset % alignment != 0 {
                problems.push(format!(
                    "section {}'s data at 0x{:x} is not aligned to FileAlignment 0x{alignment:x}",
                    name(a),
                    a.raw_offset
                ));
            }
            if a.raw_offset < layout.size_of_headers {
                problems.push(format!(
                    "section {}'s data at 0x{:x} lies in the headers",
                    name(a),
                    a.raw_offset
                ));
            }
            for b in &with_data[i + 1..] {
                if a.raw_offset < b.raw_offset + b.raw_size
                    && b.raw_offset < a.raw_offset + a.raw_size
                {
                    problems.push(format!(
                        "sections {} and {} share file bytes",
                        name(a),
                        name(b)
                    ));
                }
            }
        }
        let mut end = 0;
        for s in &self.sections {
            if layout.section_alignment > 0 && s.rva % layout.section_alignment != 0 {
                problems.push(format!(
                    "section {} at RVA 0x{:x} is not aligned to SectionAlignment 0x{:x}",
                    name(s),
                    s.rva,
                    layout.section_alignment
                ));
            }
            if s.rva < end {
                problems.push(format!(
                    "section {} at RVA 0x{:x} overlaps or precedes the one before it",
                    name(s),
                    s.rva
                ));
            }
            end = s.rva + s.memory_size();
        }
        let needed = self
            .sections
            .iter()
            .map(|s| s.rva + s.memory_size())
            .max()
            .unwrap_or(0);
        if layout.size_of_image < needed {
            problems.push(format!(
                "SizeOfImage 0x{:x} does not cover the sections (they end at 0x{needed:x})",
                layout.size_of_image
            ));
        }
        for (index, what) in [
            (EXPORT_DIRECTORY, "the export directory"),
            (IMPORT_DIRECTORY, "the import directory"),
            (BASE_RELOCATION_DIRECTORY, "the base relocation table"),
        ] {
            if let Some((rva, size)) = self.directory(index) {
                match self.offset(u64::from(rva), String::new) {
                    Ok((_, remain)) if remain >= u64::from(size) => {}
                    _ => problems.push(format!(
                        "{what} ({size} bytes at RVA 0x{rva:x}) is not in a section's file data"
                    )),
                }
            }
        }
        if layout.checksum != 0 {
            let sum = checksum(self.file.0, layout.checksum_at);
            if sum != layout.checksum {
                problems.push(format!(
                    "CheckSum 0x{:08x} is not the image's (0x{sum:08x})",
                    layout.checksum
                ));
            }
        }
        problems
    }
}

/// The image checksum (imagehlp's `CheckSumMappedFile`): the file's 16-bit words summed with
/// end-around carry, the checksum field left out, plus the file's length.
pub fn checksum(data: &[u8], field: usize) -> u32 {
    let mut sum: u64 = 0;
    for (i, pair) in data.chunks(2).enumerate() {
        if (field..field + 4).contains(&(i * 2)) {
            continue;
        }
        sum += u64::from(pair[0]) | pair.get(1).map_or(0, |b| u64::from(*b) << 8);
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum = (sum & 0xffff) + (sum >> 16);
    (sum + data.len() as u64) as u32
}

impl<'a> Image<'a> {
    /// Reads the headers and section table of a PE image.
    pub fn parse(data: &'a [u8]) -> Result<Image<'a>, PeError> {
        if !data.starts_with(PE_MAGIC) {
            return Err(PeError::NotMz);
        }
        let file = Bytes(data);
        let e_lfanew = file.u32(0x3c, "the DOS header's e_lfanew")?;
        let signature = file.slice(u64::from(e_lfanew), 4, || "the PE signature".into())?;
        if signature != b"PE\0\0" {
            return Err(PeError::Signature(e_lfanew));
        }
        let coff = u64::from(e_lfanew) + 4;
        let header = file.slice(coff, 20, || "the COFF file header".into())?;
        let section_count = u16::from_le_bytes([header[2], header[3]]);
        let symbol_table = u64::from(le_u32(header, 8));
        let symbol_count = u64::from(le_u32(header, 12));
        let optional_size = u16::from_le_bytes([header[16], header[17]]);
        if section_count > MAX_SECTIONS {
            return Err(PeError::Sections(section_count));
        }
        let optional_at = coff + 20;
        let optional = file.slice(optional_at, u64::from(optional_size), || {
            "the optional header".into()
        })?;
        let too_small = |what| PeError::OptionalHeader {
            size: optional_size,
            what,
        };
        if optional.len() < 2 {
            return Err(too_small("its magic"));
        }
        // Where the image base, the directory count and the directories are, per format.
        let (base_at, base_len, count_at) = match u16::from_le_bytes([optional[0], optional[1]]) {
            0x10b => (28, 4, 92),
            0x20b => (24, 8, 108),
            other => return Err(PeError::OptionalMagic(other)),
        };
        if optional.len() < count_at + 4 {
            return Err(too_small("the data directory count"));
        }
        let image_base = if base_len == 4 {
            u64::from(le_u32(optional, base_at))
        } else {
            le_u64(optional, base_at)
        };
        let directory_count = le_u32(optional, count_at);
        if directory_count > MAX_DIRECTORIES {
            return Err(PeError::Directories(directory_count));
        }
        let directories_at = count_at + 4;
        if optional.len() < directories_at + directory_count as usize * 8 {
            return Err(too_small("its data directories"));
        }
        let directories = (0..directory_count as usize)
            .map(|i| {
                let at = directories_at + i * 8;
                (le_u32(optional, at), le_u32(optional, at + 4))
            })
            .collect();

        let table_at = optional_at + u64::from(optional_size);
        let table = file.slice(
            table_at,
            u64::from(section_count) * SECTION_HEADER_SIZE as u64,
            || "the section table".into(),
        )?;
        let strings = symbol_table
            .checked_add(symbol_count * SYMBOL_SIZE)
            .filter(|_| symbol_table != 0);
        let mut sections = Vec::with_capacity(usize::from(section_count));
        for (index, header) in table.chunks_exact(SECTION_HEADER_SIZE).enumerate() {
            let short = &header[..8];
            let short = &short[..short.iter().position(|b| *b == 0).unwrap_or(8)];
            let name = match short.strip_prefix(b"/") {
                Some(number) => long_name(&file, strings, number)
                    .ok_or_else(|| PeError::LongName {
                        index,
                        name: String::from_utf8_lossy(short).into_owned(),
                    })?
                    .to_vec(),
                None => short.to_vec(),
            };
            let section = Section {
                name,
                virtual_size: u64::from(le_u32(header, 8)),
                rva: u64::from(le_u32(header, 12)),
                raw_size: u64::from(le_u32(header, 16)),
                raw_offset: u64::from(le_u32(header, 20)),
            };
            file.slice(section.raw_offset, section.raw_size, || {
                format!(
                    "the data of section {index} ({})",
                    String::from_utf8_lossy(&section.name)
                )
            })?;
            sections.push(section);
        }
        let field = |at: usize| le_u32(optional, at);
        let layout = Layout {
            section_alignment: u64::from(field(32)),
            file_alignment: u64::from(field(36)),
            size_of_image: u64::from(field(56)),
            size_of_headers: u64::from(field(60)),
            checksum: field(64),
            checksum_at: (optional_at + 64) as usize,
            headers_end: table_at + u64::from(section_count) * SECTION_HEADER_SIZE as u64,
        };
        Ok(Image {
            file,
            sections,
            image_base,
            pe32_plus: base_len == 8,
            coff,
            optional: optional_at,
            table: table_at,
            directories,
            layout,
        })
    }

    /// The index of the section named `name`.
    pub(crate) fn find(&self, name: &str) -> Option<usize> {
        self.sections.iter().position(|s| s.name == name.as_bytes())
    }
}

/// Whether `data` is a PE32+ image by its signature and its optional header's magic: only
/// those are split (HIP device code is 64-bit only).
fn is_pe32_plus(data: &[u8]) -> bool {
    let at = |offset: usize, len: usize| data.get(offset..offset.checked_add(len)?);
    let Some(e_lfanew) = at(0x3c, 4).map(|b| le_u32(b, 0) as usize) else {
        return false;
    };
    data.starts_with(PE_MAGIC)
        && at(e_lfanew, 4) == Some(b"PE\0\0")
        && at(e_lfanew + 24, 2) == Some(&[0x0b, 0x02])
}

/// The file offset of `len` bytes at `rva`, all within one section's file data.
pub(crate) fn mapped(sections: &[Section], rva: u64, len: u64) -> Option<u64> {
    sections
        .iter()
        .find(|s| rva >= s.rva && rva < s.end_rva())
        .filter(|s| rva - s.rva + len <= s.raw_size)
        .map(|s| s.raw_offset + rva - s.rva)
}

pub(crate) fn round_up(value: u64, align: u64) -> u64 {
    if align == 0 {
        value
    } else {
        value.div_ceil(align) * align
    }
}

/// The whole pages of `[rva, rva + size)`: (first page's RVA, bytes), `None` when none.
pub(crate) fn whole_pages(rva: u64, size: u64) -> Option<(u64, u64)> {
    let start = round_up(rva, PAGE);
    let end = (rva + size) / PAGE * PAGE;
    (start < end).then_some((start, end - start))
}

/// The `.hip_fat` section of a PE32+ image: `Ok(None)` when it has none, is the host image of
/// a split (its `.hip_fat` keeps only the bytes around the pages that were cut) or is no PE32+
/// image (HIP device code is 64-bit only).
pub fn fatbin_section(data: &[u8]) -> Result<Option<&[u8]>, PeError> {
    if !is_pe32_plus(data) {
        return Ok(None);
    }
    let image = Image::parse(data)?;
    if image.find(MARKER_SECTION).is_some() {
        return Ok(None);
    }
    Ok(image.find(FATBIN_SECTION).map(|i| {
        let s = &image.sections[i];
        // Within the file: parse checked every section's data against it.
        &data[s.raw_offset as usize..(s.raw_offset + s.raw_size.min(s.virtual_size)) as usize]
    }))
}

/// Reads the `.kpackrf` marker of a host image, `None` when it has none.
pub fn read_marker(data: &[u8]) -> Result<Option<Marker>, String> {
    marker(&Image::parse(data).map_err(|e| e.to_string())?)
}

fn marker(image: &Image<'_>) -> Result<Option<Marker>, String> {
    if !image.pe32_plus {
        return Err("not a PE32+ image".into());
    }
    let Some(index) = image.find(MARKER_SECTION) else {
        return Ok(None);
    };
    let data = image.file.0;
    let marker = &image.sections[index];
    let content = &data[marker.raw_offset as usize
        ..(marker.raw_offset + marker.raw_size.min(marker.virtual_size)) as usize];
    let (search_paths, kernel_name) = kpack::marker_fields(content)?;
    let marker_va = image.image_base + marker.rva;
    let mut wrappers = 0;
    if let Some(segment) = image.find(WRAPPER_SECTION) {
        let segment = &image.sections[segment];
        for index in 0..segment.virtual_size / WRAPPER_SIZE {
            let rva = segment.rva + index * WRAPPER_SIZE;
            let at = mapped(&image.sections, rva, WRAPPER_SIZE).ok_or_else(|| {
                format!(
                    "the file is truncated or a header points outside it (a fat binary \
                     wrapper at RVA 0x{rva:x})"
                )
            })? as usize;
            if le_u32(data, at) == HIPK && le_u64(data, at + 8) == marker_va {
                wrappers += 1;
            }
        }
    }
    let fatbin_file_bytes = image
        .find(FATBIN_SECTION)
        .map(|i| &image.sections[i])
        .map_or(0, |s| {
            let pages = whole_pages(s.rva, s.virtual_size).map_or(0, |(_, size)| size);
            let rest = s.virtual_size - pages;
            let kept = if rest == 0 {
                0
            } else {
                round_up(rest, image.layout.file_alignment)
            };
            s.raw_size.saturating_sub(kept)
        });
    Ok(Some(Marker {
        search_paths,
        kernel_name,
        wrappers,
        fatbin_file_bytes,
    }))
}

/// A `/<decimal offset>` section name's long form in the COFF string table (whose first four
/// bytes are its size).
fn long_name<'a>(file: &Bytes<'a>, strings: Option<u64>, number: &[u8]) -> Option<&'a [u8]> {
    let strings = strings?;
    let offset: u64 = std::str::from_utf8(number).ok()?.parse().ok()?;
    let size = u64::from(file.u32(strings, "the COFF string table").ok()?);
    if offset < 4 || offset >= size {
        return None;
    }
    let table = file.slice(strings, size, String::new).ok()?;
    let rest = &table[offset as usize..];
    let len = rest.iter().position(|b| *b == 0)?;
    Some(&rest[..len])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal PE32+ image: DOS header, signature, COFF header, optional header with 16
    /// directories, one `.idata` section holding an import table naming `dll`.
    fn image(dll: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; 0x400];
        out[..2].copy_from_slice(b"MZ");
        out[0x3c..0x40].copy_from_slice(&0x80u32.to_le_bytes());
        out[0x80..0x84].copy_from_slice(b"PE\0\0");
        let coff = 0x84;
        out[coff..coff + 2].copy_from_slice(&0x8664u16.to_le_bytes());
        out[coff + 2..coff + 4].copy_from_slice(&1u16.to_le_bytes());
        let optional_size: u16 = 112 + 16 * 8;
        out[coff + 16..coff + 18].copy_from_slice(&optional_size.to_le_bytes());
        let opt = coff + 20;
        out[opt..opt + 2].copy_from_slice(&0x20bu16.to_le_bytes());
        out[opt + 108..opt + 112].copy_from_slice(&16u32.to_le_bytes());
        // Import directory: RVA 0x1000.
        out[opt + 112 + 8..opt + 112 + 12].copy_from_slice(&0x1000u32.to_le_bytes());
        out[opt + 112 + 12..opt + 112 + 16].copy_from_slice(&40u32.to_le_bytes());
        let section = opt + usize::from(optional_size);
        out[section..section + 6].copy_from_slice(b".idata");
        out[section + 8..section + 12].copy_from_slice(&0x200u32.to_le_bytes());
        out[section + 12..section + 16].copy_from_slice(&0x1000u32.to_le_bytes());
        out[section + 16..section + 20].copy_from_slice(&0x200u32.to_le_bytes());
        out[section + 20..section + 24].copy_from_slice(&0x200u32.to_le_bytes());
        // One descriptor (name at RVA 0x1100), then the null one.
        out[0x200 + 12..0x200 + 16].copy_from_slice(&0x1100u32.to_le_bytes());
        out[0x300..0x300 + dll.len()].copy_from_slice(dll);
        out
    }

    #[test]
    fn reads_a_minimal_import_table() {
        let info = inspect(&image(b"KERNEL32.dll")).expect("parses");
        assert_eq!(info.imports, ["KERNEL32.dll"]);
        assert!(info.delay_imports.is_empty());
        assert_eq!(info.gpu, None);
        assert!(!info.links_hip_runtime());
        assert!(
            inspect(&image(b"amdhip64_7.dll"))
                .expect("parses")
                .links_hip_runtime()
        );
    }

    #[test]
    fn judges_the_layout_as_the_loader_would() {
        let mut good = image(b"KERNEL32.dll");
        let opt = 0x98;
        for (at, value) in [(32, 0x1000u32), (36, 0x200), (56, 0x2000), (60, 0x200)] {
            good[opt + at..opt + at + 4].copy_from_slice(&value.to_le_bytes());
        }
        assert_eq!(
            layout_problems(&good).expect("parses"),
            Vec::<String>::new()
        );
        let problems = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut bytes = good.clone();
            edit(&mut bytes);
            layout_problems(&bytes).expect("parses").join("; ")
        };
        assert_eq!(
            problems(&|b| b[opt + 64] = 1),
            "CheckSum 0x00000001 is not the image's (0x0000a76e)"
        );
        assert_eq!(
            problems(&|b| b[opt + 56..opt + 60].copy_from_slice(&0x1000u32.to_le_bytes())),
            "SizeOfImage 0x1000 does not cover the sections (they end at 0x1200)"
        );
        assert_eq!(
            problems(&|b| b[opt + 36..opt + 40].copy_from_slice(&0x300u32.to_le_bytes())),
            "FileAlignment 0x300 is not a power of two"
        );
        let section = opt + 112 + 128;
        assert_eq!(
            problems(&|b| b[section + 20..section + 24].copy_from_slice(&0x100u32.to_le_bytes())),
            "section .idata's data at 0x100 is not aligned to FileAlignment 0x200; section \
             .idata's data at 0x100 lies in the headers"
        );
        assert_eq!(
            problems(&|b| b[section + 12..section + 16].copy_from_slice(&0x1800u32.to_le_bytes())),
            "section .idata at RVA 0x1800 is not aligned to SectionAlignment 0x1000; the import \
             directory (40 bytes at RVA 0x1000) is not in a section's file data"
        );
    }

    #[test]
    fn refuses_hostile_headers_by_name() {
        let good = image(b"KERNEL32.dll");
        let error = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut bytes = good.clone();
            edit(&mut bytes);
            inspect(&bytes).expect_err("refused").to_string()
        };
        assert_eq!(
            error(&|b| b[0] = b'Z'),
            "it does not start with 'MZ' (no DOS header)"
        );
        assert!(
            error(&|b| b[0x3c..0x40].copy_from_slice(&0xffff_fff0u32.to_le_bytes()))
                .contains("the PE signature (4 bytes at offset 0xfffffff0) lies past the end")
        );
        assert!(error(&|b| b[0x80] = b'N').contains("no 'PE\\0\\0' signature at offset 0x80"));
        assert!(error(&|b| b[0x86] = 200).contains("200 sections"));
        assert!(error(&|b| b[0x98] = 0x07).contains("neither PE32"));
        assert!(error(&|b| b[0x98 + 108] = 17).contains("17 data directories"));
        // Section data past the end of the file.
        let section = 0x98 + 112 + 128;
        assert!(
            error(&|b| b[section + 20..section + 24].copy_from_slice(&0x1000u32.to_le_bytes()))
                .contains("the data of section 0 (.idata)")
        );
        // The import directory outside every section.
        assert!(
            error(&|b| b[0x98 + 120..0x98 + 124].copy_from_slice(&0x9000u32.to_le_bytes()))
                .contains("the import directory: descriptor 0 at RVA 0x9000 lies in no section")
        );
        // A name with a path, and one without its NUL in reach.
        assert!(
            inspect(&image(b"..\\evil.dll"))
                .expect_err("path")
                .to_string()
                .contains("an import descriptor: the name at RVA 0x1100")
        );
        assert!(inspect(&image(&[b'a'; 256])).is_err());
        // A table without its null descriptor: every descriptor names the same DLL.
        let endless = error(&|b| {
            for i in 0..25 {
                let at = 0x200 + i * 20;
                b[at + 12..at + 16].copy_from_slice(&0x1100u32.to_le_bytes());
            }
        });
        assert_eq!(
            endless,
            "the import directory: descriptor 25 at RVA 0x11f4 runs past the end of its \
             section's file data"
        );
        assert!(inspect(b"MZ").is_err());
    }
}
