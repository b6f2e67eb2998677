//! triton's version rule, read from the tree itself: the expression its setup.py passes to
//! `setup(version=...)`, term by term. The layouts differ in what they add to the base
//! version, and a prediction from the wrong layout is a torch pinned to a triton that does
//! not exist:
//!
//! - ROCm/triton release/3.3.x (`python/setup.py`, PyTorch release/2.7) and 3.0:
//!   `version="3.3.1" + os.environ.get("TRITON_WHEEL_VERSION_SUFFIX", "")`, no git part
//!   (its `get_git_version_suffix` is defined and unused): `3.3.1+rocm7.0.0rc20250728`;
//! - triton 3.2's main: `"3.2.0" + get_git_commit_hash() + os.environ.get(...)`, the hash
//!   always;
//! - 3.4 on, `python/setup.py` then the repository root: `TRITON_VERSION = "3.5.0" +
//!   get_triton_version_suffix()` and `version=TRITON_VERSION`: `+git<sha8>` unless on a
//!   `release*` branch or outside git, then the suffix with its `+` turned into `-` when both
//!   have one (`3.4.0+git12345678-rocm7.0.0rc20250728`).
//!
//! Each helper is taken to do what upstream's does. The rule is a prediction for the plan,
//! never a gate: an expression this reader does not know (a helper under another name, a
//! computed base) leaves the version to the build, and a helper that does otherwise than
//! upstream's makes a wheel of another version; either way torch pins the wheel triton's
//! build made (as the reference pins the installed triton after building it).

use crate::version::short_sha;

/// A term of the version expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Term {
    /// A quoted string: the base version.
    Literal(String),
    /// `os.environ.get("TRITON_WHEEL_VERSION_SUFFIX", "")`: the suffix as given.
    WheelVersionSuffix,
    /// `get_git_commit_hash()`: `+git<sha8>` in a git checkout.
    GitCommitHash,
    /// `get_git_version_suffix()`: `+git<sha8>` unless on a `release*` branch or outside git.
    GitVersionSuffix,
    /// `get_triton_version_suffix()`: the git version suffix, then the wheel version suffix
    /// with its `+` as `-` when both carry one.
    TritonVersionSuffix,
}

impl Term {
    fn describe(&self) -> String {
        match self {
            Term::Literal(text) => format!("\"{text}\""),
            Term::WheelVersionSuffix => "TRITON_WHEEL_VERSION_SUFFIX".into(),
            Term::GitCommitHash => "get_git_commit_hash()".into(),
            Term::GitVersionSuffix => "get_git_version_suffix()".into(),
            Term::TritonVersionSuffix => "get_triton_version_suffix()".into(),
        }
    }
}

/// The expression, and the line of setup.py it is on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionRule {
    pub line: usize,
    pub terms: Vec<Term>,
}

/// Why a setup.py's version cannot be predicted: the line and what could not be read there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleError {
    pub line: Option<usize>,
    pub problem: String,
}

/// What the checkout tells the git helpers.
#[derive(Clone, Copy, Debug)]
pub struct Git<'a> {
    /// HEAD's commit; `None` outside git.
    pub head: Option<&'a str>,
    /// The checked-out branch; `None` when HEAD is detached.
    pub branch: Option<&'a str>,
}

impl VersionRule {
    /// The version setup.py computes in `git` with `TRITON_WHEEL_VERSION_SUFFIX` = `suffix`
    /// (not normalized: PEP 440 normalization is the caller's).
    pub fn evaluate(&self, git: Git<'_>, suffix: &str) -> String {
        let hash = git
            .head
            .map(|head| format!("+git{}", short_sha(head)))
            .unwrap_or_default();
        let on_release = git.branch.is_some_and(|b| b.starts_with("release"));
        let git_version_suffix = if on_release { "" } else { hash.as_str() };
        self.terms
            .iter()
            .map(|term| match term {
                Term::Literal(text) => text.clone(),
                Term::WheelVersionSuffix => suffix.to_string(),
                Term::GitCommitHash => hash.clone(),
                Term::GitVersionSuffix => git_version_suffix.to_string(),
                Term::TritonVersionSuffix => {
                    let joined = if git_version_suffix.contains('+') && suffix.contains('+') {
                        suffix.replace('+', "-")
                    } else {
                        suffix.to_string()
                    };
                    format!("{git_version_suffix}{joined}")
                }
            })
            .collect()
    }

    /// `"3.3.1" + TRITON_WHEEL_VERSION_SUFFIX`, for messages and the plan.
    pub fn describe(&self) -> String {
        self.terms
            .iter()
            .map(Term::describe)
            .collect::<Vec<_>>()
            .join(" + ")
    }
}

/// Reads the rule from setup.py's text: the `version=` argument of its last `setup(` call,
/// through the module-level assignment when it names a variable (`version=TRITON_VERSION`).
pub fn parse(text: &str) -> Result<VersionRule, RuleError> {
    let lines: Vec<&str> = text.lines().collect();
    let setup_line = lines.iter().rposition(|line| {
        let line = code(line).trim_start();
        !line.starts_with("def ") && calls_setup(line)
    });
    let (line, expression) = match setup_line.and_then(|start| version_argument(&lines, start)) {
        Some(found) => found,
        // No setup(version=...) to read: the variable upstream keeps for substitution.
        None => assignment(&lines, "TRITON_VERSION", lines.len()).ok_or_else(|| RuleError {
            line: setup_line.map(|l| l + 1),
            problem: "has no `setup(version=...)` nor a `TRITON_VERSION = ...` line to predict the version from".into(),
        })?,
    };
    let (line, expression) = if is_identifier(&expression) {
        assignment(&lines, &expression, line).ok_or_else(|| RuleError {
            line: Some(line + 1),
            problem: format!(
                "passes `version={expression}`, and no `{expression} = ...` line before it says what that is"
            ),
        })?
    } else {
        (line, expression)
    };
    let terms = split_plus(&expression)
        .into_iter()
        .map(|term| {
            term_of(term).ok_or_else(|| RuleError {
                line: Some(line + 1),
                problem: format!(
                    "computes triton's version as `{expression}`, and rockbuild cannot predict `{term}`"
                ),
            })
        })
        .collect::<Result<Vec<Term>, RuleError>>()?;
    if !matches!(terms.first(), Some(Term::Literal(_))) {
        return Err(RuleError {
            line: Some(line + 1),
            problem: format!(
                "computes triton's version as `{expression}`, which does not start with the base version in quotes"
            ),
        });
    }
    Ok(VersionRule {
        line: line + 1,
        terms,
    })
}

/// The line without its comment (a `#` outside quotes).
fn code(line: &str) -> &str {
    let mut quote: Option<char> = None;
    for (index, c) in line.char_indices() {
        match (quote, c) {
            (None, '#') => return &line[..index],
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
    }
    line
}

/// `setup(` as a call (`setup(`, `dist = setup(`), not as part of another name.
fn calls_setup(line: &str) -> bool {
    line.match_indices("setup(").any(|(index, _)| {
        !line[..index]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// The `version=` keyword argument from `start` (the `setup(` line) on: (line, expression).
fn version_argument(lines: &[&str], start: usize) -> Option<(usize, String)> {
    lines
        .iter()
        .enumerate()
        .skip(start)
        .find_map(|(index, line)| {
            let line = code(line);
            let at = line.find("version")?;
            let before = line[..at].trim_end();
            if !(before.is_empty() || before.ends_with('(') || before.ends_with(',')) {
                return None;
            }
            let rest = line[at + "version".len()..]
                .trim_start()
                .strip_prefix('=')?;
            if rest.starts_with('=') {
                return None;
            }
            Some((index, argument(rest)))
        })
}

/// The last module-level `name = <expression>` before line `before`.
fn assignment(lines: &[&str], name: &str, before: usize) -> Option<(usize, String)> {
    lines[..before.min(lines.len())]
        .iter()
        .enumerate()
        .rev()
        .find_map(|(index, line)| {
            let rest = code(line)
                .strip_prefix(name)?
                .trim_start()
                .strip_prefix('=')?;
            (!rest.starts_with('=')).then(|| (index, rest.trim().to_string()))
        })
}

/// An argument's text: up to a `,` or `)` outside quotes and parentheses.
fn argument(text: &str) -> String {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    for (index, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') if depth == 0 => return text[..index].trim().to_string(),
            (None, ')') => depth -= 1,
            (None, ',') if depth == 0 => return text[..index].trim().to_string(),
            _ => {}
        }
    }
    text.trim().to_string()
}

fn split_plus(expression: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let (mut depth, mut quote, mut start) = (0usize, None::<char>, 0usize);
    for (index, c) in expression.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => depth = depth.saturating_sub(1),
            (None, '+') if depth == 0 => {
                terms.push(expression[start..index].trim());
                start = index + 1;
            }
            _ => {}
        }
    }
    terms.push(expression[start..].trim());
    terms
}

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn term_of(term: &str) -> Option<Term> {
    if let Some(text) = quoted(term) {
        return Some(Term::Literal(text.to_string()));
    }
    let compact: String = term.chars().filter(|c| !c.is_whitespace()).collect();
    let compact = compact.replace('\'', "\"");
    match compact.as_str() {
        "get_git_commit_hash()" => return Some(Term::GitCommitHash),
        "get_git_version_suffix()" => return Some(Term::GitVersionSuffix),
        "get_triton_version_suffix()" => return Some(Term::TritonVersionSuffix),
        _ => {}
    }
    let args = compact
        .strip_prefix("os.environ.get(")
        .or_else(|| compact.strip_prefix("os.getenv("))?
        .strip_suffix(')')?;
    matches!(
        args,
        "\"TRITON_WHEEL_VERSION_SUFFIX\",\"\"" | "\"TRITON_WHEEL_VERSION_SUFFIX\""
    )
    .then_some(Term::WheelVersionSuffix)
}

fn quoted(term: &str) -> Option<&str> {
    let quote = term.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let inner = term.strip_prefix(quote)?.strip_suffix(quote)?;
    (!inner.contains(quote)).then_some(inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "12345678abcdef0123456789abcdef0123456789";
    const DETACHED: Git<'static> = Git {
        head: Some(SHA),
        branch: None,
    };

    /// ROCm/triton release/3.3.x, python/setup.py: helpers, download calls with their own
    /// `version=` arguments, and the setup() call at the end.
    const ROCM_3_3: &str = r#"
def get_git_commit_hash(length=8):
    try:
        cmd = ['git', 'rev-parse', f'--short={length}', 'HEAD']
        return "+git{}".format(subprocess.check_output(cmd).strip().decode('utf-8'))
    except Exception:
        return ""

def get_git_version_suffix():
    branch = get_git_branch()
    if branch.startswith("release"):
        return ""
    else:
        return get_git_commit_hash()

download_and_copy(
    name="nvcc",
    version=NVIDIA_TOOLCHAIN_VERSION["ptxas"],
)

setup(
    name=os.environ.get("TRITON_WHEEL_NAME", "triton"),
    version="3.3.1" + os.environ.get("TRITON_WHEEL_VERSION_SUFFIX", ""),
    author="Philippe Tillet",
)
"#;

    /// triton 3.7's setup.py at the repository root.
    const ROOT_3_7: &str = r#"
def get_triton_version_suffix():
    git_sfx = get_git_version_suffix()
    env_sfx = os.environ.get("TRITON_WHEEL_VERSION_SUFFIX", "")
    if "+" in git_sfx and "+" in env_sfx:
        env_sfx = env_sfx.replace("+", "-")
    return git_sfx + env_sfx


# keep it separate for easy substitution
TRITON_VERSION = "3.7.0" + get_triton_version_suffix()

setup(
    name=os.environ.get("TRITON_WHEEL_NAME", "triton"),
    version=TRITON_VERSION,
)
"#;

    #[test]
    fn each_layout_is_read_and_computed_as_its_setup_py_does() {
        let rule = parse(ROCM_3_3).expect("3.3");
        assert_eq!(rule.line, 23);
        assert_eq!(rule.describe(), "\"3.3.1\" + TRITON_WHEEL_VERSION_SUFFIX");
        // No git part, on a release branch or not: TheRock's "3.3.1+rocm7.0.0rc20250728".
        assert_eq!(
            rule.evaluate(DETACHED, "+rocm7.0.0rc20250728"),
            "3.3.1+rocm7.0.0rc20250728"
        );

        let rule = parse(ROOT_3_7).expect("3.7");
        assert_eq!(rule.line, 11);
        assert_eq!(rule.describe(), "\"3.7.0\" + get_triton_version_suffix()");
        assert_eq!(
            rule.evaluate(DETACHED, "+rocm7.0.0rc20250728"),
            "3.7.0+git12345678-rocm7.0.0rc20250728"
        );
        let release = Git {
            head: Some(SHA),
            branch: Some("release/3.7.x"),
        };
        assert_eq!(rule.evaluate(release, "+rocm7.14.0"), "3.7.0+rocm7.14.0");
        let no_git = Git {
            head: None,
            branch: None,
        };
        assert_eq!(rule.evaluate(no_git, ""), "3.7.0");

        // triton 3.2's main: the hash always, the suffix as given (its own `+` kept).
        let rule = parse(
            "setup(\n    version=\"3.2.0\" + get_git_commit_hash() + os.environ.get('TRITON_WHEEL_VERSION_SUFFIX', ''),\n)\n",
        )
        .expect("3.2");
        assert_eq!(rule.evaluate(DETACHED, ".post1"), "3.2.0+git12345678.post1");

        // The sample's layout: `dist = setup(` inside main(), TRITON_VERSION assigned above.
        let rule = parse(include_str!("../../../examples/stack/triton/setup.py")).expect("sample");
        assert_eq!(rule.describe(), "\"3.5.0\" + get_triton_version_suffix()");
    }

    #[test]
    fn what_cannot_be_predicted_is_named_with_its_line_for_the_plan() {
        let error =
            parse("setup(\n    version=\"3.3.1\" + read_suffix(),\n)\n").expect_err("unknown");
        assert_eq!(error.line, Some(2));
        assert!(
            error
                .problem
                .starts_with("computes triton's version as `\"3.3.1\" + read_suffix()`, and rockbuild cannot predict `read_suffix()`"),
            "{}",
            error.problem
        );
        let error = parse("setup(\n    version=VERSION,\n)\n").expect_err("unknown variable");
        assert_eq!(
            error.problem,
            "passes `version=VERSION`, and no `VERSION = ...` line before it says what that is"
        );
        let error = parse("setup(name='triton')\n").expect_err("no version");
        assert_eq!(error.line, Some(1));
        let error = parse("setup(\n    version=get_version(),\n)\n").expect_err("no literal");
        assert!(
            error.problem.contains("cannot predict `get_version()`"),
            "{}",
            error.problem
        );
    }
}
