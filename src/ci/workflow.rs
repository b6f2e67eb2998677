//! GitHub Actions workflows as data: jobs whose steps are one `rockbuild` call, one call of
//! another program with checked arguments, or one pinned action, rendered to YAML by one small
//! emitter for the job's shell (a POSIX shell on Linux, PowerShell on Windows). The same data is what
//! `rockbuild ci generate --dry-run --json` prints, so a test can run exactly the calls the
//! jobs make.

use serde::Serialize;

/// One workflow file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Workflow {
    /// File name under the output directory (`rockbuild-chain.yml`).
    pub file: String,
    pub name: String,
    /// Comment lines at the top of the file (what it is, how it is made).
    pub header: Vec<String>,
    /// The `on:` section as it is written.
    pub on: Yaml,
    pub permissions: Vec<(String, String)>,
    pub concurrency: Option<Concurrency>,
    pub env: Vec<(String, String)>,
    pub jobs: Vec<Job>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Concurrency {
    pub group: String,
    pub cancel_in_progress: bool,
}

/// One job: steps on a runner, or a call of a reusable workflow.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Job {
    pub id: String,
    pub name: String,
    pub needs: Vec<String>,
    /// A job condition; `None` is GitHub's default (every job it needs succeeded).
    pub condition: Option<String>,
    /// The `strategy.matrix` expression (`${{ fromJSON(...) }}`); jobs never fail fast.
    pub matrix: Option<String>,
    pub permissions: Vec<(String, String)>,
    pub body: JobBody,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum JobBody {
    Steps {
        runs_on: String,
        container: Option<Container>,
        /// The shell of the job's `run` steps.
        shell: Shell,
        timeout_minutes: u32,
        outputs: Vec<(String, String)>,
        env: Vec<(String, String)>,
        steps: Vec<Step>,
    },
    Call {
        /// `./.github/workflows/<file>`.
        uses: String,
        with: Vec<(String, String)>,
    },
}

/// The shell `run` steps are written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Shell {
    /// GitHub's default on Linux (bash, or sh in a container without it): not written.
    Posix,
    /// PowerShell (`defaults.run.shell: pwsh`), on Windows runners. Not Git Bash: the
    /// reference runs its Windows build under `cmd` because bash's environment breaks it
    /// ("load bearing", TheRock#827), and PowerShell passes a `$env:` value to a program as
    /// one argument, never parsing it again.
    Pwsh,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Container {
    pub image: String,
    pub options: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    /// Set when a job output reads the step's outputs.
    pub id: Option<String>,
    pub name: String,
    pub condition: Option<String>,
    pub env: Vec<(String, String)>,
    pub run: StepRun,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum StepRun {
    /// `rockbuild ARGS...`: each value that comes from the workflow is a `$VAR` of the step's
    /// env, never an expression in the command line (no template injection).
    Rockbuild { args: Vec<Arg> },
    /// Another program on the runner's PATH (`choco`, `cmake`, `cargo`), its arguments checked
    /// as `rockbuild`'s are.
    Command { program: String, args: Vec<Arg> },
    /// Adds the directory a variable of the step's env names to the PATH of the job's later
    /// steps (`$GITHUB_PATH`).
    AddToPath { var: String },
    Action {
        action: Action,
        with: Vec<(String, String)>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "value")]
pub enum Arg {
    /// Written as it is (checked to need no shell quoting).
    Literal(String),
    /// `"$NAME"`: a variable of the step's or job's env.
    Var(String),
}

/// An action pinned by full commit SHA, with the release the SHA is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Action {
    pub repo: &'static str,
    pub sha: &'static str,
    pub version: &'static str,
}

/// The subset of YAML the workflows need, in the order it is written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Yaml {
    Map(Vec<(String, Yaml)>),
    Seq(Vec<Yaml>),
    Str(String),
    /// A plain value followed by a YAML comment (`uses: owner/repo@sha # v1.2.3`).
    Commented {
        value: String,
        comment: String,
    },
    Bool(bool),
    Int(u64),
}

impl Yaml {
    pub fn map(entries: Vec<(&str, Yaml)>) -> Yaml {
        Yaml::Map(
            entries
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    }

    pub fn str(value: impl Into<String>) -> Yaml {
        Yaml::Str(value.into())
    }

    /// Permissions, each with why it is needed (zizmor's pedantic persona asks for that).
    fn permissions(pairs: &[(String, String)]) -> Yaml {
        Yaml::Map(
            pairs
                .iter()
                .map(|(scope, access)| {
                    let why = match (scope.as_str(), access.as_str()) {
                        ("id-token", "write") => "OIDC: assume the stores' role (no static keys)",
                        _ => "what the jobs read",
                    };
                    (
                        scope.clone(),
                        Yaml::Commented {
                            value: access.clone(),
                            comment: why.to_string(),
                        },
                    )
                })
                .collect(),
        )
    }

    /// A `with:` map: `true` and `false` as YAML booleans, which boolean inputs take
    /// (`${{ false }}` is what zizmor calls obfuscation).
    fn inputs(pairs: &[(String, String)]) -> Yaml {
        Yaml::Map(
            pairs
                .iter()
                .map(|(k, v)| {
                    let value = match v.as_str() {
                        "true" => Yaml::Bool(true),
                        "false" => Yaml::Bool(false),
                        _ => Yaml::str(v),
                    };
                    (k.clone(), value)
                })
                .collect(),
        )
    }

    fn pairs(pairs: &[(String, String)]) -> Yaml {
        Yaml::Map(
            pairs
                .iter()
                .map(|(k, v)| (k.clone(), Yaml::str(v)))
                .collect(),
        )
    }
}

/// Characters a literal argument may hold and stay one shell word without quoting.
pub fn is_shell_safe(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=,:@+%".contains(c))
}

impl Arg {
    fn shell(&self, shell: Shell) -> String {
        match (self, shell) {
            (Arg::Literal(word), Shell::Posix) => word.clone(),
            // `,` makes an array in PowerShell and a leading `@` splats.
            (Arg::Literal(word), Shell::Pwsh) if word.contains([',', '@']) => format!("'{word}'"),
            (Arg::Literal(word), Shell::Pwsh) => word.clone(),
            (Arg::Var(name), Shell::Posix) => format!("\"${name}\""),
            (Arg::Var(name), Shell::Pwsh) => format!("$env:{name}"),
        }
    }
}

/// One command line: the program and its arguments as `shell` reads them.
fn command_line(program: &str, args: &[Arg], shell: Shell) -> String {
    std::iter::once(program.to_string())
        .chain(args.iter().map(|a| a.shell(shell)))
        .collect::<Vec<_>>()
        .join(" ")
}

impl Step {
    fn to_yaml(&self, shell: Shell) -> Yaml {
        let mut entries = vec![("name", Yaml::str(&self.name))];
        if let Some(id) = &self.id {
            entries.push(("id", Yaml::str(id)));
        }
        if let Some(condition) = &self.condition {
            entries.push(("if", Yaml::str(condition)));
        }
        match &self.run {
            StepRun::Rockbuild { args } => {
                if !self.env.is_empty() {
                    entries.push(("env", Yaml::pairs(&self.env)));
                }
                entries.push(("run", Yaml::str(command_line("rockbuild", args, shell))));
            }
            StepRun::Command { program, args } => {
                if !self.env.is_empty() {
                    entries.push(("env", Yaml::pairs(&self.env)));
                }
                entries.push(("run", Yaml::str(command_line(program, args, shell))));
            }
            StepRun::AddToPath { var } => {
                if !self.env.is_empty() {
                    entries.push(("env", Yaml::pairs(&self.env)));
                }
                let line = match shell {
                    Shell::Posix => format!("echo \"${var}\" >> \"$GITHUB_PATH\""),
                    Shell::Pwsh => {
                        format!("Add-Content -LiteralPath $env:GITHUB_PATH -Value $env:{var}")
                    }
                };
                entries.push(("run", Yaml::str(line)));
            }
            StepRun::Action { action, with } => {
                entries.push((
                    "uses",
                    Yaml::Commented {
                        value: format!("{}@{}", action.repo, action.sha),
                        comment: action.version.to_string(),
                    },
                ));
                if !self.env.is_empty() {
                    entries.push(("env", Yaml::pairs(&self.env)));
                }
                if !with.is_empty() {
                    entries.push(("with", Yaml::inputs(with)));
                }
            }
        }
        Yaml::map(entries)
    }
}

impl Job {
    fn to_yaml(&self) -> Yaml {
        let mut entries = vec![("name", Yaml::str(&self.name))];
        match self.needs.as_slice() {
            [] => {}
            [one] => entries.push(("needs", Yaml::str(one))),
            many => entries.push(("needs", Yaml::Seq(many.iter().map(Yaml::str).collect()))),
        }
        if let Some(condition) = &self.condition {
            entries.push(("if", Yaml::str(condition)));
        }
        if !self.permissions.is_empty() {
            entries.push(("permissions", Yaml::permissions(&self.permissions)));
        }
        if let Some(matrix) = &self.matrix {
            entries.push((
                "strategy",
                Yaml::map(vec![
                    ("fail-fast", Yaml::Bool(false)),
                    ("matrix", Yaml::str(matrix)),
                ]),
            ));
        }
        match &self.body {
            JobBody::Steps {
                runs_on,
                container,
                shell,
                timeout_minutes,
                outputs,
                env,
                steps,
            } => {
                entries.push(("runs-on", Yaml::str(runs_on)));
                if let Some(container) = container {
                    // The image is an input holding a digest (docs/ci.md), which zizmor cannot
                    // see through.
                    let image = Yaml::Commented {
                        value: container.image.clone(),
                        comment: "zizmor: ignore[unpinned-images]".into(),
                    };
                    let mut c = vec![("image", image)];
                    if let Some(options) = &container.options {
                        c.push(("options", Yaml::str(options)));
                    }
                    entries.push(("container", Yaml::map(c)));
                }
                if *shell == Shell::Pwsh {
                    entries.push((
                        "defaults",
                        Yaml::map(vec![("run", Yaml::map(vec![("shell", Yaml::str("pwsh"))]))]),
                    ));
                }
                entries.push(("timeout-minutes", Yaml::Int(u64::from(*timeout_minutes))));
                if !outputs.is_empty() {
                    entries.push(("outputs", Yaml::pairs(outputs)));
                }
                if !env.is_empty() {
                    entries.push(("env", Yaml::pairs(env)));
                }
                entries.push((
                    "steps",
                    Yaml::Seq(steps.iter().map(|s| s.to_yaml(*shell)).collect()),
                ));
            }
            JobBody::Call { uses, with } => {
                // GitHub documents `./.github/workflows/…` for a workflow of the same
                // repository; zizmor's `$/…` is a runner feature behind a flag
                // (actions/runner#4457).
                entries.push((
                    "uses",
                    Yaml::Commented {
                        value: uses.clone(),
                        comment: "zizmor: ignore[self-repository]".into(),
                    },
                ));
                entries.push(("with", Yaml::inputs(with)));
            }
        }
        Yaml::map(entries)
    }
}

impl Workflow {
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        for line in &self.header {
            if line.is_empty() {
                out.push_str("#\n");
            } else {
                out.push_str(&format!("# {line}\n"));
            }
        }
        let mut top = vec![("name", Yaml::str(&self.name)), ("on", self.on.clone())];
        // Nothing by default; jobs ask for what they use.
        top.push(("permissions", Yaml::permissions(&self.permissions)));
        if let Some(c) = &self.concurrency {
            top.push((
                "concurrency",
                Yaml::map(vec![
                    ("group", Yaml::str(&c.group)),
                    ("cancel-in-progress", Yaml::Bool(c.cancel_in_progress)),
                ]),
            ));
        }
        if !self.env.is_empty() {
            top.push(("env", Yaml::pairs(&self.env)));
        }
        top.push((
            "jobs",
            Yaml::Map(
                self.jobs
                    .iter()
                    .map(|j| (j.id.clone(), j.to_yaml()))
                    .collect(),
            ),
        ));
        // Top-level sections and jobs are separated by a blank line, as people write them.
        for (i, (key, value)) in top.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            match (key, value) {
                (&"jobs", Yaml::Map(jobs)) => {
                    out.push_str("jobs:\n");
                    for (j, (id, job)) in jobs.iter().enumerate() {
                        if j > 0 {
                            out.push('\n');
                        }
                        emit_entry(&mut out, 2, id, job);
                    }
                }
                _ => emit_entry(&mut out, 0, key, value),
            }
        }
        out
    }
}

fn emit_entry(out: &mut String, indent: usize, key: &str, value: &Yaml) {
    let pad = " ".repeat(indent);
    match value {
        Yaml::Map(entries) if entries.is_empty() => out.push_str(&format!("{pad}{key}: {{}}\n")),
        Yaml::Seq(items) if items.is_empty() => out.push_str(&format!("{pad}{key}: []\n")),
        Yaml::Map(entries) => {
            out.push_str(&format!("{pad}{key}:\n"));
            for (k, v) in entries {
                emit_entry(out, indent + 2, k, v);
            }
        }
        Yaml::Seq(items) => {
            out.push_str(&format!("{pad}{key}:\n"));
            for item in items {
                emit_item(out, indent + 2, item);
            }
        }
        // Several lines (a list of paths): a literal block, each line as it is.
        Yaml::Str(text) if text.contains('\n') => {
            out.push_str(&format!("{pad}{key}: |\n"));
            for line in text.lines() {
                out.push_str(&format!("{pad}  {line}\n"));
            }
        }
        scalar => out.push_str(&format!("{pad}{key}: {}\n", scalar_text(scalar))),
    }
}

fn emit_item(out: &mut String, indent: usize, item: &Yaml) {
    let pad = " ".repeat(indent);
    match item {
        Yaml::Map(entries) if !entries.is_empty() => {
            // `- first: value`, the other keys aligned under it.
            let mut first = String::new();
            emit_entry(&mut first, indent + 2, &entries[0].0, &entries[0].1);
            out.push_str(&format!("{pad}- {}", &first[indent + 2..]));
            for (k, v) in &entries[1..] {
                emit_entry(out, indent + 2, k, v);
            }
        }
        Yaml::Map(_) => out.push_str(&format!("{pad}- {{}}\n")),
        Yaml::Seq(_) => unreachable!("the workflows hold no nested sequences"),
        scalar => out.push_str(&format!("{pad}- {}\n", scalar_text(scalar))),
    }
}

fn scalar_text(value: &Yaml) -> String {
    match value {
        Yaml::Str(text) => quote(text),
        Yaml::Commented { value, comment } => format!("{} # {comment}", quote(value)),
        Yaml::Bool(b) => b.to_string(),
        Yaml::Int(n) => n.to_string(),
        Yaml::Map(_) | Yaml::Seq(_) => unreachable!("collections are not scalars"),
    }
}

/// A plain scalar when YAML reads it back as the same string, else single-quoted.
fn quote(text: &str) -> String {
    let first = text.chars().next();
    let plain = !text.is_empty()
        && !text.contains(": ")
        && !text.contains(" #")
        && !text.ends_with(':')
        && !text.contains('\n')
        && text.trim() == text
        && !first.is_some_and(|c| "-?:,[]{}#&*!|>'\"%@`".contains(c))
        && !matches!(
            text.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "~"
        )
        && text.parse::<f64>().is_err();
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_read_back_as_written() {
        let cases = [
            "plain",
            "${{ inputs.family }}",
            "3.12",
            "on",
            "",
            "a: b",
            "x # y",
            "'quoted'",
            "- dash",
            "0 2 * * *",
            "run-${{ github.run_id }}",
        ];
        for text in cases {
            let yaml = format!("k: {}\n", quote(text));
            let back: std::collections::BTreeMap<String, String> =
                yaml_serde::from_str(&yaml).expect("parses");
            assert_eq!(back["k"], text, "{yaml}");
        }
    }

    /// PowerShell reads `a,b` as an array and `@x` as splatting: such literals are quoted;
    /// a variable is `$env:NAME`, one argument whatever it holds.
    #[test]
    fn pwsh_command_lines() {
        let args = [
            Arg::Literal("--expect".into()),
            Arg::Literal("smoke=1,quick=1".into()),
            Arg::Literal("@file".into()),
            Arg::Var("PYTHON".into()),
        ];
        assert_eq!(
            command_line("rockbuild", &args, Shell::Pwsh),
            "rockbuild --expect 'smoke=1,quick=1' '@file' $env:PYTHON"
        );
        assert_eq!(
            command_line("rockbuild", &args, Shell::Posix),
            "rockbuild --expect smoke=1,quick=1 @file \"$PYTHON\""
        );
    }

    #[test]
    fn shell_words() {
        assert!(is_shell_safe("--root-checkout-dir"));
        assert!(is_shell_safe("lock/rockbuild.lock.json"));
        assert!(!is_shell_safe("a b"));
        assert!(!is_shell_safe("$X"));
        assert!(!is_shell_safe(""));
    }
}
