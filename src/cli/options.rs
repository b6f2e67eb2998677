//! The table of options that read an environment variable: every `ROCKBUILD_…` variable a
//! flag reads is named here once, with the flag and the verbs it belongs to. The clap
//! definition takes its variables from this table ([`attach`]); docs/cli.md lists it
//! (src/docgen.rs), so the two cannot drift. The flags themselves (name, help, default) stay
//! with the verb that declares them.
//!
//! The rule is `ROCKBUILD_<FLAG>`; where two verbs give one flag name different meanings the
//! variable names the verb (`--to` of stage and promote), and where a verb's flag must not be
//! set by a variable that others read (`test --venv`, a throwaway venv) the entry leaves it out.

use crate::env_vars;

/// The verbs (`build`, `ci generate`) whose flag reads the variable.
#[derive(Clone, Copy, Debug)]
pub enum Verbs {
    /// Every verb that has the flag, and the global options.
    All,
    /// Only these verbs.
    Only(&'static [&'static str]),
    /// Every verb that has the flag except these.
    AllBut(&'static [&'static str]),
}

impl Verbs {
    fn covers(self, verb: &str) -> bool {
        match self {
            Verbs::All => true,
            Verbs::Only(verbs) => verbs.contains(&verb),
            Verbs::AllBut(verbs) => !verbs.contains(&verb),
        }
    }
}

/// One variable: the long flag it sets and where.
#[derive(Clone, Copy, Debug)]
pub struct EnvOption {
    pub var: &'static str,
    pub flag: &'static str,
    pub verbs: Verbs,
}

const fn all(var: &'static str, flag: &'static str) -> EnvOption {
    EnvOption {
        var,
        flag,
        verbs: Verbs::All,
    }
}

const fn only(var: &'static str, flag: &'static str, verbs: &'static [&'static str]) -> EnvOption {
    EnvOption {
        var,
        flag,
        verbs: Verbs::Only(verbs),
    }
}

const fn all_but(
    var: &'static str,
    flag: &'static str,
    verbs: &'static [&'static str],
) -> EnvOption {
    EnvOption {
        var,
        flag,
        verbs: Verbs::AllBut(verbs),
    }
}

/// The table, by variable name.
pub const ENV_OPTIONS: &[EnvOption] = &[
    all("ROCKBUILD_ALLOW_LINUX_TAG", "allow-linux-tag"),
    all("ROCKBUILD_ALLOW_NO_GPU", "allow-no-gpu"),
    all("ROCKBUILD_AMDGPU_FAMILY", "amdgpu-family"),
    all("ROCKBUILD_BREAK_LEASE", "break-lease"),
    // `--jobs` of build counts projects, of checkout and lock submodule fetches.
    only("ROCKBUILD_BUILD_JOBS", "jobs", &["build", "plan"]),
    all(env_vars::ROCKBUILD_CACHE_DIR, "cache-dir"),
    all("ROCKBUILD_COLOR", "color"),
    all("ROCKBUILD_CONFIG", "config"),
    all("ROCKBUILD_DEPTH", "depth"),
    all("ROCKBUILD_EXTRA_INDEX_URL", "extra-index-url"),
    all("ROCKBUILD_FAMILIES", "families"),
    all("ROCKBUILD_FETCH_ATTEMPTS", "fetch-attempts"),
    all("ROCKBUILD_FETCH_TIMEOUT", "fetch-timeout"),
    // The SDK's find-links; the test venv's has its own variable.
    all_but("ROCKBUILD_FIND_LINKS", "find-links", &["test"]),
    all("ROCKBUILD_FROM_LOCK", "from-lock"),
    all("ROCKBUILD_FULL_TESTS", "full-tests"),
    all("ROCKBUILD_GITREPO_ORIGIN", "gitrepo-origin"),
    all("ROCKBUILD_INDEX_RETRIES", "index-retries"),
    all("ROCKBUILD_INDEX_TIMEOUT", "index-timeout"),
    all("ROCKBUILD_INDEX_URL", "index-url"),
    all("ROCKBUILD_INPUT", "input"),
    all("ROCKBUILD_INSTALLER", "installer"),
    all("ROCKBUILD_INSTALL_ROCM", "install-rocm"),
    all_but("ROCKBUILD_JOBS", "jobs", &["build", "plan"]),
    all("ROCKBUILD_LEASE_TTL", "lease-ttl"),
    all("ROCKBUILD_LEASE_WAIT", "lease-wait"),
    all("ROCKBUILD_LOCK", "lock"),
    all("ROCKBUILD_LOG_FORMAT", "log-format"),
    all("ROCKBUILD_MANIFEST_URL", "manifest-url"),
    all("ROCKBUILD_MAX_TARGETS", "max-targets"),
    all("ROCKBUILD_MULTIPART_THRESHOLD", "multipart-threshold"),
    all("ROCKBUILD_MULTI_ARCH", "multi-arch"),
    all("ROCKBUILD_NETWORK_TIMEOUT", "network-timeout"),
    // fat-wheel writes next to its input and ci generate into workflows/ unless told.
    all_but(
        "ROCKBUILD_OUTPUT_DIR",
        "output-dir",
        &["ci generate", "fat-wheel"],
    ),
    all("ROCKBUILD_PIP_CACHE_DIR", "pip-cache-dir"),
    // test's `--platform` picks skip lists; retag's is the manylinux tag to give.
    all_but("ROCKBUILD_PLATFORM", "platform", &["test"]),
    all("ROCKBUILD_PRESETS", "presets"),
    only("ROCKBUILD_PROMOTE_FROM", "from", &["promote"]),
    only("ROCKBUILD_PROMOTE_TO", "to", &["promote"]),
    all("ROCKBUILD_PYTHON", "python"),
    all("ROCKBUILD_PYTHON_VERSION", "python-version"),
    all("ROCKBUILD_PYTORCH_BUILD_NUMBER", "pytorch-build-number"),
    // build's `--pytorch-dir` is the reference's per-project checkout flag.
    only("ROCKBUILD_PYTORCH_DIR", "pytorch-dir", &["test"]),
    all("ROCKBUILD_PYTORCH_REF", "pytorch-ref"),
    all("ROCKBUILD_PYTORCH_ROCM_ARCH", "pytorch-rocm-arch"),
    all("ROCKBUILD_QUIET", "quiet"),
    all("ROCKBUILD_RELEASE", "release"),
    all("ROCKBUILD_RELEASES", "releases"),
    all("ROCKBUILD_RELEASE_TYPE", "release-type"),
    // checkout's report is its own timings, not a verdict a later step reads.
    all_but("ROCKBUILD_REPORT", "report", &["checkout"]),
    all("ROCKBUILD_REPO_HASHTAG", "repo-hashtag"),
    all("ROCKBUILD_REQUIRE_RELATED_COMMIT", "require-related-commit"),
    all("ROCKBUILD_ROCM_EXTRAS", "rocm-extras"),
    all("ROCKBUILD_ROCM_SDK_VERSION", "rocm-sdk-version"),
    all("ROCKBUILD_ROOT_CHECKOUT_DIR", "root-checkout-dir"),
    all("ROCKBUILD_RUN_TIMEOUT", "run-timeout"),
    all("ROCKBUILD_S3_ATTEMPTS", "s3-attempts"),
    all("ROCKBUILD_S3_CHECKSUMS", "s3-checksums"),
    all("ROCKBUILD_S3_ENDPOINT", "s3-endpoint"),
    all("ROCKBUILD_S3_PATH_STYLE", "s3-path-style"),
    all("ROCKBUILD_S3_REGION", "s3-region"),
    all("ROCKBUILD_S3_TIMEOUT", "s3-timeout"),
    all("ROCKBUILD_SKIP_LISTS", "skip-lists"),
    // smoke's `--targets` are the runner's, verify's and stage's those the set was built for.
    only("ROCKBUILD_SMOKE_TARGETS", "targets", &["smoke"]),
    only("ROCKBUILD_STAGE_TO", "to", &["stage"]),
    all("ROCKBUILD_STALL_TIMEOUT", "stall-timeout"),
    all("ROCKBUILD_STRICT", "strict"),
    all(env_vars::ROCKBUILD_SYSFS_ROOT, "sysfs-root"),
    all_but("ROCKBUILD_TARGETS", "targets", &["smoke"]),
    all("ROCKBUILD_TEST_CONFIG", "test-config"),
    only("ROCKBUILD_TEST_FIND_LINKS", "find-links", &["test"]),
    all("ROCKBUILD_TEST_REQUIREMENTS", "test-requirements"),
    all("ROCKBUILD_TIMEOUT", "timeout"),
    all("ROCKBUILD_TRANSFER_ATTEMPTS", "transfer-attempts"),
    all("ROCKBUILD_TRANSFER_JOBS", "transfer-jobs"),
    all("ROCKBUILD_USE_SCCACHE", "use-sccache"),
    // smoke's and test's venvs are throwaway directories, emptied first.
    all_but("ROCKBUILD_VENV", "venv", &["smoke", "test"]),
    all("ROCKBUILD_VERSION_SUFFIX", "version-suffix"),
    all("ROCKBUILD_WAIVER", "waiver"),
];

impl EnvOption {
    /// Whether this variable sets `--flag` of `verb` (`""` for the global options).
    pub fn sets(&self, verb: &str, flag: &str) -> bool {
        self.flag == flag && (verb.is_empty() || self.verbs.covers(verb))
    }
}

/// Other spellings of a flag, accepted wherever it is: the family flag is `--amdgpu-family`
/// in every verb (as TheRock's scripts spell it); `--family` and `--amdgpu-families` (the
/// matrix's old name, TheRock's workflow input) are aliases.
const ALIASES: &[(&str, &[&str])] = &[("amdgpu-family", &["family", "amdgpu-families"])];

/// Gives an argument the other spellings of its flag.
pub fn with_aliases(arg: clap::Arg) -> clap::Arg {
    let aliases = ALIASES
        .iter()
        .find(|(flag, _)| arg.get_long() == Some(*flag))
        .map(|(_, aliases)| *aliases);
    match aliases {
        Some(aliases) => arg.visible_aliases(aliases.iter().copied()),
        None => arg,
    }
}

/// The variable of `--flag` of `verb`, if the table gives it one.
pub fn var_of(verb: &str, flag: &str) -> Option<&'static str> {
    ENV_OPTIONS
        .iter()
        .find(|option| option.sets(verb, flag))
        .map(|option| option.var)
}

/// Gives an argument of `verb` its variable from the table.
pub fn attach(verb: &str, arg: clap::Arg) -> clap::Arg {
    match arg.get_long().and_then(|long| var_of(verb, long)) {
        Some(var) => arg.env(var),
        None => arg,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use clap::CommandFactory;

    use super::*;
    use crate::cli::Cli;

    /// Every (verb, long flag, variable) of the built-up command (`""`: the global options).
    fn flags() -> Vec<(String, String, Option<String>)> {
        fn walk(
            command: &clap::Command,
            path: &str,
            out: &mut Vec<(String, String, Option<String>)>,
        ) {
            for arg in command.get_arguments() {
                if let Some(long) = arg.get_long() {
                    let env = arg.get_env().map(|e| e.to_string_lossy().into_owned());
                    out.push((path.to_string(), long.to_string(), env));
                }
            }
            for sub in command.get_subcommands() {
                let name = match path {
                    "" => sub.get_name().to_string(),
                    path => format!("{path} {}", sub.get_name()),
                };
                walk(sub, &name, out);
            }
        }
        let mut out = Vec::new();
        walk(&Cli::command(), "", &mut out);
        out
    }

    #[test]
    fn options_table_names_each_variable_once_in_order() {
        let vars: Vec<&str> = ENV_OPTIONS.iter().map(|o| o.var).collect();
        let mut sorted = vars.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(vars, sorted, "one entry per variable, by name");
        for var in vars {
            assert!(var.starts_with("ROCKBUILD_"), "{var}");
        }
    }

    /// Each entry sets at least one flag, no flag of a verb is claimed by two entries, and the
    /// variables the command line reads are exactly the table's.
    #[test]
    fn options_table_is_what_the_command_line_reads() {
        let flags = flags();
        for (verb, long, env) in &flags {
            let claims: Vec<&str> = ENV_OPTIONS
                .iter()
                .filter(|o| o.sets(verb, long))
                .map(|o| o.var)
                .collect();
            assert!(claims.len() <= 1, "{verb} --{long}: {claims:?}");
            assert_eq!(env.as_deref(), claims.first().copied(), "{verb} --{long}");
        }
        let read: BTreeSet<&str> = flags.iter().filter_map(|(_, _, e)| e.as_deref()).collect();
        let table: BTreeSet<&str> = ENV_OPTIONS.iter().map(|o| o.var).collect();
        assert_eq!(
            read, table,
            "a table entry that sets no flag, or a variable from elsewhere"
        );
    }
}
