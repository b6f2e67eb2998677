//! `rockbuild compat`: what a built or installed stack contains, in the layout of ROCm's
//! "PyTorch compatibility" page (docs/compatibility/ml-compatibility/pytorch-compatibility.rst
//! in ROCm/ROCm: a version table, "Critical ROCm libraries for PyTorch", "Supported and
//! unsupported features"), and whether it matches the lock.
//!
//! [`probe`] reads a venv (dist-info, libraries, and one `python -c` that imports torch and
//! asks it what it was built with) or a set of wheels (their METADATA, libraries and
//! `torch/version.py`); [`assemble`] — pure — turns that into a [`CompatReport`].

pub mod probe;
mod render;

use std::collections::BTreeSet;

use crate::exit::{ExitStatus, HasExitStatus};
use crate::lock::Lock;

pub use probe::Probed;

/// One project of the stack as the report lists it, in the stack's order (each project's
/// recipe names its column: `compat` itself knows no project).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// As ROCm's compatibility page writes it (`PyTorch`, `Triton`).
    pub name: String,
    /// The stack project whose wheel it is.
    pub project: String,
    /// The normalized names its wheel goes by: the stack's first, then upstream's.
    pub distributions: Vec<String>,
}

/// ROCm libraries PyTorch links, as the compatibility page lists them: (name, soname prefix).
const ROCM_LIBRARIES: &[(&str, &str)] = &[
    ("HIP runtime", "libamdhip64.so"),
    ("MIOpen", "libMIOpen.so"),
    ("RCCL", "librccl.so"),
    ("hipBLASLt", "libhipblaslt.so"),
    ("hipBLAS", "libhipblas.so"),
    ("rocBLAS", "librocblas.so"),
    ("AOTriton", "libaotriton_v2.so"),
];

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Component {
    pub name: String,
    pub distribution: String,
    /// `distribution` is upstream's name for the project's wheel, not the stack's
    /// (`pytorch-triton-rocm` for triton).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub upstream: bool,
    pub installed: Option<String>,
    pub lock: Option<String>,
    /// `None` when there is nothing to compare.
    pub matches: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LibraryTargets {
    pub library: String,
    pub distribution: String,
    pub targets: Vec<String>,
    pub matches: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RocmLibrary {
    pub name: String,
    pub linked: bool,
    pub evidence: String,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Feature {
    pub name: String,
    pub built: bool,
    /// What was read: torch's answers (a venv) and its libraries' DT_NEEDED (venv and wheels).
    pub evidence: String,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CompatReport {
    /// The venv or the wheels looked at.
    pub subject: String,
    pub lock: Option<String>,
    pub components: Vec<Component>,
    pub lock_targets: Vec<String>,
    pub targets: Vec<LibraryTargets>,
    pub libraries: Vec<RocmLibrary>,
    pub features: Vec<Feature>,
    /// `torch.__config__.show()`'s build settings, when torch could be imported.
    pub build_settings: Vec<(String, String)>,
    pub config: Option<String>,
    pub mismatches: Vec<String>,
}

impl CompatReport {
    pub fn to_markdown(&self) -> crate::ui::Markdown {
        render::markdown(self)
    }

    /// The mismatches with the lock as an error, or `Ok` when everything matches.
    pub fn outcome(&self) -> Result<(), Error> {
        if self.mismatches.is_empty() {
            Ok(())
        } else {
            Err(Error::Mismatch {
                lock: self.lock.clone().unwrap_or_default(),
                what: self.mismatches.clone(),
            })
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {detail}")]
    Read { path: String, detail: String },
    #[error(
        "{path} is neither a venv nor wheels: pass a venv directory (with pyvenv.cfg), or .whl files and directories of them"
    )]
    NotAStack { path: String },
    #[error("importing torch in {venv} to ask how it was built: {detail}")]
    Probe { venv: String, detail: String },
    #[error(
        "the stack differs from {lock} in {} place{}; the first: {}",
        what.len(),
        crate::ui::plural(what.len()),
        what.first().map_or("", String::as_str)
    )]
    Mismatch { lock: String, what: Vec<String> },
}

impl HasExitStatus for Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            Error::Read { .. } | Error::Probe { .. } => ExitStatus::Failure,
            Error::NotAStack { .. } => ExitStatus::Usage,
            Error::Mismatch { .. } => ExitStatus::VerificationFailed,
        }
    }
}

/// Turns what the probe found into the report. Pure.
/// `columns`: the stack's projects, in the order the report lists them.
pub fn assemble(probed: &Probed, columns: &[Column], lock: Option<(&str, &Lock)>) -> CompatReport {
    let record = lock.and_then(|(_, lock)| lock.build.as_ref());
    let normalize =
        |v: &str| crate::version::normalize("version", v).unwrap_or_else(|_| v.to_string());
    let mut mismatches = Vec::new();
    let mut components = Vec::new();
    let mut compare = |name: &str,
                       distribution: &str,
                       upstream: bool,
                       installed: Option<String>,
                       locked: Option<String>| {
        let matches = match (&installed, &locked) {
            (Some(installed), Some(locked)) => Some(normalize(installed) == normalize(locked)),
            (None, Some(_)) => Some(false),
            _ => None,
        };
        if matches == Some(false) {
            mismatches.push(format!(
                "{name} is {}, the lock has {}",
                installed.as_deref().unwrap_or("not installed"),
                locked.as_deref().unwrap_or("none")
            ));
        }
        components.push(Component {
            name: name.to_string(),
            distribution: distribution.to_string(),
            upstream,
            installed,
            lock: locked,
            matches,
        });
    };
    for column in columns {
        let known = &column.distributions;
        // The first of its names found (the stack's, else upstream's), else the stack's.
        let (index, installed) = known
            .iter()
            .enumerate()
            .find_map(|(index, name)| probed.version_of(name).map(|v| (index, Some(v))))
            .unwrap_or((0, None));
        let distribution = known.get(index).unwrap_or(&column.project);
        let locked = record.and_then(|r| r.versions.get(&column.project).cloned());
        compare(&column.name, distribution, index > 0, installed, locked);
    }
    compare(
        "ROCm SDK",
        crate::sdk::ROCM_DIST,
        false,
        probed.sdk.clone(),
        record
            .map(|r| r.sdk_version.clone())
            .filter(|v| !v.is_empty()),
    );
    components.push(Component {
        name: "HIP".into(),
        distribution: String::new(),
        upstream: false,
        installed: probed.hip.clone(),
        lock: None,
        matches: None,
    });
    components.push(Component {
        name: "Python".into(),
        distribution: String::new(),
        upstream: false,
        installed: probed.python.clone(),
        lock: None,
        matches: None,
    });

    let lock_targets: Vec<String> = record
        .map(|r| r.targets.iter().map(ToString::to_string).collect())
        .unwrap_or_default();
    let wanted: BTreeSet<&str> = lock_targets.iter().map(String::as_str).collect();
    let mut targets = Vec::new();
    // The lock's order, then the rest by ISA number (gfx906 before gfx1030).
    let rank = |target: &String| {
        let position = lock_targets
            .iter()
            .position(|t| t == target)
            .unwrap_or(usize::MAX);
        (position, target.len(), target.clone())
    };
    for library in probed.libraries.iter().filter(|l| !l.targets.is_empty()) {
        let found: BTreeSet<&str> = library.targets.iter().map(String::as_str).collect();
        let mut ordered = library.targets.clone();
        ordered.sort_by_key(rank);
        let matches = (!wanted.is_empty()).then(|| found == wanted);
        if matches == Some(false) {
            mismatches.push(format!(
                "{} has code for {}, the lock's targets are {}",
                library.path,
                ordered.join(","),
                lock_targets.join(",")
            ));
        }
        targets.push(LibraryTargets {
            library: library.path.clone(),
            distribution: library.distribution.clone(),
            targets: ordered,
            matches,
        });
    }
    if targets.is_empty() && !wanted.is_empty() {
        mismatches.push(format!(
            "no library has GPU code, the lock's targets are {}",
            lock_targets.join(",")
        ));
    }

    let torch_distribution = components[0].distribution.clone();
    let libraries = ROCM_LIBRARIES
        .iter()
        .map(|(name, soname)| rocm_library(probed, &torch_distribution, name, soname))
        .collect::<Vec<_>>();
    let features = features(probed, &libraries);
    CompatReport {
        subject: probed.subject.clone(),
        lock: lock.map(|(path, _)| path.to_string()),
        components,
        lock_targets,
        targets,
        libraries,
        features,
        build_settings: probed
            .torch
            .as_ref()
            .map(|t| t.build_settings())
            .unwrap_or_default(),
        config: probed.torch.as_ref().and_then(|t| t.config.clone().ok()),
        mismatches,
    }
}

/// Which of torch's libraries link a ROCm library.
fn rocm_library(probed: &Probed, torch: &str, name: &str, soname: &str) -> RocmLibrary {
    let linking: Vec<String> = probed
        .libraries
        .iter()
        .filter(|l| l.distribution == torch)
        .filter_map(|l| {
            l.needed
                .iter()
                .find(|n| n.starts_with(soname))
                .map(|n| format!("{} needs {n}", l.path))
        })
        .collect();
    RocmLibrary {
        name: name.to_string(),
        linked: !linking.is_empty(),
        evidence: if linking.is_empty() {
            format!("no library of {torch} needs {soname}*")
        } else {
            linking.join("; ")
        },
    }
}

fn features(probed: &Probed, libraries: &[RocmLibrary]) -> Vec<Feature> {
    let linked = |name: &str| {
        libraries
            .iter()
            .find(|l| l.name == name)
            .is_some_and(|l| l.linked)
    };
    let torch = probed.torch.as_ref();
    let setting = |key: &str| {
        torch
            .map(|t| t.build_settings())
            .and_then(|s| s.into_iter().find(|(k, _)| k == key).map(|(_, v)| v))
    };
    let on = |value: &str| {
        matches!(
            value.to_ascii_uppercase().as_str(),
            "ON" | "1" | "TRUE" | "YES"
        )
    };
    let api = |answer: Option<&Result<serde_json::Value, String>>, call: &str| match answer {
        Some(Ok(value)) => format!("{call} → {value}"),
        Some(Err(error)) => format!("{call}: {error}"),
        None => format!("{call}: not asked (wheels are not imported)"),
    };
    let truthy = |answer: Option<&Result<serde_json::Value, String>>| match answer {
        Some(Ok(value)) => Some(value.as_bool().unwrap_or(!value.is_null())),
        Some(Err(_)) => Some(false),
        None => None,
    };
    let rocm = match setting("USE_ROCM") {
        Some(value) => (
            on(&value),
            format!("USE_ROCM={value} in torch.__config__.show()"),
        ),
        None => (linked("HIP runtime"), libraries[0].evidence.clone()),
    };
    let flash = torch.map(|t| &t.flash_attention);
    let cudnn = torch.map(|t| &t.cudnn_available);
    let distributed = torch.map(|t| &t.distributed_available);
    let nccl_setting = setting("USE_NCCL");
    vec![
        Feature {
            name: "ROCm (HIP) build".into(),
            built: rocm.0,
            evidence: rocm.1,
        },
        Feature {
            name: "Flash attention (AOTriton)".into(),
            built: truthy(flash).unwrap_or_else(|| linked("AOTriton")),
            evidence: format!(
                "{}; {}",
                api(flash, "torch.backends.cuda.is_flash_attention_available()"),
                libraries[6].evidence
            ),
        },
        Feature {
            name: "MIOpen (torch.backends.cudnn)".into(),
            built: truthy(cudnn).unwrap_or(false) || linked("MIOpen"),
            evidence: format!(
                "{}; {}",
                api(cudnn, "torch.backends.cudnn.is_available()"),
                libraries[1].evidence
            ),
        },
        Feature {
            name: "Distributed with RCCL".into(),
            built: match (&nccl_setting, truthy(distributed)) {
                (Some(value), Some(available)) => on(value) && available,
                _ => linked("RCCL"),
            },
            evidence: format!(
                "{}; {}; {}",
                nccl_setting.map_or(
                    "USE_NCCL not in the build settings".to_string(),
                    |v| format!("USE_NCCL={v}")
                ),
                api(distributed, "torch.distributed.is_available()"),
                libraries[2].evidence
            ),
        },
        Feature {
            name: "hipBLASLt GEMMs".into(),
            built: linked("hipBLASLt"),
            evidence: libraries[3].evidence.clone(),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::BuildRecord;
    use probe::Library;

    fn probed() -> Probed {
        Probed {
            subject: "/venv".into(),
            distributions: vec![
                ("torch".into(), "2.10.0a0+rocm7.10.0".into()),
                ("torchvision".into(), "0.25.0a0+rocm7.10.0".into()),
            ],
            sdk: Some("7.10.0".into()),
            hip: Some("7.10.25401".into()),
            python: Some("3.12.3".into()),
            libraries: vec![Library {
                path: "torch/lib/libtorch_hip.so".into(),
                distribution: "torch".into(),
                targets: vec!["gfx1100".into(), "gfx942".into()],
                needed: vec![
                    "libamdhip64.so.7".into(),
                    "libMIOpen.so.1".into(),
                    "librccl.so.1".into(),
                ],
            }],
            torch: None,
        }
    }

    fn lock(targets: &[&str]) -> Lock {
        let table = crate::stack::load_families(None).expect("families");
        let mut lock = Lock::new("stack.yaml");
        lock.build = Some(BuildRecord {
            sdk_version: "7.10.0".into(),
            index_url: None,
            sdk_targets: vec![],
            targets: targets
                .iter()
                .map(|t| table.target(t).expect("target"))
                .collect(),
            mode: Default::default(),
            release_type: String::new(),
            version_suffix: String::new(),
            versions: [
                ("torch", "2.10.0a0+rocm7.10.0"),
                ("vision", "0.25.0a0+rocm7.10.0"),
                ("audio", "2.10.0a0+rocm7.10.0"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            stems: Default::default(),
            decided: Default::default(),
        });
        lock
    }

    /// The shipped stack's columns, upstream's names included.
    fn names() -> Vec<Column> {
        let stack = crate::stack::Stack::load(None).expect("stack");
        crate::settings::compat::columns(&stack, &crate::recipes::Recipes::builtin())
            .expect("columns")
    }

    #[test]
    fn upstream_distribution_names_are_known() {
        let triton = names().into_iter().find(|c| c.project == "triton");
        assert_eq!(
            triton.map(|c| (c.name, c.distributions)),
            Some((
                "Triton".to_string(),
                vec!["triton".to_string(), "pytorch-triton-rocm".to_string()]
            ))
        );
        // PyTorch's ROCm wheels of 2.1 came with pytorch-triton-rocm 2.1.0.
        let mut probed = probed();
        probed
            .distributions
            .push(("pytorch-triton-rocm".into(), "2.1.0".into()));
        let report = assemble(&probed, &names(), None);
        let triton = report
            .components
            .iter()
            .find(|c| c.name == "Triton")
            .expect("the Triton row");
        assert_eq!(
            (triton.distribution.as_str(), triton.installed.as_deref()),
            ("pytorch-triton-rocm", Some("2.1.0"))
        );
    }

    #[test]
    fn versions_targets_and_libraries_are_compared_with_the_lock() {
        let lock = lock(&["gfx942", "gfx1100"]);
        let report = assemble(&probed(), &names(), Some(("rockbuild.lock.json", &lock)));
        // torchaudio is in the lock but not installed: a difference; the rest match.
        assert_eq!(
            report.mismatches,
            ["torchaudio is not installed, the lock has 2.10.0a0+rocm7.10.0"]
        );
        assert_eq!(
            report.targets[0].targets,
            ["gfx942", "gfx1100"],
            "the lock's order"
        );
        assert_eq!(report.targets[0].matches, Some(true));
        let linked: Vec<&str> = report
            .libraries
            .iter()
            .filter(|l| l.linked)
            .map(|l| l.name.as_str())
            .collect();
        assert_eq!(linked, ["HIP runtime", "MIOpen", "RCCL"]);
        let built: Vec<(&str, bool)> = report
            .features
            .iter()
            .map(|f| (f.name.as_str(), f.built))
            .collect();
        assert_eq!(
            built,
            [
                ("ROCm (HIP) build", true),
                ("Flash attention (AOTriton)", false),
                ("MIOpen (torch.backends.cudnn)", true),
                ("Distributed with RCCL", true),
                ("hipBLASLt GEMMs", false),
            ]
        );
        assert!(matches!(report.outcome(), Err(Error::Mismatch { .. })));
    }

    #[test]
    fn without_a_lock_nothing_is_compared() {
        let report = assemble(&probed(), &names(), None);
        assert!(report.mismatches.is_empty());
        assert!(report.components.iter().all(|c| c.matches.is_none()));
        assert!(report.outcome().is_ok());
        assert!(
            report
                .to_markdown()
                .as_str()
                .contains("No lock to compare with (pass --lock).")
        );
    }
}
