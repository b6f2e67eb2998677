//! The output facade. stdout carries only data (plans, JSON, tables a script may parse);
//! everything for people goes to stderr: status lines, one progress line per task, warnings.
//! On a terminal the tasks are live indicatif lines; elsewhere (CI logs) each phase change is
//! printed as a plain line. In GitHub Actions failures also become `::error::` annotations and
//! summaries are appended to `$GITHUB_STEP_SUMMARY`.
//!
//! With `--log-format json` every line on stderr is one JSON object, in the shape tracing's
//! JSON lines have (`{"level":"INFO","fields":{"message":…}}`, a task's lines with its name in
//! `fields.task`): status lines, tables and summaries (one object each, line breaks inside
//! the message), warnings, errors. Workflow commands are text for the runner, so they are not
//! written then; the same facts are in the objects.
//!
//! In GitHub Actions this is also the one place text from outside (a wheel's METADATA, a file
//! name, a test name, a lease's host, a waiver's reason, a repository's files) is made harmless
//! where it is printed: the runner reads any output line that starts with `::` (after spaces)
//! and any `##[` in a line as a workflow command. Every line rockbuild prints, on stderr and
//! stdout, goes through [`ci_safe`] unless it is one of rockbuild's own commands (built by
//! [`Ui::warn`], [`Ui::note`], [`Ui::error_annotation`], [`Ui::group`], whose values are
//! escaped as the runner specifies). The step summary only takes [`Markdown`], which text
//! enters escaped.

use std::borrow::Cow;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::env_vars::{self, Environment};

/// How tracing output is formatted (`--log-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Clone, Debug)]
pub struct Ui {
    multi: MultiProgress,
    /// Every task line, so a summary can take them off the screen.
    bars: std::sync::Arc<std::sync::Mutex<Vec<ProgressBar>>>,
    quiet: bool,
    github: bool,
    json: bool,
    step_summary: Option<PathBuf>,
}

/// How important a line on stderr is (`level` of a JSON line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Error,
    Warn,
    Info,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Error => "ERROR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
        }
    }
}

/// One JSON line for stderr, in the shape of tracing's JSON lines: the message and, for a
/// task's line, the task's name.
pub fn json_line(level: Level, message: &str, task: Option<&str>) -> String {
    let mut fields = serde_json::Map::new();
    // The level says it is an error; the text's own `error: ` would say it twice.
    let message = match level {
        Level::Error => message.strip_prefix("error: ").unwrap_or(message),
        _ => message,
    };
    fields.insert("message".into(), message.trim_end_matches('\n').into());
    if let Some(task) = task {
        fields.insert("task".into(), task.into());
    }
    serde_json::json!({ "level": level.as_str(), "fields": fields }).to_string()
}

impl Ui {
    pub fn new(env: &Environment, quiet: bool, log_format: LogFormat) -> Self {
        let draw_target = if quiet || log_format == LogFormat::Json {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        };
        Ui {
            multi: MultiProgress::with_draw_target(draw_target),
            bars: std::sync::Arc::default(),
            quiet,
            github: env.in_github_actions(),
            json: log_format == LogFormat::Json,
            step_summary: env
                .non_empty(env_vars::GITHUB_STEP_SUMMARY)
                .map(PathBuf::from),
        }
    }

    /// A writer for tracing that does not tear the live progress lines.
    pub fn log_writer(&self) -> BarSafeWriter {
        BarSafeWriter {
            multi: self.multi.clone(),
            github: self.github,
        }
    }

    /// A status line for people.
    pub fn status(&self, message: impl AsRef<str>) {
        if !self.quiet {
            self.eprintln_at(Level::Info, message.as_ref());
        }
    }

    /// An error as the user reads it (message, causes, hints), on stderr whatever `--quiet`.
    pub fn error(&self, text: &str) {
        self.eprintln_at(Level::Error, text);
    }

    /// A warning the user can act on.
    pub fn warn(&self, message: impl AsRef<str>) {
        let message = message.as_ref();
        if self.json {
            self.eprintln_at(Level::Warn, message);
        } else if self.github {
            self.command(&format!("::warning::{}", escape_annotation(message)));
        } else {
            self.eprintln(&format!("warning: {message}"));
        }
    }

    /// Something the user should know that is not a problem (GitHub: a notice annotation).
    pub fn note(&self, message: impl AsRef<str>) {
        let message = message.as_ref();
        if self.json {
            if !self.quiet {
                self.eprintln_at(Level::Info, message);
            }
        } else if self.github {
            self.command(&format!("::notice::{}", escape_annotation(message)));
        } else if !self.quiet {
            self.eprintln(&format!("note: {message}"));
        }
    }

    /// Reports a failure; in GitHub Actions also as an error annotation.
    pub fn error_annotation(&self, title: &str, message: &str) {
        if self.github && !self.json {
            self.command(&format!(
                "::error title={}::{}",
                escape_property(title),
                escape_annotation(message)
            ));
        }
    }

    /// Prints a block folded under a title in GitHub Actions logs.
    pub fn group(&self, title: &str, body: &str) {
        if self.json {
            self.eprintln_at(Level::Info, &format!("{title}\n{body}"));
        } else if self.github {
            self.command(&format!("::group::{}", escape_annotation(title)));
            self.eprintln(body);
            self.command("::endgroup::");
        } else {
            self.eprintln(&format!("{title}\n{body}"));
        }
    }

    /// Writes data to stdout (never hidden by `--quiet`). A write that fails (a full disk, a
    /// closed pipe) is an error: a script must not read nothing as a result.
    pub fn data(&self, text: &str) -> std::io::Result<()> {
        let text = self.safe(text);
        self.multi
            .suspend(|| {
                let mut stdout = std::io::stdout().lock();
                stdout.write_all(text.as_bytes())?;
                if !text.ends_with('\n') {
                    stdout.write_all(b"\n")?;
                }
                stdout.flush()
            })
            .map_err(|e| std::io::Error::new(e.kind(), format!("writing to standard output: {e}")))
    }

    /// Appends Markdown to the GitHub step summary when running in GitHub Actions.
    pub fn step_summary(&self, markdown: &Markdown) {
        let Some(path) = &self.step_summary else {
            return;
        };
        let result = crate::fsutil::append(path)
            .and_then(|mut file| file.write_all(format!("{}\n", markdown.as_str()).as_bytes()));
        if let Err(error) = result {
            self.warn(format!("could not append to the step summary: {error}"));
        }
    }

    /// Removes finished progress lines before a summary repeats what they said.
    pub fn clear_progress(&self) {
        if let Ok(mut bars) = self.bars.lock() {
            for bar in bars.drain(..) {
                bar.finish_and_clear();
                self.multi.remove(&bar);
            }
        }
    }

    /// A progress line for one unit of work (a project, a wheel).
    pub fn task(&self, name: &str) -> Task {
        let bar = self.multi.add(ProgressBar::new_spinner());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {prefix:<8} {wide_msg} {elapsed:>4}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_prefix(name.to_string());
        bar.enable_steady_tick(Duration::from_millis(120));
        if let Ok(mut bars) = self.bars.lock() {
            bars.push(bar.clone());
        }
        Task {
            bar,
            name: name.to_string(),
            live: !self.multi.is_hidden(),
            quiet: self.quiet,
            github: self.github,
            json: self.json,
            started: Instant::now(),
        }
    }

    /// Prints text for people on stderr at a level (one JSON object with `--log-format json`).
    fn eprintln_at(&self, level: Level, text: &str) {
        if self.json {
            self.eprintln(&json_line(level, text, None));
        } else {
            self.eprintln(text);
        }
    }

    /// Prints a line on stderr (made harmless for the GitHub runner).
    fn eprintln(&self, text: &str) {
        let text = self.safe(text);
        self.multi.suspend(|| {
            let _ = writeln!(std::io::stderr().lock(), "{text}");
        });
    }

    /// Prints one of rockbuild's own workflow commands, whose values are escaped already.
    fn command(&self, line: &str) {
        self.multi.suspend(|| {
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        });
    }

    fn safe<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.github {
            ci_safe(text)
        } else {
            Cow::Borrowed(text)
        }
    }
}

/// Text made harmless for the GitHub Actions runner, line by line: a line that would start a
/// workflow command (`::` after spaces) gets a space between its colons, `##[` (the older
/// command syntax, found anywhere in a line) becomes `## [`, a carriage return (a line break
/// to the runner) is shown as `\r`, and other control characters as `\xNN` (terminal escape
/// sequences included).
pub fn ci_safe(text: &str) -> Cow<'_, str> {
    let harmless = |line: &str| {
        !line.trim_start().starts_with("::")
            && !line.contains("##[")
            && !line.chars().any(|c| c.is_control() && c != '\t')
    };
    if text.split('\n').all(harmless) {
        return Cow::Borrowed(text);
    }
    let lines: Vec<String> = text
        .split('\n')
        .map(|line| {
            let mut shown = String::with_capacity(line.len() + 4);
            for c in line.chars() {
                match c {
                    '\t' => shown.push(c),
                    '\r' => shown.push_str("\\r"),
                    c if c.is_control() => shown.push_str(&format!("\\x{:02x}", u32::from(c))),
                    c => shown.push(c),
                }
            }
            let shown = shown.replace("##[", "## [");
            let indent = shown.len() - shown.trim_start().len();
            if shown[indent..].starts_with("::") {
                format!("{}: :{}", &shown[..indent], &shown[indent + 2..])
            } else {
                shown
            }
        })
        .collect();
    Cow::Owned(lines.join("\n"))
}

/// One live progress line.
#[derive(Debug)]
pub struct Task {
    bar: ProgressBar,
    name: String,
    live: bool,
    quiet: bool,
    github: bool,
    json: bool,
    started: Instant,
}

impl Task {
    /// Shows what the task is doing now.
    pub fn phase(&self, message: impl Into<String>) {
        let message = message.into();
        if self.live {
            self.bar.set_message(message);
        } else if !self.quiet {
            self.bar.suspend(|| self.print(&message));
        }
    }

    /// A line for a log (no live line): `  <name>: <message>`, made harmless for the runner.
    fn print(&self, message: &str) {
        let line = if self.json {
            json_line(Level::Info, message, Some(&self.name))
        } else {
            format!("  {}: {message}", self.name)
        };
        let line = if self.github {
            ci_safe(&line)
        } else {
            Cow::Borrowed(line.as_str())
        };
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }

    /// Fine-grained progress (a transfer's percentages): shown on a live line only, so CI
    /// logs get one line per phase rather than one per percent.
    pub fn progress(&self, message: impl Into<String>) {
        if self.live {
            self.bar.set_message(message.into());
        }
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Ends the line with a final message.
    pub fn finish(&self, message: impl Into<String>) {
        let message = message.into();
        if self.live {
            self.bar.finish_with_message(message);
        } else {
            if !self.quiet {
                self.print(&message);
            }
            self.bar.finish_and_clear();
        }
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        if !self.bar.is_finished() {
            self.bar.finish_and_clear();
        }
    }
}

/// tracing writer that suspends the progress lines while it writes (and, in GitHub Actions,
/// makes every line harmless for the runner: log lines quote outside text too).
#[derive(Clone, Debug)]
pub struct BarSafeWriter {
    multi: MultiProgress,
    github: bool,
}

impl Write for BarSafeWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let shown = if self.github { ci_safe(&text) } else { text };
        self.multi
            .suspend(|| std::io::stderr().lock().write_all(shown.as_bytes()))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for BarSafeWriter {
    type Writer = BarSafeWriter;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// GitHub workflow commands need `%`, CR and LF escaped in messages; `##[` (the older command
/// syntax, which the runner looks for anywhere in a line) is broken up as [`ci_safe`] does.
fn escape_annotation(message: &str) -> String {
    message
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
        .replace("##[", "## [")
}

fn escape_property(value: &str) -> String {
    escape_annotation(value)
        .replace(':', "%3A")
        .replace(',', "%2C")
}

/// A plain-text table with aligned columns.
pub fn text_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (index, cell) in row.iter().enumerate() {
            if let Some(width) = widths.get_mut(index) {
                *width = (*width).max(cell.chars().count());
            }
        }
    }
    let render = |cells: Vec<&str>| -> String {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        padded.join("  ").trim_end().to_string()
    };
    let mut out = render(headers.to_vec());
    out.push('\n');
    let separator: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&render(separator.iter().map(String::as_str).collect()));
    for row in rows {
        out.push('\n');
        out.push_str(&render(row.iter().map(String::as_str).collect()));
    }
    out
}

/// GitHub-flavoured Markdown (step summaries, `compat --markdown`), built so that text can
/// only enter it escaped: markup comes from string literals in rockbuild's source
/// ([`Markdown::lit`]), everything else through [`Markdown::text`] or [`Markdown::code`], which
/// escape Markdown's punctuation and HTML's `< > &` (a wheel named `<img src=…>` or a test
/// named `[x](javascript:…)` is shown as written, never rendered).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Markdown(String);

impl Markdown {
    pub fn new() -> Self {
        Markdown(String::new())
    }

    /// Markup written in rockbuild's source: only a literal can be one.
    pub fn lit(markup: &'static str) -> Self {
        Markdown(markup.to_string())
    }

    /// Text shown as written: the characters that start Markdown's inline markup (emphasis,
    /// code, links and images, tables, strikethrough, math, headings) backslash-escaped (`_`
    /// only where it could open or close emphasis: not between two letters or digits),
    /// `< > &` as entities (no HTML), line breaks as `<br>`, other control characters dropped.
    pub fn text(text: &str) -> Self {
        let chars: Vec<char> = text.chars().collect();
        let mut out = String::with_capacity(text.len() + 8);
        for (index, &c) in chars.iter().enumerate() {
            let intraword = || {
                index > 0
                    && chars[index - 1].is_alphanumeric()
                    && chars.get(index + 1).is_some_and(|n| n.is_alphanumeric())
            };
            match c {
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '&' => out.push_str("&amp;"),
                '\n' => out.push_str("<br>"),
                c if c.is_control() => {}
                '_' if intraword() => out.push(c),
                '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '#' | '$' => {
                    out.push('\\');
                    out.push(c);
                }
                c => out.push(c),
            }
        }
        Markdown(out)
    }

    /// Text shown as written, as an inline code span (whose content Markdown never reads as
    /// markup or HTML): fenced with more backticks than any run inside it, line breaks as
    /// spaces, `|` escaped for tables.
    pub fn code(text: &str) -> Self {
        let body: String = text
            .chars()
            .map(|c| if matches!(c, '\n' | '\r') { ' ' } else { c })
            .filter(|c| !c.is_control())
            .collect::<String>()
            .replace('|', "\\|");
        let mut longest = 0;
        let mut run = 0;
        for c in body.chars() {
            run = if c == '`' { run + 1 } else { 0 };
            longest = longest.max(run);
        }
        let fence = "`".repeat(longest + 1);
        let pad = if body.starts_with('`') || body.ends_with('`') {
            " "
        } else {
            ""
        };
        Markdown(format!("{fence}{pad}{body}{pad}{fence}"))
    }

    /// Lines shown as written, in a fenced code block whose fence is longer than any run of
    /// backticks in them (so nothing in them ends the block).
    pub fn code_block(text: &str) -> Self {
        let mut longest = 0;
        let mut run = 0;
        for c in text.chars() {
            run = if c == '`' { run + 1 } else { 0 };
            longest = longest.max(run);
        }
        let fence = "`".repeat((longest + 1).max(3));
        let body: String = text
            .chars()
            .filter(|c| !c.is_control() || matches!(c, '\n' | '\t'))
            .collect();
        Markdown(format!("{fence}\n{}\n{fence}\n", body.trim_end()))
    }

    pub fn push(&mut self, more: Markdown) -> &mut Self {
        self.0.push_str(&more.0);
        self
    }

    pub fn push_lit(&mut self, markup: &'static str) -> &mut Self {
        self.0.push_str(markup);
        self
    }

    pub fn push_text(&mut self, text: &str) -> &mut Self {
        self.push(Markdown::text(text))
    }

    /// Items separated by a literal (`, `).
    pub fn join(items: impl IntoIterator<Item = Markdown>, separator: &'static str) -> Markdown {
        let mut out = Markdown::new();
        for (index, item) in items.into_iter().enumerate() {
            if index > 0 {
                out.push_lit(separator);
            }
            out.push(item);
        }
        out
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Display for Markdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A GitHub-flavoured Markdown table whose cells are text (escaped: a `|` in a cell never
/// splits it, a line break never ends the row).
pub fn markdown_table(headers: &[&str], rows: &[Vec<String>]) -> Markdown {
    markdown_table_of(
        headers,
        rows.iter()
            .map(|row| row.iter().map(|cell| Markdown::text(cell)).collect())
            .collect(),
    )
}

/// A GitHub-flavoured Markdown table of cells already in Markdown (headers are text).
pub fn markdown_table_of(headers: &[&str], rows: Vec<Vec<Markdown>>) -> Markdown {
    let mut out = Markdown::new();
    out.push_lit("|");
    for header in headers {
        out.push_lit(" ").push_text(header).push_lit(" |");
    }
    out.push_lit("\n|");
    for _ in headers {
        out.push_lit("---|");
    }
    out.push_lit("\n");
    for row in rows {
        out.push_lit("|");
        for cell in row {
            out.push_lit(" ").push(cell).push_lit(" |");
        }
        out.push_lit("\n");
    }
    out
}

/// `1.5 GiB`, `12.0 MiB`, `512 B`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// The plural `s` of a count's noun: `1 wheel`, `2 wheels`.
pub fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_like_people_write_them() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(10), "10 B");
        assert_eq!(human_bytes(2048), "2.0 KiB");
        assert_eq!(human_bytes(12 << 20), "12.0 MiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
        assert_eq!(plural(1), "");
        assert_eq!(plural(0), "s");
    }

    #[test]
    fn tables_align_and_escape() {
        let rows = vec![
            vec!["torch".to_string(), "release/2.9".to_string()],
            vec!["vision".to_string(), "a|b".to_string()],
        ];
        assert_eq!(
            text_table(&["project", "ref"], &rows),
            "project  ref\n-------  -----------\ntorch    release/2.9\nvision   a|b"
        );
        assert_eq!(
            markdown_table(&["project", "ref"], &rows).as_str(),
            "| project | ref |\n|---|---|\n| torch | release/2.9 |\n| vision | a\\|b |\n"
        );
    }

    #[test]
    fn outside_text_is_harmless_in_logs_and_summaries() {
        assert_eq!(ci_safe("torch: fetching main"), "torch: fetching main");
        assert_eq!(
            ci_safe("error: bad version `1.0\n  ::error title=x::pwned`"),
            "error: bad version `1.0\n  : :error title=x::pwned`"
        );
        assert_eq!(
            ci_safe("ok ##[add-mask]secret\rnext \x1b[31m"),
            "ok ## [add-mask]secret\\rnext \\x1b[31m"
        );
        assert_eq!(
            Markdown::text("<img src=x> *b* [l](javascript:x) a|b\nc _e_ snake_case").as_str(),
            "&lt;img src=x&gt; \\*b\\* \\[l\\](javascript:x) a\\|b<br>c \\_e\\_ snake_case"
        );
        assert_eq!(Markdown::code("a`b").as_str(), "``a`b``");
        assert_eq!(Markdown::code("`x|<y>\n").as_str(), "`` `x\\|<y>  ``");
    }

    #[test]
    fn annotations_are_escaped() {
        assert_eq!(escape_annotation("50% done\nnext"), "50%25 done%0Anext");
        assert_eq!(escape_property("a: b, c"), "a%3A b%2C c");
    }
}
