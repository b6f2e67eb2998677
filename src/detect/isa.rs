//! gfx target names from the numbers the kernel and the runtime use.
//!
//! KFD writes a GPU's ISA into its topology `properties` as `gfx_target_version`, a decimal
//! number `major * 10000 + minor * 100 + stepping` (drivers/gpu/drm/amd/amdkfd/kfd_device.c:
//! 90010 for Aldebaran, 110501 for Strix Halo). `HSA_OVERRIDE_GFX_VERSION` spells the same
//! three numbers as `major.minor.stepping` (`9.0.10`). LLVM names the ISA `gfx` + the major in
//! decimal + minor and stepping as one hex digit each: 90010 is gfx90a, 90012 gfx90c, 100300
//! gfx1030 — printing the stepping in decimal is the bug that turned gfx90a into `gfx9010`
//! (ROCm/rocm-cli#152).

use std::fmt;

/// An ISA version as KFD reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IsaVersion {
    pub major: u32,
    pub minor: u32,
    pub stepping: u32,
}

impl IsaVersion {
    /// Decodes KFD's `gfx_target_version`. `None` for 0 (what CPU nodes report) and for numbers
    /// whose minor or stepping do not fit the one hex digit LLVM names have.
    pub fn from_kfd(value: u64) -> Option<IsaVersion> {
        let value = u32::try_from(value).ok()?;
        IsaVersion::new(value / 10_000, (value / 100) % 100, value % 100)
    }

    /// Parses `HSA_OVERRIDE_GFX_VERSION` (`11.0.0`, `9.0.10`): three decimal numbers.
    pub fn from_override(text: &str) -> Option<IsaVersion> {
        let mut parts = text.trim().split('.');
        let mut next = || parts.next()?.parse::<u32>().ok();
        let (major, minor, stepping) = (next()?, next()?, next()?);
        if parts.next().is_some() {
            return None;
        }
        IsaVersion::new(major, minor, stepping)
    }

    fn new(major: u32, minor: u32, stepping: u32) -> Option<IsaVersion> {
        ((1..100).contains(&major) && minor < 16 && stepping < 16).then_some(IsaVersion {
            major,
            minor,
            stepping,
        })
    }

    /// The LLVM processor name: `gfx90a`, `gfx1151`.
    pub fn target_name(self) -> String {
        format!("gfx{}{:x}{:x}", self.major, self.minor, self.stepping)
    }
}

impl fmt::Display for IsaVersion {
    /// The `HSA_OVERRIDE_GFX_VERSION` spelling.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.stepping)
    }
}

/// The ISA version of a target name, the inverse of [`IsaVersion::target_name`].
#[cfg(test)]
fn version_of(target: &str) -> Option<IsaVersion> {
    let digits = target.strip_prefix("gfx")?;
    if !(3..=4).contains(&digits.len()) || !digits.is_ascii() {
        return None;
    }
    let (major, rest) = digits.split_at(digits.len() - 2);
    let hex = |c: &str| u32::from_str_radix(c, 16).ok();
    IsaVersion::new(major.parse().ok()?, hex(&rest[..1])?, hex(&rest[1..])?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::load_families;

    /// Every target of configs/families.yaml, as KFD numbers it (kfd_device.c) and as
    /// `HSA_OVERRIDE_GFX_VERSION` spells it, decodes to its own name and back.
    #[test]
    fn every_family_target_round_trips_through_kfd_and_override_numbers() {
        let table = load_families(None).expect("families");
        let mut seen = 0;
        for family in table.families() {
            for target in &family.targets {
                let version = version_of(target.as_str())
                    .unwrap_or_else(|| panic!("{target} has no ISA version"));
                let kfd =
                    u64::from(version.major * 10_000 + version.minor * 100 + version.stepping);
                assert_eq!(
                    IsaVersion::from_kfd(kfd)
                        .map(IsaVersion::target_name)
                        .as_deref(),
                    Some(target.as_str()),
                    "{target} from gfx_target_version {kfd}"
                );
                assert_eq!(
                    IsaVersion::from_override(&version.to_string())
                        .map(IsaVersion::target_name)
                        .as_deref(),
                    Some(target.as_str()),
                    "{target} from HSA_OVERRIDE_GFX_VERSION={version}"
                );
                seen += 1;
            }
        }
        assert_eq!(
            seen, 28,
            "the table's target count changed; extend the table below"
        );
    }

    /// The numbers kfd_device.c writes, including the ones whose name has hex digits.
    #[test]
    fn kfd_numbers_decode_as_llvm_names_them() {
        for (kfd, name) in [
            (90000, "gfx900"),
            (90006, "gfx906"),
            (90008, "gfx908"),
            (90010, "gfx90a"),
            (90012, "gfx90c"),
            (90400, "gfx940"),
            (90401, "gfx941"),
            (90402, "gfx942"),
            (90500, "gfx950"),
            (100100, "gfx1010"),
            (100101, "gfx1011"),
            (100102, "gfx1012"),
            (100300, "gfx1030"),
            (100306, "gfx1036"),
            (110000, "gfx1100"),
            (110001, "gfx1101"),
            (110003, "gfx1103"),
            (110500, "gfx1150"),
            (110501, "gfx1151"),
            (110502, "gfx1152"),
            (110503, "gfx1153"),
            (120001, "gfx1201"),
            (120500, "gfx1250"),
        ] {
            assert_eq!(
                IsaVersion::from_kfd(kfd)
                    .map(IsaVersion::target_name)
                    .as_deref(),
                Some(name),
                "{kfd}"
            );
        }
    }

    #[test]
    fn numbers_that_name_no_isa_are_refused() {
        // CPU nodes report 0; a stepping or minor above 15 has no one-digit hex name.
        for kfd in [0, 90016, 91600, 1_000_000, u64::MAX] {
            assert_eq!(IsaVersion::from_kfd(kfd), None, "{kfd}");
        }
        for text in [
            "", "11", "11.0", "11.0.0.0", "11.0.x", "9.0.16", "0.0.0", "-1.0.0", "gfx1100",
        ] {
            assert_eq!(IsaVersion::from_override(text), None, "{text:?}");
        }
        assert_eq!(
            IsaVersion::from_override(" 10.3.0 ")
                .map(IsaVersion::target_name)
                .as_deref(),
            Some("gfx1030")
        );
        for name in ["gfx", "gfx94X-dcgpu", "gfx90", "sm_90", "gfx10300"] {
            assert_eq!(version_of(name), None, "{name}");
        }
    }
}
