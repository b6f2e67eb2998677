//! From facts to checks: pure, so every verdict and its advice is unit-tested.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::disk::Role;
use super::inspect::{Facts, Location, Probe};
use super::{Check, Report, Status};
use crate::ui::human_bytes;

/// git older than this lacks `git submodule update --jobs`, which checkout uses.
const MIN_GIT: (u32, u32) = (2, 9);
/// The Python versions TheRock's release matrix builds wheels for
/// (configure_pytorch_release_matrix.py: 3.10–3.14).
const PYTHONS: ((u32, u32), (u32, u32)) = ((3, 10), (3, 14));
/// A commit dated further ahead of the clock than this means the clock is wrong.
const CLOCK_SLACK_SECS: i64 = 300;
/// The file-name length ext4, xfs and btrfs allow; less (eCryptfs: 143) breaks deep trees.
const USUAL_NAME_MAX: u64 = 255;

/// What the facts are checked against, and where those expectations came from.
#[derive(Clone, Debug, Default)]
pub struct Expectations {
    pub venv_from: String,
    /// The lock and the SDK version it pins, when there is a lock.
    pub lock: Option<(PathBuf, Option<String>)>,
    pub targets: Option<(Vec<String>, String)>,
    pub index_from: Option<String>,
    /// The `--index-url` value `install-rocm` needs besides `--lock` to reach the SDK's index
    /// (`None` when the lock names it; `auto` when nothing does).
    pub install_index: Option<String>,
    pub compile: bool,
}

/// The `install-rocm` command that puts the expected SDK into the venv at `dir`: from the
/// lock's index when the lock names one, else from the index given, else from this machine's
/// GPUs (`auto`) — never from PyPI's default, which has no ROCm SDK.
fn install_rocm(dir: &str, expect: &Expectations) -> String {
    let mut command = format!("rockbuild install-rocm --venv {dir}");
    if let Some((lock, _)) = &expect.lock {
        command.push_str(&format!(" --lock {}", lock.display()));
    }
    if let Some(index) = &expect.install_index {
        command.push_str(&format!(" --index-url {index}"));
    }
    command
}

pub fn judge(facts: &Facts, expect: &Expectations) -> Report {
    let mut checks = vec![
        git(&facts.git),
        python(&facts.python),
        venv(facts, expect),
        sdk_lock(facts, expect),
        hipcc(facts),
        device_libs(facts, expect),
        compile(facts, expect),
        compiler_cache(facts),
    ];
    checks.extend(disks(&facts.locations));
    checks.extend(facts.locations.iter().map(path));
    checks.push(index(facts, expect));
    checks.push(clock(facts));
    Report::new(checks)
}

fn check(
    id: &'static str,
    status: Status,
    detail: impl Into<String>,
    fix: Option<String>,
) -> Check {
    Check {
        id,
        status,
        detail: detail.into(),
        fix,
    }
}

/// The first `major.minor[.patch]` in a version line (`git version 2.47.3`, `Python 3.11.7`).
fn version_in(line: &str) -> Option<(u32, u32)> {
    line.split_whitespace().find_map(|word| {
        let mut parts = word.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts
            .next()?
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()?;
        Some((major, minor))
    })
}

fn git(probe: &Probe) -> Check {
    match probe {
        Ok(line) => match version_in(line) {
            Some(version) if version >= MIN_GIT => check("git", Status::Pass, line.clone(), None),
            Some(_) => check(
                "git",
                Status::Fail,
                format!(
                    "{line} is older than {}.{} (checkout runs `git submodule update --jobs`)",
                    MIN_GIT.0, MIN_GIT.1
                ),
                Some("install a newer git (your distribution's backports, or git-scm.com)".into()),
            ),
            None => check(
                "git",
                Status::Warn,
                format!("cannot read a version in `{line}`"),
                None,
            ),
        },
        Err(why) => check(
            "git",
            Status::Fail,
            format!("git does not run: {why}"),
            Some("install git (apt-get install git) and put it on PATH".into()),
        ),
    }
}

fn python(probe: &Probe) -> Check {
    let (low, high) = PYTHONS;
    match probe {
        Ok(line) => match version_in(line) {
            Some(version) if version >= low && version <= high => check(
                "python",
                Status::Pass,
                format!("{line} (python3 on PATH)"),
                None,
            ),
            Some(_) => check(
                "python",
                Status::Warn,
                format!(
                    "{line} is outside {}.{}–{}.{}, the Pythons TheRock builds wheels for",
                    low.0, low.1, high.0, high.1
                ),
                Some(
                    "create the build venv with a Python in that range (uv python install 3.12)"
                        .into(),
                ),
            ),
            None => check(
                "python",
                Status::Warn,
                format!("cannot read a version in `{line}`"),
                None,
            ),
        },
        Err(why) => check(
            "python",
            Status::Fail,
            format!("python3 does not run: {why}"),
            Some("install Python 3.10–3.14 and put python3 on PATH".into()),
        ),
    }
}

fn venv(facts: &Facts, expect: &Expectations) -> Check {
    let venv = &facts.venv;
    let dir = venv.dir.display();
    if !venv.exists {
        return check(
            "venv",
            Status::Warn,
            format!("no venv at {dir} ({})", expect.venv_from),
            Some(install_rocm(&dir.to_string(), expect)),
        );
    }
    match &venv.python {
        Some(Ok(line)) => check(
            "venv",
            Status::Pass,
            format!("{dir} ({}), {line}", expect.venv_from),
            None,
        ),
        Some(Err(why)) => check(
            "venv",
            Status::Fail,
            format!("the venv at {dir} cannot run its Python: {why}"),
            Some(format!(
                "recreate it: rm -rf {dir} && {}",
                install_rocm(&dir.to_string(), expect)
            )),
        ),
        None => check(
            "venv",
            Status::Skip,
            format!("{dir} was not asked for its Python"),
            None,
        ),
    }
}

fn sdk_lock(facts: &Facts, expect: &Expectations) -> Check {
    let venv = &facts.venv;
    let dir = venv.dir.display();
    let reinstall = install_rocm(&dir.to_string(), expect);
    match (&venv.rocm, &expect.lock) {
        _ if !venv.exists => check(
            "sdk-lock",
            Status::Skip,
            "no venv, so no SDK to compare",
            None,
        ),
        (None, _) => check(
            "sdk-lock",
            Status::Warn,
            format!("the ROCm SDK (`rocm`) is not installed in {dir}"),
            Some(reinstall),
        ),
        (Some(installed), None) => check(
            "sdk-lock",
            Status::Pass,
            format!("rocm {installed} in {dir} (no lock to compare with)"),
            None,
        ),
        (Some(installed), Some((lock, None))) => check(
            "sdk-lock",
            Status::Pass,
            format!(
                "rocm {installed} in {dir} ({} pins no SDK yet)",
                lock.display()
            ),
            None,
        ),
        (Some(installed), Some((lock, Some(pinned)))) => {
            let same = crate::version::normalize("installed rocm", installed).is_ok_and(|v| {
                crate::version::normalize("locked rocm", pinned).is_ok_and(|p| p == v)
            });
            if same {
                check(
                    "sdk-lock",
                    Status::Pass,
                    format!("rocm {installed}, as {} pins", lock.display()),
                    None,
                )
            } else {
                check(
                    "sdk-lock",
                    Status::Fail,
                    format!(
                        "SDK drift: {dir} has rocm {installed}, {} pins {pinned}",
                        lock.display()
                    ),
                    Some(reinstall),
                )
            }
        }
    }
}

fn hipcc(facts: &Facts) -> Check {
    let hip = &facts.hipcc;
    match &hip.hipcc {
        Some(path) => check("hipcc", Status::Pass, format!("{} (from {})", path.display(), hip.searched), None),
        None => check(
            "hipcc",
            Status::Fail,
            format!("no hipcc in {}", hip.searched),
            Some("install the ROCm SDK into the venv (rockbuild install-rocm), or a ROCm with hipcc on PATH".into()),
        ),
    }
}

fn targets_text(targets: &[String]) -> String {
    targets.join(",")
}

fn device_libs(facts: &Facts, expect: &Expectations) -> Check {
    let hip = &facts.hipcc;
    let Some((targets, from)) = &expect.targets else {
        return check(
            "device-libs",
            Status::Skip,
            "no targets to check (pass --pytorch-rocm-arch or --amdgpu-family, or a lock with targets)",
            None,
        );
    };
    let Some(dir) = &hip.device_libs else {
        let looked: Vec<String> = hip
            .device_libs_searched
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        return check(
            "device-libs",
            Status::Fail,
            format!(
                "no ROCm device-library directory (looked in {})",
                looked.join(", ")
            ),
            Some("install the SDK's devel part (rocm[devel]) or set HIP_DEVICE_LIB_PATH".into()),
        );
    };
    if hip.missing_bitcode.is_empty() {
        return check(
            "device-libs",
            Status::Pass,
            format!(
                "ISA bitcode for {} ({from}) in {}",
                targets_text(targets),
                dir.display()
            ),
            None,
        );
    }
    let files: Vec<String> = hip
        .missing_bitcode
        .iter()
        .map(|t| super::inspect::isa_bitcode(t))
        .collect();
    check(
        "device-libs",
        Status::Fail,
        format!(
            "{} has no bitcode for {} ({}): this ROCm cannot build for {}",
            dir.display(),
            targets_text(&hip.missing_bitcode),
            files.join(", "),
            if hip.missing_bitcode.len() == 1 {
                "it"
            } else {
                "them"
            }
        ),
        Some(format!(
            "use an SDK that supports {} (its family's index), or drop them from the targets ({from})",
            targets_text(&hip.missing_bitcode)
        )),
    )
}

fn compile(facts: &Facts, expect: &Expectations) -> Check {
    let Some(result) = &facts.hipcc.compile else {
        let why = if !expect.compile {
            "not asked (--no-compile)"
        } else if expect.targets.is_none() {
            "no targets to compile for"
        } else {
            "no hipcc to compile with"
        };
        return check("compile", Status::Skip, why, None);
    };
    if result.failed_targets.is_empty() {
        return check(
            "compile",
            Status::Pass,
            format!(
                "hipcc compiled a test kernel for {}",
                targets_text(&result.targets)
            ),
            None,
        );
    }
    let last = result
        .tail
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map_or("", String::as_str);
    check(
        "compile",
        Status::Fail,
        format!("hipcc cannot compile for {}: {}", targets_text(&result.failed_targets), last.trim()),
        Some("this compiler does not support those targets: install an SDK whose hipcc does, or build for other targets".into()),
    )
}

fn compiler_cache(facts: &Facts) -> Check {
    let found: Vec<&str> = [&facts.ccache, &facts.sccache]
        .into_iter()
        .filter_map(|probe| probe.as_ref().ok().map(String::as_str))
        .collect();
    if found.is_empty() {
        check(
            "compiler-cache",
            Status::Warn,
            "neither ccache nor sccache runs: every rebuild compiles all of torch again",
            Some("install ccache (apt-get install ccache) and build with --use-ccache".into()),
        )
    } else {
        check("compiler-cache", Status::Pass, found.join("; "), None)
    }
}

/// One check per file system: the needs of every location on it add up.
fn disks(locations: &[Location]) -> Vec<Check> {
    let mut groups: BTreeMap<u64, Vec<&Location>> = BTreeMap::new();
    let mut checks = Vec::new();
    for location in locations {
        match &location.fs {
            Ok(fs) => groups.entry(fs.device).or_default().push(location),
            Err(why) => checks.push(check(
                "disk",
                Status::Fail,
                format!(
                    "{} {}: cannot read its file system: {why}",
                    location.role.label(),
                    location.path.display()
                ),
                None,
            )),
        }
    }
    for group in groups.values() {
        let available = group[0]
            .fs
            .as_ref()
            .map(|f| f.available)
            .unwrap_or_default();
        let (fail_below, warn_below) = group
            .iter()
            .map(|l| l.role.needs())
            .fold((0, 0), |(f, w), (nf, nw)| (f + nf, w + nw));
        let places: Vec<String> = group
            .iter()
            .map(|l| format!("{} {}", l.role.label(), l.path.display()))
            .collect();
        let shared = if group.len() > 1 {
            " (one file system)"
        } else {
            ""
        };
        let detail = format!(
            "{}{shared}: {} free; a torch build needs {} there, {} to be comfortable",
            places.join(", "),
            human_bytes(available),
            human_bytes(fail_below),
            human_bytes(warn_below)
        );
        let roles: Vec<Role> = group.iter().map(|l| l.role).collect();
        let fix = || {
            Some(format!(
                "free space or move {} to a larger disk (--root-checkout-dir, --output-dir, --cache-dir)",
                roles
                    .iter()
                    .map(|r| r.label())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ))
        };
        checks.push(if available < fail_below {
            check("disk", Status::Fail, detail, fix())
        } else if available < warn_below {
            check("disk", Status::Warn, detail, fix())
        } else {
            check("disk", Status::Pass, detail, None)
        });
    }
    checks
}

fn path(location: &Location) -> Check {
    let place = format!("{} {}", location.role.label(), location.path.display());
    if let Err(why) = &location.writable {
        return check(
            "path",
            Status::Fail,
            format!("{place}: not writable: {why}"),
            Some("pick a directory you can write to, or fix its owner and mode".into()),
        );
    }
    let name_max = location
        .fs
        .as_ref()
        .map(|f| f.name_max)
        .unwrap_or(USUAL_NAME_MAX);
    if let Some((longest, file)) = &location.longest_name
        && (*longest as u64) > name_max
    {
        return check(
            "path",
            Status::Fail,
            format!(
                "{place}: {} has a {longest}-byte name; this file system allows {name_max}",
                file.display()
            ),
            Some("move the tree to a file system with 255-byte names (not eCryptfs)".into()),
        );
    }
    let text = location.path.to_string_lossy();
    if text.chars().any(char::is_whitespace) {
        return check(
            "path",
            Status::Warn,
            format!(
                "{place}: the path has spaces, which break the torchvision build (pytorch/vision#9165) and rocm-sdk scripts (TheRock#7075)"
            ),
            Some("use a path without spaces".into()),
        );
    }
    if name_max < USUAL_NAME_MAX {
        return check(
            "path",
            Status::Warn,
            format!(
                "{place}: this file system allows names of {name_max} bytes only (eCryptfs?); PyTorch's generated kernels have longer ones"
            ),
            Some("build on a file system with 255-byte names".into()),
        );
    }
    check(
        "path",
        Status::Pass,
        format!("{place}: writable, names up to {name_max} bytes"),
        None,
    )
}

fn index(facts: &Facts, expect: &Expectations) -> Check {
    let Some(index) = &facts.index else {
        return check(
            "index",
            Status::Skip,
            "no index to check (pass --index-url, or a lock that records the SDK's index)",
            None,
        );
    };
    let from = expect.index_from.as_deref().unwrap_or("given");
    match &index.status {
        Ok(200) => check(
            "index",
            Status::Pass,
            format!("{} ({from}) lists rocm", index.url),
            None,
        ),
        Ok(404) => check(
            "index",
            Status::Fail,
            format!("{} ({from}) answers but has no `rocm` project", index.url),
            Some(
                "check the URL: a family's index ends in /<family>/ (rockbuild detect prints it)"
                    .into(),
            ),
        ),
        Ok(status) => check(
            "index",
            Status::Fail,
            format!(
                "{} ({from}) answered HTTP {status} for its `rocm` page",
                index.url
            ),
            Some("check the URL and any credentials the index needs".into()),
        ),
        Err(why) => check(
            "index",
            Status::Fail,
            format!("{} ({from}) is not reachable: {why}", index.url),
            Some(crate::index::reach::unreachable_fix(&index.url)),
        ),
    }
}

fn clock(facts: &Facts) -> Check {
    let commits = &facts.commits;
    let Some((dir, newest)) = commits.heads.iter().max_by_key(|(_, time)| *time) else {
        return match commits.unreadable.first() {
            Some((dir, why)) => check(
                "clock",
                Status::Warn,
                format!("cannot read the commit date in {}: {why}", dir.display()),
                None,
            ),
            None => check(
                "clock",
                Status::Skip,
                "no checkouts to compare the clock with",
                None,
            ),
        };
    };
    let ahead = newest - commits.now;
    if ahead > CLOCK_SLACK_SECS {
        check(
            "clock",
            Status::Fail,
            format!(
                "the clock is at least {} behind: HEAD of {} is dated in the future, so build tools see sources newer than their outputs and rebuild (or skip) wrongly",
                human_duration(ahead),
                dir.display()
            ),
            Some("set the clock right (timedatectl set-ntp true)".into()),
        )
    } else {
        check(
            "clock",
            Status::Pass,
            format!(
                "no HEAD commit of the {} checkout{} is dated in the future",
                commits.heads.len(),
                crate::ui::plural(commits.heads.len())
            ),
            None,
        )
    }
}

fn human_duration(seconds: i64) -> String {
    match seconds {
        ..=119 => format!("{seconds}s"),
        120..=7199 => format!("{}min", seconds / 60),
        7200..=172_799 => format!("{}h", seconds / 3600),
        _ => format!("{} days", seconds / 86_400),
    }
}

#[cfg(test)]
#[path = "judge_tests.rs"]
mod tests;
