//! `rockbuild retag`: give verified `linux_<arch>` wheels a manylinux platform tag once every
//! ELF file in them needs at most the tag's glibc (see [`crate::wheel::manylinux`]). The plan
//! is a pure function of the verification reports; applying it rewrites the WHEEL file's
//! `Tag:` lines and RECORD's line for it, copies every other entry's compressed bytes
//! unchanged, and renames the wheel. Nothing is bundled or patched. Companions (the ROCm
//! SDK's wheels, `crate::wheel::companion`) are kept as they are: their file names are their
//! index's.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::binary::elf::Glibc;
use crate::exit::{ExitStatus, HasExitStatus};
use crate::wheel::archive::Archive;
use crate::wheel::companion::Role;
use crate::wheel::filename::WheelFilename;
use crate::wheel::manylinux::{Platform, highest_need};
use crate::wheel::record;
use crate::wheel::verify::{CollectError, WheelReport};
use crate::wheel::zipwrite::ZipOut;

/// WHEEL and RECORD are small; anything larger is not a real one.
const MAX_DIST_FILE: u64 = 64 << 20;

/// The manylinux tag asked for: `manylinux_2_28_x86_64`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Target {
    pub tag: String,
    #[serde(skip)]
    pub glibc: Glibc,
    #[serde(skip)]
    pub arch: String,
}

/// The architectures PEP 600 names for manylinux tags (what `uname -m` says on Linux).
const MANYLINUX_ARCHES: [&str; 9] = [
    "x86_64",
    "i686",
    "aarch64",
    "armv7l",
    "ppc64",
    "ppc64le",
    "s390x",
    "riscv64",
    "loongarch64",
];

impl Target {
    /// A manylinux tag a wheel can be given: glibc 2.x (every glibc there is has major version
    /// 2; `manylinux_99_0` would install nowhere), an architecture PEP 600 names.
    pub fn parse(tag: &str) -> Option<Target> {
        match Platform::parse(tag) {
            Platform::Manylinux { glibc, arch }
                if glibc.major == 2 && MANYLINUX_ARCHES.contains(&arch.as_str()) =>
            {
                Some(Target {
                    tag: Platform::manylinux_tag(glibc, &arch),
                    glibc,
                    arch,
                })
            }
            _ => None,
        }
    }
}

/// What happens to one wheel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum Action {
    Retag {
        file: String,
        new_file: String,
        /// The highest glibc its libraries need, if any.
        needs: Option<String>,
    },
    Keep {
        file: String,
        reason: String,
    },
    Refuse {
        file: String,
        reason: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RetagPlan {
    pub platform: Target,
    pub actions: Vec<Action>,
}

impl RetagPlan {
    pub fn refusals(&self) -> usize {
        self.actions
            .iter()
            .filter(|a| matches!(a, Action::Refuse { .. }))
            .count()
    }

    pub fn to_text(&self) -> String {
        let mut out = format!("retag to {}\n", self.platform.tag);
        for action in &self.actions {
            let line = match action {
                Action::Retag {
                    file,
                    new_file,
                    needs,
                } => {
                    let needs = needs.as_ref().map_or_else(
                        || "no glibc symbols".to_string(),
                        |g| format!("needs glibc {g}"),
                    );
                    format!("  retag   {file} -> {new_file} ({needs})")
                }
                Action::Keep { file, reason } => format!("  keep    {file} ({reason})"),
                Action::Refuse { file, reason } => format!("  refuse  {file}: {reason}"),
            };
            out.push_str(&line);
            out.push('\n');
        }
        out
    }
}

/// Decides per verified wheel: only sound `linux_<arch>` wheels whose libraries fit the
/// target's glibc are retagged.
pub fn plan(reports: &[WheelReport], platform: &Target) -> RetagPlan {
    let actions = reports
        .iter()
        .map(|report| match decide(report, platform) {
            // Retagging never replaces a wheel: the name it would take is another wheel's.
            Action::Retag { file, new_file, .. }
                if reports.iter().any(|other| other.file == new_file) =>
            {
                Action::Refuse {
                    reason: format!(
                        "its new name {new_file} is taken by another wheel in the directory; \
                         remove one of the two"
                    ),
                    file,
                }
            }
            action => action,
        })
        .collect();
    RetagPlan {
        platform: platform.clone(),
        actions,
    }
}

fn decide(report: &WheelReport, platform: &Target) -> Action {
    let file = report.file.clone();
    if report.role == Role::Companion {
        return Action::Keep {
            file,
            reason: "a ROCm SDK wheel: carried as its index publishes it, never retagged".into(),
        };
    }
    if let Some(problem) = report.problems.first() {
        return Action::Refuse {
            file,
            reason: format!("it fails verification ({problem}); fix that first"),
        };
    }
    let Ok(name) = WheelFilename::parse(&report.file) else {
        return Action::Refuse {
            file,
            reason: "not a wheel file name".into(),
        };
    };
    let platforms: Vec<Platform> = name.platform.split('.').map(Platform::parse).collect();
    let linux_arch = platforms.iter().find_map(|p| match p {
        Platform::Linux { arch } => Some(arch.as_str()),
        _ => None,
    });
    let Some(arch) = linux_arch else {
        return Action::Keep {
            file,
            reason: format!("platform tag {} is not linux_<arch>", name.platform),
        };
    };
    if arch != platform.arch {
        return Action::Refuse {
            file,
            reason: format!(
                "it is built for {arch}, not for {} of {}",
                platform.arch, platform.tag
            ),
        };
    }
    let needs = highest_need(
        report
            .libraries
            .iter()
            .filter_map(|l| l.glibc.map(|g| (l.entry.as_str(), g))),
    );
    if let Some((entry, glibc)) = needs
        && glibc > platform.glibc
    {
        return Action::Refuse {
            file,
            reason: format!(
                "{entry} needs GLIBC_{glibc}, newer than the {} of {}: build in the \
                 manylinux image of that glibc",
                platform.glibc, platform.tag
            ),
        };
    }
    let mut renamed = name;
    renamed.platform = platform.tag.clone();
    let new_file = renamed.to_string();
    Action::Retag {
        file,
        new_file,
        needs: needs.map(|(_, g)| g.to_string()),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RetagError {
    #[error("{refused} of {total} wheels cannot be retagged to {platform}; nothing was changed")]
    Refused {
        refused: usize,
        total: usize,
        platform: String,
    },
    #[error("'{}': {detail}", wheel.display())]
    Wheel { wheel: PathBuf, detail: String },
    #[error(
        "--platform '{0}' is not a manylinux tag a wheel can carry (`manylinux_2_<glibc minor>_<arch>`, glibc 2.x, an architecture PEP 600 names): give one such as manylinux_2_28_x86_64 (the build image's)"
    )]
    Platform(String),
    #[error(transparent)]
    Inputs(#[from] CollectError),
}

impl HasExitStatus for RetagError {
    fn exit_status(&self) -> ExitStatus {
        match self {
            // An empty directory is nothing verified, never a pass: as `verify` and `stage`.
            RetagError::Refused { .. } | RetagError::Inputs(CollectError::EmptyDirectory(_)) => {
                ExitStatus::VerificationFailed
            }
            RetagError::Wheel { .. } => ExitStatus::Failure,
            RetagError::Platform(_) | RetagError::Inputs(_) => ExitStatus::Usage,
        }
    }
}

/// Rewrites one wheel under its new name in the same directory (temporary file, then
/// rename), then removes the old file. `wheel` must have passed verification.
pub fn retag_wheel(wheel: &Path, new_file: &str, tag: &str) -> Result<PathBuf, RetagError> {
    let fail = |detail: String| RetagError::Wheel {
        wheel: wheel.to_path_buf(),
        detail,
    };
    let dir = wheel.parent().unwrap_or(Path::new("."));
    let handle = fs_err::File::open(wheel).map_err(|e| fail(e.to_string()))?;
    let mut defects = Vec::new();
    let archive =
        Archive::open(handle.into_file(), &mut defects).map_err(|e| fail(e.to_string()))?;
    let position = |suffix: &str| {
        archive
            .entries
            .iter()
            .position(|e| {
                e.name
                    .split_once('/')
                    .is_some_and(|(top, rest)| top.ends_with(".dist-info") && rest == suffix)
            })
            .ok_or_else(|| fail(format!("no .dist-info/{suffix}")))
    };
    let (wheel_index, record_index) = (position("WHEEL")?, position("RECORD")?);
    let read = |index: usize| {
        let entry = &archive.entries[index];
        let bytes = archive
            .read_small(entry, MAX_DIST_FILE, &mut Vec::new())
            .map_err(|e| fail(format!("'{}': {e}", entry.name)))?;
        String::from_utf8(bytes).map_err(|_| fail(format!("'{}' is not UTF-8", entry.name)))
    };
    let new_wheel_file = retag_wheel_file(&read(wheel_index)?, tag);
    let wheel_name = archive.entries[wheel_index].name.clone();
    let (lines, errors) = record::parse(&read(record_index)?);
    if let Some(error) = errors.first() {
        return Err(fail(format!(
            "RECORD line {}: {}",
            error.line, error.detail
        )));
    }
    let new_hash = record::record_hash(new_wheel_file.as_bytes());
    let new_size = new_wheel_file.len() as u64;
    let rows: Vec<(&str, Option<String>, Option<u64>)> = lines
        .iter()
        .map(|line| {
            if line.path == wheel_name {
                (line.path.as_str(), Some(new_hash.clone()), Some(new_size))
            } else {
                let hash = line
                    .hash
                    .as_ref()
                    .map(|(algorithm, digest)| format!("{}={digest}", algorithm.name()));
                (line.path.as_str(), hash, line.size)
            }
        })
        .collect();
    let new_record = record::render(rows.iter().map(|(p, h, s)| (*p, h.as_deref(), *s)));

    let temp = tempfile::Builder::new()
        .prefix(".retag-")
        .suffix(".whl.part")
        .tempfile_in(dir)
        .map_err(|e| fail(format!("temporary file in {}: {e}", dir.display())))?;
    let write_error = |e: std::io::Error| fail(format!("writing {new_file}: {e}"));
    let mut out = ZipOut::new(temp.reopen().map_err(write_error)?);
    for (index, entry) in archive.entries.iter().enumerate() {
        if index == wheel_index {
            out.add(&entry.name, new_wheel_file.as_bytes(), entry)
        } else if index == record_index {
            out.add(&entry.name, new_record.as_bytes(), entry)
        } else {
            let span = archive
                .local_header(entry, &mut defects)
                .map_err(|e| fail(format!("'{}': {e}", entry.name)))?;
            out.raw_copy(&archive, entry, span, &entry.name)
        }
        .map_err(write_error)?;
    }
    out.finish().map_err(write_error)?;
    let path = dir.join(new_file);
    // link(2) fails when the name exists: a wheel that appeared since the plan is never
    // replaced. The temporary name goes when `temp` drops.
    fs_err::hard_link(temp.path(), &path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            fail(format!(
                "{new_file} appeared in the directory meanwhile; it was left as it is"
            ))
        } else {
            fail(format!("writing {new_file}: {e}"))
        }
    })?;
    drop(temp);
    fs_err::remove_file(wheel).map_err(|e| fail(e.to_string()))?;
    Ok(path)
}

/// The WHEEL file with each `Tag:` line's platform replaced; other lines kept as they are.
fn retag_wheel_file(text: &str, tag: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut seen = Vec::new();
    for line in text.split_inclusive('\n') {
        let Some(value) = line.strip_prefix("Tag:") else {
            out.push_str(line);
            continue;
        };
        let value = value.trim();
        let new = match value.rsplit_once('-') {
            Some((interpreter_abi, platform))
                if matches!(Platform::parse(platform), Platform::Linux { .. }) =>
            {
                format!("{interpreter_abi}-{tag}")
            }
            _ => value.to_string(),
        };
        // `py3-none-linux_x86_64` and a compressed twin collapse into one line.
        if !seen.contains(&new) {
            out.push_str(&format!("Tag: {new}\n"));
            seen.push(new);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_file_tags() {
        let text = "Wheel-Version: 1.0\nGenerator: setuptools (80.9.0)\nRoot-Is-Purelib: false\nTag: cp312-cp312-linux_x86_64\n\n";
        assert_eq!(
            retag_wheel_file(text, "manylinux_2_28_x86_64"),
            "Wheel-Version: 1.0\nGenerator: setuptools (80.9.0)\nRoot-Is-Purelib: false\nTag: cp312-cp312-manylinux_2_28_x86_64\n\n"
        );
        let pure = "Wheel-Version: 1.0\nTag: py3-none-any\n";
        assert_eq!(retag_wheel_file(pure, "manylinux_2_28_x86_64"), pure);
    }

    #[test]
    fn targets_parse_only_manylinux_tags() {
        let target = Target::parse("manylinux2014_x86_64").expect("alias");
        assert_eq!(target.tag, "manylinux_2_17_x86_64");
        assert!(Target::parse("linux_x86_64").is_none());
        assert!(Target::parse("musllinux_1_2_x86_64").is_none());
        assert!(
            Target::parse("manylinux_99_0_x86_64").is_none(),
            "glibc 99.0"
        );
        assert!(Target::parse("manylinux_99_0").is_none(), "no architecture");
        assert!(Target::parse("manylinux_2_28_pdp11").is_none());
    }
}
