//! The platform tag of a Linux wheel against what its libraries need from glibc (PEP 600).
//!
//! A `manylinux_2_X_<arch>` wheel promises to run wherever glibc is at least 2.X, so no ELF
//! file in it may need a `GLIBC_2.Y` symbol version with Y > X (the version needs of
//! `.gnu.version_r`). A `linux_<arch>` wheel promises nothing beyond the machine that built it:
//! PyPI refuses it and pip on another distribution may install it and fail at import, so
//! release staging refuses it unless told otherwise (`--allow-linux-tag`, for local builds).
//!
//! How a wheel gets its manylinux tag: it is built in the manylinux_2_28 image (setuptools
//! names it `linux_x86_64`), then `rockbuild retag --platform manylinux_2_28_x86_64` checks
//! every library against glibc 2.28 and rewrites the tag (file name, WHEEL `Tag:` lines,
//! RECORD). Unlike auditwheel's `repair`, nothing is bundled: the ROCm libraries come from the
//! SDK wheels the set pins, and system libraries are the distribution's.

use crate::binary::elf::Glibc;
use crate::wheel::problem::Problem;

/// One platform tag of a wheel file name, as far as Linux compatibility goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Platform {
    /// `linux_x86_64`: built for one machine.
    Linux { arch: String },
    /// `manylinux_2_28_x86_64`, or a legacy alias (`manylinux2014_x86_64` is glibc 2.17).
    Manylinux { glibc: Glibc, arch: String },
    /// `any`, `musllinux_*`, other operating systems: not judged here.
    Other,
}

impl Platform {
    pub fn parse(tag: &str) -> Platform {
        if let Some(arch) = tag.strip_prefix("linux_") {
            return Platform::Linux {
                arch: arch.to_string(),
            };
        }
        for (alias, minor) in [
            ("manylinux1_", 5),
            ("manylinux2010_", 12),
            ("manylinux2014_", 17),
        ] {
            if let Some(arch) = tag.strip_prefix(alias) {
                return Platform::Manylinux {
                    glibc: Glibc { major: 2, minor },
                    arch: arch.to_string(),
                };
            }
        }
        let parsed = tag.strip_prefix("manylinux_").and_then(|rest| {
            let mut parts = rest.splitn(3, '_');
            let major = parts.next()?.parse().ok()?;
            let minor = parts.next()?.parse().ok()?;
            let arch = parts.next()?.to_string();
            Some(Platform::Manylinux {
                glibc: Glibc { major, minor },
                arch,
            })
        });
        parsed.unwrap_or(Platform::Other)
    }

    /// The tag for `glibc` and `arch` (PEP 600 spelling).
    pub fn manylinux_tag(glibc: Glibc, arch: &str) -> String {
        format!("manylinux_{}_{}_{arch}", glibc.major, glibc.minor)
    }
}

/// The highest glibc any ELF file of a wheel needs, with the first file that needs it.
pub fn highest_need<'a>(
    needs: impl IntoIterator<Item = (&'a str, Glibc)>,
) -> Option<(&'a str, Glibc)> {
    needs.into_iter().fold(
        None,
        |best: Option<(&str, Glibc)>, (entry, glibc)| match best {
            Some((_, top)) if top >= glibc => best,
            _ => Some((entry, glibc)),
        },
    )
}

/// The platform problems of a wheel whose file name carries the dotted platform tag set
/// `platforms`, given what each of its ELF files needs.
pub fn check(platforms: &str, needs: Option<(&str, Glibc)>, allow_linux_tag: bool) -> Vec<Problem> {
    let mut problems = Vec::new();
    for tag in platforms.split('.') {
        match Platform::parse(tag) {
            Platform::Linux { .. } if !allow_linux_tag => {
                problems.push(Problem::LinuxTag {
                    tag: tag.to_string(),
                    needs: needs.map(|(_, glibc)| glibc.to_string()),
                });
            }
            Platform::Manylinux { glibc, .. } => {
                if let Some((entry, needed)) = needs
                    && needed > glibc
                {
                    problems.push(Problem::GlibcTooNew {
                        entry: entry.to_string(),
                        needs: needed.to_string(),
                        tag: tag.to_string(),
                        allows: glibc.to_string(),
                    });
                }
            }
            Platform::Linux { .. } | Platform::Other => {}
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glibc(text: &str) -> Glibc {
        text.parse().expect("version")
    }

    #[test]
    fn platform_tags() {
        let cases = [
            (
                "linux_x86_64",
                Platform::Linux {
                    arch: "x86_64".into(),
                },
            ),
            (
                "manylinux_2_28_x86_64",
                Platform::Manylinux {
                    glibc: glibc("2.28"),
                    arch: "x86_64".into(),
                },
            ),
            (
                "manylinux2014_aarch64",
                Platform::Manylinux {
                    glibc: glibc("2.17"),
                    arch: "aarch64".into(),
                },
            ),
            (
                "manylinux1_x86_64",
                Platform::Manylinux {
                    glibc: glibc("2.5"),
                    arch: "x86_64".into(),
                },
            ),
            ("any", Platform::Other),
            ("musllinux_1_2_x86_64", Platform::Other),
            ("manylinux_x_28_x86_64", Platform::Other),
        ];
        for (tag, want) in cases {
            assert_eq!(Platform::parse(tag), want, "{tag}");
        }
        assert_eq!(
            Platform::manylinux_tag(glibc("2.28"), "x86_64"),
            "manylinux_2_28_x86_64"
        );
        assert!(glibc("2.2.5") < glibc("2.17") && glibc("2.17") < glibc("2.28"));
    }

    /// One row per case: the platform tags, the highest need, the policy, the findings.
    #[test]
    fn tag_against_needs() {
        let cases: [(&str, Option<&str>, bool, &[&str]); 7] = [
            ("manylinux_2_28_x86_64", Some("2.28"), false, &[]),
            (
                "manylinux_2_28_x86_64",
                Some("2.34"),
                false,
                &[
                    "pkg/_C.so needs GLIBC_2.34, but the platform tag manylinux_2_28_x86_64 promises glibc 2.28 or newer is enough: build in the manylinux_2_28 image (dockerfiles/build.Dockerfile), or tag it manylinux_2_34",
                ],
            ),
            // A compressed tag set is judged tag by tag.
            (
                "manylinux_2_17_x86_64.manylinux2014_x86_64",
                Some("2.17"),
                false,
                &[],
            ),
            ("linux_x86_64", None, true, &[]),
            (
                "linux_x86_64",
                Some("2.36"),
                false,
                &[
                    "platform tag linux_x86_64 promises nothing beyond the machine that built it (its libraries need glibc 2.36): build in the manylinux image and run `rockbuild retag --platform manylinux_2_28_x86_64`, or pass --allow-linux-tag for a local build",
                ],
            ),
            (
                "linux_x86_64",
                None,
                false,
                &[
                    "platform tag linux_x86_64 promises nothing beyond the machine that built it: build in the manylinux image and run `rockbuild retag --platform manylinux_2_28_x86_64`, or pass --allow-linux-tag for a local build",
                ],
            ),
            ("any", Some("2.99"), false, &[]),
        ];
        for (platforms, needs, allow, want) in cases {
            let needs = needs.map(|n| ("pkg/_C.so", glibc(n)));
            let got: Vec<String> = check(platforms, needs, allow)
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(got, want, "{platforms} {needs:?} {allow}");
        }
    }

    #[test]
    fn highest_need_names_the_first_library_at_the_top() {
        let needs = [
            ("a.so", glibc("2.17")),
            ("b.so", glibc("2.28")),
            ("c.so", glibc("2.28")),
            ("d.so", glibc("2.2")),
        ];
        assert_eq!(highest_need(needs), Some(("b.so", glibc("2.28"))));
        assert_eq!(highest_need([]), None);
    }
}
