//! What `verify` finds wrong with a wheel: one typed value per finding, each with the entry,
//! the expected and the actual value, so people read a precise sentence and scripts read the
//! fields (`kind` plus the variant's fields in JSON).

use std::fmt;

use serde::Serialize;

use crate::wheel::archive::Defect;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Problem {
    /// The archive cannot be opened or read as a whole (truncated, not a zip, I/O error).
    Archive {
        detail: String,
    },
    /// The file name is not a valid wheel name.
    FileName {
        detail: String,
    },
    /// A structural defect of the zip container (header disagreements, ZIP64 fields, gaps).
    Zip {
        entry: Option<String>,
        detail: String,
    },
    /// An entry whose path would land outside the installation root or is otherwise unsafe.
    UnsafePath {
        entry: String,
        reason: String,
    },
    DuplicateEntry {
        entry: String,
        count: usize,
    },
    /// An entry that inflates implausibly (zip bomb guard); its data was not read.
    CompressionRatio {
        entry: String,
        compressed: u64,
        uncompressed: u64,
    },
    /// An entry whose data cannot be read as declared (CRC, sizes, inflate errors).
    EntryData {
        entry: String,
        detail: String,
    },
    /// No usable `.dist-info` directory, METADATA or WHEEL file.
    DistInfo {
        detail: String,
    },
    RecordMissing {
        record: String,
    },
    RecordInvalid {
        line: usize,
        detail: String,
    },
    RecordHashMismatch {
        entry: String,
        algorithm: String,
        expected: String,
        actual: String,
    },
    RecordSizeMismatch {
        entry: String,
        expected: u64,
        actual: u64,
    },
    /// A file in the archive that RECORD does not list.
    NotInRecord {
        entry: String,
    },
    /// A RECORD line for a file the archive does not hold.
    MissingFile {
        entry: String,
    },
    /// File name and metadata disagree (`what` says which field: METADATA Name, WHEEL Tag, …).
    Mismatch {
        what: String,
        file_name: String,
        metadata: String,
    },
    /// The lock's build record expects another version of this project.
    LockVersion {
        project: String,
        expected: String,
        actual: String,
    },
    /// The lock's build record lists a project the set has no wheel for.
    MissingProject {
        project: String,
        wheel: String,
        version: String,
    },
    /// A multi-arch lock's record names a target the set has no device wheel of (at the
    /// project's version) for a split project.
    MissingDeviceWheel {
        project: String,
        target: String,
        wheel: String,
        version: String,
        /// The versions of that device wheel the set has instead.
        found: Vec<String>,
    },
    /// Two wheels of the set share a file name.
    DuplicateWheel {
        file: String,
        paths: Vec<String>,
    },
    /// A GPU library lacks code for a requested target in some of its offload bundles.
    TargetMissing {
        entry: String,
        target: String,
        bundles_missing: usize,
        bundles_total: usize,
        found: Vec<String>,
    },
    /// GPU code that cannot be inspected (malformed or unsupported offload bundles).
    GpuCode {
        entry: String,
        detail: String,
    },
    /// A host library of a kpack split whose reference to its device code is wrong (no
    /// marker search path, device code left behind, no pack of the set where it looks).
    KpackReference {
        entry: String,
        detail: String,
    },
    /// A device wheel's kernel pack that cannot be read, or holds code for another target.
    KernelPack {
        entry: String,
        detail: String,
    },
    /// A `device-*` extra of a host wheel whose requirement the set does not satisfy.
    DeviceExtra {
        extra: String,
        requirement: String,
        detail: String,
    },
    /// No library of a wheel that must run on the GPU links the HIP runtime.
    NoHipRuntime {
        libraries: usize,
    },
    /// No PE image of a wheel that must run on the GPU imports the HIP runtime (amdhip64).
    NoHipRuntimeImport {
        libraries: usize,
    },
    /// An RPATH/RUNPATH entry that is not `$ORIGIN`-relative.
    Rpath {
        entry: String,
        tag: String,
        path: String,
        reason: String,
    },
    /// A `linux_<arch>` platform tag where a portable (manylinux) one is required.
    LinuxTag {
        tag: String,
        /// The highest glibc the wheel's libraries need, if any.
        needs: Option<String>,
    },
    /// A library needs a newer glibc than the wheel's manylinux tag promises.
    GlibcTooNew {
        entry: String,
        needs: String,
        tag: String,
        allows: String,
    },
    /// An ELF file object cannot parse.
    Elf {
        entry: String,
        detail: String,
    },
    /// A `.dll`/`.pyd` (or other `MZ` file) that is not a readable PE image.
    Pe {
        entry: String,
        detail: String,
    },
    /// A DLL a PE image imports that neither the set (its products and the ROCm SDK's
    /// wheels) holds nor Windows provides (`crate::binary::system_dlls`).
    UnresolvedImport {
        entry: String,
        dll: String,
        /// Where it was looked for.
        detail: String,
    },
    /// A `Requires-Dist` on a stack project that neither the set nor the index satisfies.
    Unresolved {
        requirement: String,
        detail: String,
    },
    /// A wheel built against another wheel of the set does not pin its version exactly.
    PinNotExact {
        dist: String,
        version: String,
        /// Its requirements on `dist`, as written (empty: none).
        found: Vec<String>,
    },
    /// A requested extra that the providing wheel does not declare (pip only warns).
    MissingExtra {
        requirement: String,
        extra: String,
        provider: String,
    },
    /// A companion (a ROCm SDK wheel) of a release the set's products do not pin.
    CompanionVersion {
        name: String,
        version: String,
        /// The SDK versions the products pin (empty: none).
        pinned: Vec<String>,
    },
    /// A companion whose bytes are not shown to be the ones its index publishes.
    Provenance {
        /// The index it was checked against (none given: not checked).
        index: Option<String>,
        detail: String,
    },
}

/// The zip reader's findings are verification's `zip` problems.
impl From<Defect> for Problem {
    fn from(defect: Defect) -> Problem {
        Problem::Zip {
            entry: defect.entry,
            detail: defect.detail,
        }
    }
}

impl Problem {
    pub fn zip(entry: Option<&str>, detail: String) -> Problem {
        Problem::Zip {
            entry: entry.map(str::to_string),
            detail,
        }
    }

    /// The stable machine name of the finding (the `kind` field in JSON).
    pub fn kind(&self) -> &'static str {
        match self {
            Problem::Archive { .. } => "archive",
            Problem::FileName { .. } => "file-name",
            Problem::Zip { .. } => "zip",
            Problem::UnsafePath { .. } => "unsafe-path",
            Problem::DuplicateEntry { .. } => "duplicate-entry",
            Problem::CompressionRatio { .. } => "compression-ratio",
            Problem::EntryData { .. } => "entry-data",
            Problem::DistInfo { .. } => "dist-info",
            Problem::RecordMissing { .. } => "record-missing",
            Problem::RecordInvalid { .. } => "record-invalid",
            Problem::RecordHashMismatch { .. } => "record-hash-mismatch",
            Problem::RecordSizeMismatch { .. } => "record-size-mismatch",
            Problem::NotInRecord { .. } => "not-in-record",
            Problem::MissingFile { .. } => "missing-file",
            Problem::Mismatch { .. } => "mismatch",
            Problem::LockVersion { .. } => "lock-version",
            Problem::MissingProject { .. } => "missing-project",
            Problem::MissingDeviceWheel { .. } => "missing-device-wheel",
            Problem::DuplicateWheel { .. } => "duplicate-wheel",
            Problem::TargetMissing { .. } => "target-missing",
            Problem::GpuCode { .. } => "gpu-code",
            Problem::KpackReference { .. } => "kpack-reference",
            Problem::KernelPack { .. } => "kernel-pack",
            Problem::DeviceExtra { .. } => "device-extra",
            Problem::NoHipRuntime { .. } => "no-hip-runtime",
            Problem::NoHipRuntimeImport { .. } => "no-hip-runtime-import",
            Problem::Rpath { .. } => "rpath",
            Problem::LinuxTag { .. } => "linux-tag",
            Problem::GlibcTooNew { .. } => "glibc-too-new",
            Problem::Elf { .. } => "elf",
            Problem::Pe { .. } => "pe",
            Problem::UnresolvedImport { .. } => "unresolved-import",
            Problem::Unresolved { .. } => "unresolved",
            Problem::MissingExtra { .. } => "missing-extra",
            Problem::PinNotExact { .. } => "pin-not-exact",
            Problem::CompanionVersion { .. } => "companion-version",
            Problem::Provenance { .. } => "provenance",
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Archive { detail } => write!(f, "{detail}"),
            Problem::FileName { detail } => write!(f, "not a valid wheel file name: {detail}"),
            Problem::Zip {
                entry: Some(entry),
                detail,
            } => write!(f, "zip entry '{entry}': {detail}"),
            Problem::Zip {
                entry: None,
                detail,
            } => write!(f, "zip structure: {detail}"),
            Problem::UnsafePath { entry, reason } => write!(
                f,
                "entry '{entry}' is unsafe: {reason} (an installer could write outside the \
                 environment)"
            ),
            Problem::DuplicateEntry { entry, count } => write!(
                f,
                "entry '{entry}' appears {count} times (installers disagree on which copy wins)"
            ),
            Problem::CompressionRatio {
                entry,
                compressed,
                uncompressed,
            } => write!(
                f,
                "entry '{entry}' claims to inflate from {compressed} to {uncompressed} bytes \
                 ({}:1), beyond the zip-bomb guard; its data was not read",
                uncompressed / (*compressed).max(1)
            ),
            Problem::EntryData { entry, detail } => write!(f, "entry '{entry}': {detail}"),
            Problem::DistInfo { detail } => write!(f, "{detail}"),
            Problem::RecordMissing { record } => write!(
                f,
                "no '{record}': every wheel must list its files with their hashes"
            ),
            Problem::RecordInvalid { line, detail } => write!(f, "RECORD line {line}: {detail}"),
            Problem::RecordHashMismatch {
                entry,
                algorithm,
                expected,
                actual,
            } => write!(
                f,
                "RECORD hash mismatch for '{entry}': RECORD says {algorithm}={expected}, the \
                 file has {algorithm}={actual}"
            ),
            Problem::RecordSizeMismatch {
                entry,
                expected,
                actual,
            } => write!(
                f,
                "RECORD size mismatch for '{entry}': RECORD says {expected} bytes, the file has \
                 {actual}"
            ),
            Problem::NotInRecord { entry } => write!(
                f,
                "'{entry}' is in the archive but not in RECORD (unverifiable content)"
            ),
            Problem::MissingFile { entry } => {
                write!(f, "RECORD lists '{entry}' but the archive has no such file")
            }
            Problem::Mismatch {
                what,
                file_name,
                metadata,
            } => write!(
                f,
                "{what} is '{metadata}' but the file name says '{file_name}' (pip reports \
                 inconsistent metadata)"
            ),
            Problem::LockVersion {
                project,
                expected,
                actual,
            } => write!(
                f,
                "the lock's build record expects {project} {expected}, this wheel is {actual}"
            ),
            Problem::MissingProject {
                project,
                wheel,
                version,
            } => write!(
                f,
                "the lock's build record lists project '{project}' ({wheel} {version}) but the \
                 set has no {wheel} wheel"
            ),
            Problem::MissingDeviceWheel {
                project,
                target,
                wheel,
                version,
                found,
            } => {
                write!(
                    f,
                    "the lock's build record is multi-arch for {target}, but the set has no \
                     {wheel} {version} (the {target} device code of project '{project}')"
                )?;
                if !found.is_empty() {
                    write!(f, "; it has {wheel} {}", found.join(", "))?;
                }
                Ok(())
            }
            Problem::DuplicateWheel { file, paths } => {
                write!(f, "'{file}' appears more than once: {}", paths.join(", "))
            }
            Problem::TargetMissing {
                entry,
                target,
                bundles_missing,
                bundles_total,
                found,
            } => {
                let found = if found.is_empty() {
                    "none".to_string()
                } else {
                    found.join(", ")
                };
                if bundles_missing == bundles_total {
                    write!(
                        f,
                        "GPU library '{entry}' has no code for requested target {target} (its \
                         offload bundles carry: {found})"
                    )
                } else {
                    write!(
                        f,
                        "GPU library '{entry}' lacks code for requested target {target} in \
                         {bundles_missing} of its {bundles_total} offload bundles (targets \
                         found: {found})"
                    )
                }
            }
            Problem::GpuCode { entry, detail } => write!(f, "GPU code in '{entry}': {detail}"),
            Problem::KpackReference { entry, detail } => {
                write!(f, "host library '{entry}': {detail}")
            }
            Problem::KernelPack { entry, detail } => write!(f, "kernel pack '{entry}': {detail}"),
            Problem::DeviceExtra {
                extra,
                requirement,
                detail,
            } => write!(
                f,
                "extra '{extra}' requires '{requirement}', which the set does not satisfy: {detail}"
            ),
            Problem::NoHipRuntime { libraries } => write!(
                f,
                "none of its {libraries} ELF files links libamdhip64 (DT_NEEDED): this is a \
                 CPU-only build, not a ROCm one (TheRock#332, #3628)"
            ),
            Problem::NoHipRuntimeImport { libraries } => write!(
                f,
                "none of its {libraries} native libraries imports amdhip64 (the HIP runtime \
                 DLL): this is a CPU-only build, not a ROCm one"
            ),
            Problem::Rpath {
                entry,
                tag,
                path,
                reason,
            } => write!(f, "'{entry}' has {tag} entry '{path}': {reason}"),
            Problem::LinuxTag { tag, needs } => {
                let arch = tag.strip_prefix("linux_").unwrap_or(tag);
                let needs = needs
                    .as_ref()
                    .map(|glibc| format!(" (its libraries need glibc {glibc})"))
                    .unwrap_or_default();
                write!(
                    f,
                    "platform tag {tag} promises nothing beyond the machine that built it{needs}: \
                     build in the manylinux image and run `rockbuild retag --platform \
                     manylinux_2_28_{arch}`, or pass --allow-linux-tag for a local build"
                )
            }
            Problem::GlibcTooNew {
                entry,
                needs,
                tag,
                allows,
            } => {
                let level = needs.replace('.', "_");
                write!(
                    f,
                    "{entry} needs GLIBC_{needs}, but the platform tag {tag} promises glibc \
                     {allows} or newer is enough: build in the manylinux_2_28 image \
                     (dockerfiles/build.Dockerfile), or tag it manylinux_{level}"
                )
            }
            Problem::Elf { entry, detail } => {
                write!(f, "'{entry}' is not a readable ELF file: {detail}")
            }
            Problem::Pe { entry, detail } => {
                write!(f, "'{entry}' is not a readable PE/COFF image: {detail}")
            }
            Problem::UnresolvedImport { entry, dll, detail } => write!(
                f,
                "'{entry}' imports {dll}, which Windows would not find: {detail}"
            ),
            Problem::Unresolved {
                requirement,
                detail,
            } => write!(
                f,
                "Requires-Dist '{requirement}' does not resolve: {detail}"
            ),
            Problem::PinNotExact {
                dist,
                version,
                found,
            } => write!(
                f,
                "it is built against {dist} and must pin the set's version exactly ({dist}=={version}: a mismatched pair fails at import), but it requires {}",
                if found.is_empty() {
                    format!("no {dist} at all")
                } else {
                    format!("'{}'", found.join("', '"))
                }
            ),
            Problem::MissingExtra {
                requirement,
                extra,
                provider,
            } => write!(
                f,
                "Requires-Dist '{requirement}' asks for extra '{extra}' but {provider} does not \
                 provide it (pip would only warn and install without it)"
            ),
            Problem::CompanionVersion {
                name,
                version,
                pinned,
            } => match pinned.as_slice() {
                [] => write!(
                    f,
                    "a ROCm SDK wheel ({name} {version}) is carried only as a dependency the set \
                     pins, and no wheel of the set pins the ROCm SDK: remove it from the input"
                ),
                _ => write!(
                    f,
                    "{name} {version} is not the ROCm SDK the set pins ({}): remove it from the \
                     input (stage brings the SDK wheels the set pins from the SDK's index)",
                    pinned.join(", ")
                ),
            },
            Problem::Provenance {
                index: None,
                detail,
            } => write!(
                f,
                "a ROCm SDK wheel is carried as its index publishes it, and {detail}: give the \
                 SDK's index (--index-url, or --lock with a build record naming it)"
            ),
            Problem::Provenance {
                index: Some(index),
                detail,
            } => write!(
                f,
                "not the file the SDK's index {index} publishes: {detail}"
            ),
        }
    }
}
