//! Validated names that reach git's command line: a [`Commit`], a [`RefName`] and an
//! [`Origin`]. Every place a value enters rockbuild (flags, presets, the stack config,
//! related_commits rows, pin files, .gitmodules, locks, TheRock manifests) constructs one of
//! these, so a value git would read as an option (`--upload-pack=…`) or as a program to run
//! (`ext::sh -c …`) is refused where it was written, with the place named. The argv builders
//! in this module's siblings also end options (`--`, `--end-of-options`) before positionals:
//! two locks on one door.

use std::fmt;

/// Why a value is not a valid commit, ref or origin.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{shown}` is not a valid {kind}: {reason}")]
pub struct Invalid {
    pub kind: &'static str,
    /// The value as it may be printed (URL credentials masked).
    pub shown: String,
    pub reason: String,
}

fn invalid(kind: &'static str, shown: &str, reason: impl Into<String>) -> Invalid {
    Invalid {
        kind,
        shown: shown.chars().filter(|c| !c.is_control()).collect(),
        reason: reason.into(),
    }
}

const LEADING_DASH: &str = "it starts with '-', which git would read as an option";

/// A full commit object name: 40 (SHA-1) or 64 (SHA-256) hex digits, kept in lowercase.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Commit(String);

impl Commit {
    pub fn parse(value: &str) -> Result<Self, Invalid> {
        if value.starts_with('-') {
            return Err(invalid("commit", value, LEADING_DASH));
        }
        if !super::is_full_sha(value) {
            return Err(invalid(
                "commit",
                value,
                "a commit is a full 40- or 64-digit hex object name",
            ));
        }
        Ok(Commit(value.to_ascii_lowercase()))
    }
}

/// A ref as users write it: a branch, a tag, `refs/…`, or a full commit SHA. Valid by
/// `git check-ref-format --allow-onelevel` rules, and never starting with `-`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RefName(String);

impl RefName {
    pub fn parse(value: &str) -> Result<Self, Invalid> {
        let fail = |reason: &str| Err(invalid("ref", value, reason));
        if value.is_empty() {
            return fail("it is empty");
        }
        if value.starts_with('-') {
            return fail(LEADING_DASH);
        }
        if value == "@" {
            return fail("`@` alone is not a ref name");
        }
        if let Some(c) = value
            .chars()
            .find(|c| c.is_control() || matches!(c, ' ' | '~' | '^' | ':' | '?' | '*' | '[' | '\\'))
        {
            return fail(&format!(
                "it contains {}, which git does not allow in ref names",
                if c.is_control() {
                    "a control character".to_string()
                } else {
                    format!("'{c}'")
                }
            ));
        }
        if value.contains("..") || value.contains("@{") {
            return fail("it contains `..` or `@{`, which git does not allow in ref names");
        }
        if value.starts_with('/') || value.ends_with('/') || value.contains("//") {
            return fail("it has an empty path component");
        }
        if value.ends_with('.') {
            return fail("it ends with '.'");
        }
        if value
            .split('/')
            .any(|part| part.starts_with('.') || part.ends_with(".lock"))
        {
            return fail("a component starts with '.' or ends with `.lock`");
        }
        Ok(RefName(value.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Schemes git may fetch from. Remote helpers (`ext::`, `fd::`, `<helper>::<address>`) and
/// other schemes are refused: `ext::` runs a program by design.
const SCHEMES: &[&str] = &["https", "http", "ssh", "git", "file", "git+ssh", "ssh+git"];

/// Where a repository is fetched from: a URL with an allowed scheme, an scp-like
/// `[user@]host:path`, or a local path. Never starts with `-`, never names a remote helper,
/// never carries credentials over http(s) (they would be printed and stored: see
/// docs/reliability.md for the ways to authenticate).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Origin(String);

impl Origin {
    pub fn parse(value: &str) -> Result<Self, Invalid> {
        let shown = crate::redact::redact_url(value);
        let fail = |reason: String| Err(invalid("origin", &shown, reason));
        if value.is_empty() {
            return fail("it is empty".into());
        }
        if value.starts_with('-') {
            return fail(LEADING_DASH.into());
        }
        if value.chars().any(char::is_control) {
            return fail("it contains a control character".into());
        }
        let first_slash = value.find('/').unwrap_or(value.len());
        if let Some(helper) = value.find("::").filter(|&at| at < first_slash) {
            return fail(format!(
                "`{}::` names a git remote helper, which can run programs; use one of {}",
                &value[..helper],
                SCHEMES.join(", ")
            ));
        }
        if let Some((scheme, rest)) = value.split_once("://")
            && !scheme.contains('/')
        {
            let lower = scheme.to_ascii_lowercase();
            if !SCHEMES.contains(&lower.as_str()) {
                return fail(format!(
                    "the scheme `{scheme}` is not one of {}",
                    SCHEMES.join(", ")
                ));
            }
            let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
            let (userinfo, host) = match authority.rsplit_once('@') {
                Some((userinfo, host)) => (Some(userinfo), host),
                None => (None, authority),
            };
            if lower != "file" && (host.is_empty() || host.starts_with('-')) {
                return fail("its host is empty or starts with '-'".into());
            }
            if let Some(userinfo) = userinfo
                && (lower.starts_with("http") || userinfo.contains(':'))
            {
                return fail(format!(
                    "it carries credentials in its user part; rockbuild never stores or prints \
                     them: give {shown_host} a git credential helper, GIT_ASKPASS or an \
                     http.extraHeader through GIT_CONFIG_* (docs/reliability.md)",
                    shown_host = host
                ));
            }
            return Ok(Origin(value.to_string()));
        }
        // scp-like `[user@]host:path`: a colon before the first slash.
        if let Some(colon) = value.find(':').filter(|&at| at < first_slash) {
            let host = value[..colon].rsplit('@').next().unwrap_or_default();
            if host.is_empty() || host.starts_with('-') {
                return fail("its host is empty or starts with '-'".into());
            }
        }
        Ok(Origin(value.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Checks a submodule's name or path from `.gitmodules` or a tree before it becomes a
/// directory: relative, `/`-separated, no empty, `.`, `..` or `.git` component (any case), no
/// backslash or control character. Both are joined below `.git/modules/` or the worktree, so a
/// `..` would write outside the checkout (git's own submodule code refuses the same names since
/// CVE-2018-11235).
pub fn check_submodule_path(kind: &'static str, value: &str) -> Result<(), Invalid> {
    let fail = |reason: &str| Err(invalid(kind, value, reason));
    if value.is_empty() {
        return fail("it is empty");
    }
    if value.starts_with('/') {
        return fail("it is absolute; submodules live inside their parent's checkout");
    }
    if value.chars().any(|c| c.is_control() || c == '\\') {
        return fail("it contains a backslash or a control character");
    }
    if let Some(part) = value
        .split('/')
        .find(|part| matches!(*part, "" | "." | "..") || part.eq_ignore_ascii_case(".git"))
    {
        return fail(&format!(
            "it has a `{part}` component, which would leave the submodule's directory"
        ));
    }
    Ok(())
}

impl fmt::Display for Commit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for RefName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Prints the origin with any credential masked (none should be there: see [`Origin::parse`]).
impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::redact::redact_url(&self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "--upload-pack=touch pwned";

    #[test]
    fn commits_are_full_hex_object_names() {
        let sha = "8058981F17813944648A718CEB4CA3A7863E76F0";
        assert_eq!(
            Commit::parse(sha).map(|c| c.to_string()),
            Ok(sha.to_lowercase())
        );
        assert!(Commit::parse(&"a".repeat(64)).is_ok());
        for bad in [HOSTILE, "8058981f", "main", "", &"g".repeat(40)] {
            assert!(Commit::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn refs_follow_check_ref_format() {
        for good in [
            "main",
            "release/2.9",
            "v2.9.0",
            "refs/heads/main",
            "HEAD",
            "nightly-2025.01",
            &"a".repeat(40),
        ] {
            assert!(RefName::parse(good).is_ok(), "{good}");
        }
        for bad in [
            HOSTILE, "-x", "", "@", "a..b", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[", "a\\b",
            "/a", "a/", "a//b", "a.", ".a", "a/.b", "a.lock", "a@{1}", "a\nb",
        ] {
            assert!(RefName::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn submodule_paths_stay_inside_the_checkout() {
        for good in [
            "third_party/kineto",
            "kineto",
            "a.b/c-d_e",
            "third_party/.github-x",
        ] {
            assert_eq!(
                check_submodule_path("submodule name", good),
                Ok(()),
                "{good}"
            );
        }
        let refused = |value: &str| check_submodule_path("submodule name", value).expect_err(value);
        assert_eq!(
            refused("../../../escape").to_string(),
            "`../../../escape` is not a valid submodule name: it has a `..` component, which \
             would leave the submodule's directory"
        );
        for bad in [
            "",
            "/abs",
            "a//b",
            "a/./b",
            "x/.GIT/hooks",
            "a\\..\\b",
            "a\nb",
            "a/",
        ] {
            refused(bad);
        }
    }

    #[test]
    fn origins_have_an_allowed_scheme_and_no_credentials() {
        for good in [
            "https://github.com/ROCm/pytorch.git",
            "http://127.0.0.1:8080/x.git",
            "ssh://git@github.com/ROCm/pytorch.git",
            "git@github.com:ROCm/pytorch.git",
            "git://host/x",
            "file:///tmp/origin.git",
            "/tmp/origin.git",
            "./origin",
            "relative/origin",
        ] {
            assert!(Origin::parse(good).is_ok(), "{good}");
        }
        let refused = |value: &str| Origin::parse(value).expect_err(value).to_string();
        assert_eq!(
            refused(HOSTILE),
            "`--upload-pack=touch pwned` is not a valid origin: it starts with '-', which git \
             would read as an option"
        );
        assert!(refused("ext::sh -c touch% pwned").contains("`ext::` names a git remote helper"));
        assert!(refused("fd::17").contains("remote helper"));
        assert!(refused("ftp://host/x").contains("scheme `ftp`"));
        assert!(refused("ssh://-oProxyCommand=x/y").contains("host"));
        assert!(refused("-oProxyCommand=x:y").contains("starts with '-'"));
        let token = refused("https://ghp_x@github.com/a/b.git");
        assert!(
            token.contains("`https://****@github.com/a/b.git`"),
            "{token}"
        );
        assert!(!token.contains("ghp_x"));
        assert!(!refused("https://bot:hunter2@host/x").contains("hunter2"));
        assert!(refused("https://host/x\n--upload-pack=y").contains("control character"));
    }
}
