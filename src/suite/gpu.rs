//! GPU selection before any test imports torch (F40): a device query runs torch in a child
//! process (so the test processes start with a fresh HIP runtime), then a pure function maps
//! the devices it saw to the ones a run makes visible through `HIP_VISIBLE_DEVICES`.
//!
//! Two stages, as TheRock's `pytorch_utils.configure_gpu_visibility`: the query mode decides the
//! candidates (`unique`: the first device of each target; `all`: every device), the policy
//! how many become visible (`single`: one, `all`: every candidate). A `HIP_VISIBLE_DEVICES`
//! the job already had is respected: torch numbers the devices it leaves visible from 0, and
//! the selection maps those logical numbers back to the preset's entries.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The query's Python: prints one JSON line. It never fails for lack of a GPU; an import
/// error of torch is a real failure (non-zero exit).
pub const QUERY_SCRIPT: &str = r#"
import json
import torch
result = {"torch": torch.__version__, "unavailable": None, "arch_list": [], "devices": []}
if getattr(torch.version, "hip", None) is None:
    result["unavailable"] = "this torch is not a ROCm build (torch.version.hip is None)"
elif not torch.cuda.is_available():
    result["unavailable"] = "torch.cuda.is_available() is False"
else:
    result["arch_list"] = list(torch.cuda.get_arch_list())
    for index in range(torch.cuda.device_count()):
        result["devices"].append(torch.cuda.get_device_properties(index).gcnArchName)
print(json.dumps(result))
"#;

/// What the device query saw.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceQuery {
    /// The installed torch's version, as it reports itself.
    #[serde(default)]
    pub torch: String,
    /// Why no GPU can be used, when none can.
    pub unavailable: Option<String>,
    /// The targets this torch build has code for (`torch.cuda.get_arch_list()`).
    pub arch_list: Vec<String>,
    /// `gcnArchName` of each device torch sees, in logical order (`gfx942:sramecc+:xnack-`).
    pub devices: Vec<String>,
}

impl DeviceQuery {
    /// Reads the query's output: the last line that is a JSON object.
    pub fn parse(stdout: &str) -> Option<Self> {
        stdout
            .lines()
            .rev()
            .map(str::trim)
            .find(|line| line.starts_with('{'))
            .and_then(|line| serde_json::from_str(line).ok())
    }
}

/// Stage 1: which devices become candidates (`--device-query`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum DeviceQueryMode {
    /// The first device of each target.
    Unique,
    /// Every device.
    All,
}

impl DeviceQueryMode {
    pub fn name(self) -> &'static str {
        match self {
            DeviceQueryMode::Unique => "unique",
            DeviceQueryMode::All => "all",
        }
    }
}

/// Stage 2: how many candidates a test process sees (`--gpu-policy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum GpuPolicy {
    /// One device per test process.
    Single,
    /// Every candidate at once (multi-GPU tests).
    All,
}

impl GpuPolicy {
    pub fn name(self) -> &'static str {
        match self {
            GpuPolicy::Single => "single",
            GpuPolicy::All => "all",
        }
    }
}

/// One device of a selection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Device {
    /// The gfx target, without feature flags (`gfx942`).
    pub arch: String,
    /// Torch's number for it (within a preset `HIP_VISIBLE_DEVICES`).
    pub logical: usize,
    /// What `HIP_VISIBLE_DEVICES` must name to show it: the system index, or the preset's entry.
    pub system: String,
}

/// The devices a run makes visible.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GpuSelection {
    pub devices: Vec<Device>,
    /// Every candidate of stage 1 (the GPU smoke suite runs once per candidate).
    pub candidates: Vec<Device>,
    /// The value for the test processes' `HIP_VISIBLE_DEVICES`.
    pub hip_visible_devices: String,
    /// The targets made visible, sorted, each once: what the skip lists match.
    pub archs: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuError {
    #[error("no GPU to test on: {reason}")]
    Unavailable { reason: String },
    #[error(
        "no visible GPU is supported by this torch build: devices {}, build targets {}",
        list(visible),
        list(supported)
    )]
    NoneSupported {
        visible: Vec<String>,
        supported: Vec<String>,
    },
    #[error(
        "no supported GPU matches --amdgpu-family {family}: devices {}",
        list(visible)
    )]
    NoneMatches {
        family: String,
        visible: Vec<String>,
    },
    #[error(
        "HIP_VISIBLE_DEVICES={preset} names {} devices but torch sees {devices}; the preset cannot be mapped to system devices",
        preset.split(',').count()
    )]
    PresetMismatch { preset: String, devices: usize },
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

/// The part of a gcnArchName or arch-list entry before its feature flags.
fn bare(arch: &str) -> &str {
    arch.split(':').next().unwrap_or(arch).trim()
}

/// Whether `arch` passes the `--amdgpu-family` filter, by TheRock's rule: the part before the
/// first `-` ending in `X` is a wildcard (`gfx94X-dcgpu`: every target starting with gfx94),
/// otherwise it names one target (`gfx950-dcgpu`, `gfx1151`). TheRock compares substrings;
/// this compares prefixes and whole names, so `gfx1` does not match gfx1100.
pub fn family_matches(family: &str, arch: &str) -> bool {
    let part = family.split('-').next().unwrap_or(family).trim();
    match part.strip_suffix(['X', 'x']) {
        Some(prefix) if !prefix.is_empty() => arch.starts_with(prefix),
        _ => arch == part,
    }
}

/// Decides the devices of a run from what the query saw.
///
/// * `preset`: the job's `HIP_VISIBLE_DEVICES`, if it had one;
/// * `offset`: which candidate `single` picks (the GPU smoke suite walks them all).
pub fn select(
    query: &DeviceQuery,
    preset: Option<&str>,
    family: Option<&str>,
    mode: DeviceQueryMode,
    policy: GpuPolicy,
    offset: usize,
) -> Result<GpuSelection, GpuError> {
    if let Some(reason) = &query.unavailable {
        return Err(GpuError::Unavailable {
            reason: reason.clone(),
        });
    }
    let visible: Vec<&str> = query.devices.iter().map(|d| bare(d)).collect();
    let supported: Vec<&str> = query.arch_list.iter().map(|a| bare(a)).collect();
    let system_ids: Vec<String> = match preset.map(str::trim).filter(|p| !p.is_empty()) {
        Some(preset) => {
            let entries: Vec<String> = preset.split(',').map(|e| e.trim().to_string()).collect();
            // HIP ignores entries after an invalid one, so a preset may name more devices than
            // torch sees; the visible ones are its first entries, in order.
            if entries.len() < visible.len() || entries.iter().any(String::is_empty) {
                return Err(GpuError::PresetMismatch {
                    preset: preset.to_string(),
                    devices: visible.len(),
                });
            }
            entries
        }
        None => (0..visible.len()).map(|i| i.to_string()).collect(),
    };
    let mut matched: Vec<Device> = visible
        .iter()
        .enumerate()
        .filter(|(_, arch)| supported.contains(arch))
        .map(|(logical, arch)| Device {
            arch: arch.to_string(),
            logical,
            system: system_ids[logical].clone(),
        })
        .collect();
    if matched.is_empty() {
        return Err(GpuError::NoneSupported {
            visible: visible.iter().map(ToString::to_string).collect(),
            supported: supported.iter().map(ToString::to_string).collect(),
        });
    }
    if let Some(family) = family.map(str::trim).filter(|f| !f.is_empty()) {
        matched.retain(|device| family_matches(family, &device.arch));
        if matched.is_empty() {
            return Err(GpuError::NoneMatches {
                family: family.to_string(),
                visible: visible.iter().map(ToString::to_string).collect(),
            });
        }
    }
    let candidates: Vec<Device> = match mode {
        DeviceQueryMode::All => matched,
        DeviceQueryMode::Unique => {
            let mut firsts: Vec<Device> = Vec::new();
            for device in matched {
                if !firsts.iter().any(|d| d.arch == device.arch) {
                    firsts.push(device);
                }
            }
            firsts
        }
    };
    let devices: Vec<Device> = match policy {
        GpuPolicy::All => candidates.clone(),
        GpuPolicy::Single => vec![candidates[offset.min(candidates.len() - 1)].clone()],
    };
    let mut archs: Vec<String> = devices.iter().map(|d| d.arch.clone()).collect();
    archs.sort();
    archs.dedup();
    Ok(GpuSelection {
        hip_visible_devices: devices
            .iter()
            .map(|d| d.system.as_str())
            .collect::<Vec<_>>()
            .join(","),
        devices,
        candidates,
        archs,
    })
}

impl fmt::Display for GpuSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: Vec<String> = self
            .devices
            .iter()
            .map(|d| format!("{} at {}", d.arch, d.system))
            .collect();
        write!(
            f,
            "HIP_VISIBLE_DEVICES={} ({}; {} candidate{})",
            self.hip_visible_devices,
            shown.join(", "),
            self.candidates.len(),
            crate::ui::plural(self.candidates.len())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(arch_list: &[&str], devices: &[&str]) -> DeviceQuery {
        DeviceQuery {
            torch: "2.12.0+rocm7.10.0".into(),
            unavailable: None,
            arch_list: arch_list.iter().map(ToString::to_string).collect(),
            devices: devices.iter().map(ToString::to_string).collect(),
        }
    }

    /// A node with two MI300s, a Navi31 and an MI200 (not in this build), as gcnArchName
    /// reports them.
    fn node() -> DeviceQuery {
        query(
            &["gfx942", "gfx1100", "gfx950"],
            &[
                "gfx942:sramecc+:xnack-",
                "gfx942:sramecc+:xnack-",
                "gfx1100",
                "gfx90a:sramecc+:xnack-",
            ],
        )
    }

    fn pick(
        query: &DeviceQuery,
        preset: Option<&str>,
        family: Option<&str>,
        mode: DeviceQueryMode,
        policy: GpuPolicy,
    ) -> Result<(String, Vec<String>, usize), GpuError> {
        select(query, preset, family, mode, policy, 0)
            .map(|s| (s.hip_visible_devices, s.archs, s.candidates.len()))
    }

    #[test]
    fn policies_and_query_modes() {
        use DeviceQueryMode::{All as Every, Unique};
        use GpuPolicy::{All, Single};
        let q = node();
        let cases: &[(DeviceQueryMode, GpuPolicy, &str, &[&str], usize)] = &[
            (Unique, Single, "0", &["gfx942"], 2),
            (Unique, All, "0,2", &["gfx1100", "gfx942"], 2),
            (Every, Single, "0", &["gfx942"], 3),
            (Every, All, "0,1,2", &["gfx1100", "gfx942"], 3),
        ];
        for (mode, policy, visible, archs, candidates) in cases {
            let got = pick(&q, None, None, *mode, *policy).expect("select");
            assert_eq!(
                got,
                (
                    visible.to_string(),
                    archs.iter().map(ToString::to_string).collect(),
                    *candidates
                ),
                "{mode:?} {policy:?}"
            );
        }
    }

    #[test]
    fn a_preset_hip_visible_devices_maps_back_to_system_indices() {
        // The job was given devices 4, 5, 6 and 7; torch numbers them 0..3.
        let got = pick(
            &node(),
            Some("4,5,6,7"),
            None,
            DeviceQueryMode::Unique,
            GpuPolicy::All,
        )
        .expect("select");
        assert_eq!(got.0, "4,6");
        // UUIDs stay what they are.
        let q = query(&["gfx942"], &["gfx942", "gfx942"]);
        let got = pick(
            &q,
            Some("GPU-aa, GPU-bb"),
            None,
            DeviceQueryMode::All,
            GpuPolicy::All,
        )
        .expect("select");
        assert_eq!(got.0, "GPU-aa,GPU-bb");
        // A single-device preset cannot show two devices.
        assert_eq!(
            pick(&q, Some("3"), None, DeviceQueryMode::All, GpuPolicy::All),
            Err(GpuError::PresetMismatch {
                preset: "3".into(),
                devices: 2
            })
        );
    }

    #[test]
    fn family_filter_follows_the_wildcard_rule_by_prefix() {
        let q = node();
        let family = |name: &str| {
            pick(&q, None, Some(name), DeviceQueryMode::All, GpuPolicy::All)
                .map(|(visible, _, _)| visible)
        };
        assert_eq!(family("gfx94X-dcgpu").as_deref(), Ok("0,1"));
        assert_eq!(family("gfx110X-all").as_deref(), Ok("2"));
        assert_eq!(family("gfx1100").as_deref(), Ok("2"));
        // gfx90a is visible but not in the build.
        assert_eq!(
            family("gfx90a"),
            Err(GpuError::NoneMatches {
                family: "gfx90a".into(),
                visible: vec![
                    "gfx942".into(),
                    "gfx942".into(),
                    "gfx1100".into(),
                    "gfx90a".into()
                ]
            })
        );
        assert!(family_matches("gfx94X-dcgpu", "gfx942"));
        assert!(!family_matches("gfx9X-dcgpu", "gfx1100"));
        assert!(
            !family_matches("gfx110", "gfx1100"),
            "a name without X is a whole target"
        );
        assert!(family_matches("gfx950-dcgpu", "gfx950"));
    }

    #[test]
    fn nothing_to_select() {
        let no_gpu = DeviceQuery {
            unavailable: Some("torch.cuda.is_available() is False".into()),
            ..DeviceQuery::default()
        };
        let error = pick(
            &no_gpu,
            None,
            None,
            DeviceQueryMode::Unique,
            GpuPolicy::Single,
        )
        .expect_err("no gpu");
        assert_eq!(
            error.to_string(),
            "no GPU to test on: torch.cuda.is_available() is False"
        );
        let unsupported = query(&["gfx942"], &["gfx1100"]);
        let error = pick(
            &unsupported,
            None,
            None,
            DeviceQueryMode::Unique,
            GpuPolicy::Single,
        )
        .expect_err("unsupported");
        assert_eq!(
            error.to_string(),
            "no visible GPU is supported by this torch build: devices gfx1100, build targets gfx942"
        );
    }

    #[test]
    fn single_walks_the_candidates_by_offset() {
        let q = node();
        let at = |offset| {
            select(
                &q,
                None,
                None,
                DeviceQueryMode::Unique,
                GpuPolicy::Single,
                offset,
            )
            .expect("select")
            .to_string()
        };
        assert_eq!(at(0), "HIP_VISIBLE_DEVICES=0 (gfx942 at 0; 2 candidates)");
        assert_eq!(at(1), "HIP_VISIBLE_DEVICES=2 (gfx1100 at 2; 2 candidates)");
    }

    #[test]
    fn query_output_is_the_last_json_line() {
        let out = "Warning: something\n{\"torch\": \"2.9.0\", \"unavailable\": null, \"arch_list\": [\"gfx942\"], \"devices\": [\"gfx942:sramecc+:xnack-\"]}\n";
        let parsed = DeviceQuery::parse(out).expect("parse");
        assert_eq!(parsed.devices, ["gfx942:sramecc+:xnack-"]);
        assert_eq!(DeviceQuery::parse("no json"), None);
    }
}
