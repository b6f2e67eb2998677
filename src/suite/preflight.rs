//! Before a shard installs anything: what the runner is, as `rockbuild detect` reads it (the
//! kernel's KFD topology — the amdgpu driver — and the PCI bus), so that a broken or mismatched
//! runner is told apart from a broken wheel, as the reference's "Driver / GPU sanity check"
//! step does (TheRock `build_tools/print_driver_gpu_info.py`, #6976). A runner that cannot run
//! the suite — no AMD GPU or no driver where the suite needs one, or GPUs none of which is of
//! the family under test — is unfit: the shard stops before installing, records why, and
//! `rockbuild test` exits with [`ExitStatus::RunnerUnfit`](crate::exit::ExitStatus), never
//! as a test failure.
//!
//! `rocm-sdk test` (the SDK's own self-check, the reference's "Run rocm-sdk sanity tests") runs
//! after the install: it tests installed wheels, so its failure is the shard's.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::detect::{Detection, Topology};

/// One GPU as detection saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunnerGpu {
    /// `1002:74a1`.
    pub pci_id: String,
    pub name: Option<String>,
    /// The ISA the runtime uses (`gfx942`), when known.
    pub target: Option<String>,
    pub family: Option<String>,
}

/// What the runner is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunnerFacts {
    /// Where sysfs was read (`/`, or `$ROCKBUILD_SYSFS_ROOT`).
    pub sysfs_root: String,
    /// `kfd`: the amdgpu driver lists the GPUs; `pci`: the bus only (no driver); `none`.
    pub topology: String,
    pub gpus: Vec<RunnerGpu>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl RunnerFacts {
    pub fn of(detection: &Detection) -> RunnerFacts {
        RunnerFacts {
            sysfs_root: detection.sysfs_root.display().to_string(),
            topology: match detection.topology {
                Topology::Kfd => "kfd",
                Topology::Pci => "pci",
                Topology::None => "none",
            }
            .to_string(),
            gpus: detection
                .gpus
                .iter()
                .map(|gpu| RunnerGpu {
                    pci_id: gpu.pci_id.clone(),
                    name: gpu.name.clone(),
                    target: gpu.target.clone(),
                    family: gpu.family.clone(),
                })
                .collect(),
            notes: detection.notes.clone(),
        }
    }

    /// Sysfs could not be read: no facts, and the reason.
    pub fn unreadable(sysfs_root: &str, reason: String) -> RunnerFacts {
        RunnerFacts {
            sysfs_root: sysfs_root.to_string(),
            topology: "none".into(),
            gpus: Vec::new(),
            notes: vec![format!("sysfs could not be read: {reason}")],
        }
    }

    /// One line: the driver and every GPU.
    pub fn to_line(&self) -> String {
        let mut out = match self.topology.as_str() {
            "kfd" => "amdgpu driver loaded (KFD topology)".to_string(),
            "pci" => "no amdgpu driver (KFD topology lists no GPU; GPUs from the PCI bus)".into(),
            _ => "no AMD GPU".into(),
        };
        for gpu in &self.gpus {
            let _ = write!(
                out,
                "; {} {}{}",
                gpu.pci_id,
                gpu.target.as_deref().unwrap_or("unknown target"),
                gpu.name
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            );
        }
        out
    }

    /// Why this runner cannot run the suite, if it cannot: a suite that needs a GPU on a runner
    /// without one, or without the driver; GPUs none of which is a target of the family.
    pub fn unfit(&self, needs_gpu: bool, family: Option<(&str, &[String])>) -> Option<String> {
        if needs_gpu && self.gpus.is_empty() {
            return Some(
                "the runner has no AMD GPU (neither the KFD topology nor the PCI bus lists one); run on a GPU runner of the family, or pass --allow-no-gpu".to_string(),
            );
        }
        if needs_gpu && self.topology != "kfd" {
            return Some(format!(
                "the runner's GPUs have no amdgpu driver ({})",
                self.to_line()
            ));
        }
        let (name, targets) = family?;
        if self.gpus.is_empty() {
            return None;
        }
        let matches = self.gpus.iter().any(|gpu| {
            gpu.target
                .as_deref()
                .map(|t| t.split(':').next().unwrap_or(t))
                .is_some_and(|t| targets.iter().any(|wanted| wanted == t))
        });
        (!matches).then(|| {
            format!(
                "none of the runner's GPUs is of family {name} ({}): {}",
                targets.join(", "),
                self.to_line()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(topology: &str, targets: &[&str]) -> RunnerFacts {
        RunnerFacts {
            sysfs_root: "/".into(),
            topology: topology.into(),
            gpus: targets
                .iter()
                .map(|t| RunnerGpu {
                    pci_id: "1002:74a1".into(),
                    name: None,
                    target: Some(t.to_string()),
                    family: None,
                })
                .collect(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn a_runner_is_unfit_without_a_gpu_without_the_driver_or_of_another_family() {
        let family = vec!["gfx942".to_string()];
        let mi300 = Some(("gfx94X-dcgpu", family.as_slice()));
        assert_eq!(facts("kfd", &["gfx942"]).unfit(true, mi300), None);
        assert_eq!(
            facts("kfd", &["gfx1100", "gfx942"]).unfit(true, mi300),
            None
        );
        let none = facts("none", &[]);
        assert!(
            none.unfit(true, mi300)
                .is_some_and(|why| why.starts_with("the runner has no AMD GPU"))
        );
        assert_eq!(none.unfit(false, mi300), None, "--allow-no-gpu");
        assert!(
            facts("pci", &["gfx942"])
                .unfit(true, mi300)
                .is_some_and(|why| why.contains("no amdgpu driver"))
        );
        let navi = facts("kfd", &["gfx1100"]);
        assert_eq!(
            navi.unfit(false, mi300).as_deref(),
            Some(
                "none of the runner's GPUs is of family gfx94X-dcgpu (gfx942): amdgpu driver loaded (KFD topology); 1002:74a1 gfx1100"
            )
        );
        assert_eq!(navi.unfit(true, None), None, "no family: any GPU");
    }
}
