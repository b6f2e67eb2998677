//! The output facade. stdout carries only data (plans, JSON, tables a script may parse);
//! everything for people goes to stderr: status lines, one progress line per task, warnings.
//! On a terminal the tasks are live indicatif lines; elsewhere (CI logs) each phase change is
//! printed as a plain line. In GitHub Actions failures also become `::error::` annotations and
//! summaries are appended to `$GITHUB_STEP_SUMMARY`.

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
    step_summary: Option<PathBuf>,
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
            step_summary: env
                .non_empty(env_vars::GITHUB_STEP_SUMMARY)
                .map(PathBuf::from),
        }
    }

    /// A writer for tracing that does not tear the live progress lines.
    pub fn log_writer(&self) -> BarSafeWriter {
        BarSafeWriter(self.multi.clone())
    }

    /// A status line for people.
    pub fn status(&self, message: impl AsRef<str>) {
        if !self.quiet {
            self.eprintln(message.as_ref());
        }
    }

    /// A warning the user can act on.
    pub fn warn(&self, message: impl AsRef<str>) {
        let message = message.as_ref();
        if self.github {
            self.eprintln(&format!("::warning::{}", escape_annotation(message)));
        } else {
            self.eprintln(&format!("warning: {message}"));
        }
    }

    /// Something the user should know that is not a problem (GitHub: a notice annotation).
    pub fn note(&self, message: impl AsRef<str>) {
        let message = message.as_ref();
        if self.github {
            self.eprintln(&format!("::notice::{}", escape_annotation(message)));
        } else if !self.quiet {
            self.eprintln(&format!("note: {message}"));
        }
    }

    /// Reports a failure; in GitHub Actions also as an error annotation.
    pub fn error_annotation(&self, title: &str, message: &str) {
        if self.github {
            self.eprintln(&format!(
                "::error title={}::{}",
                escape_property(title),
                escape_annotation(message)
            ));
        }
    }

    /// Prints a block folded under a title in GitHub Actions logs.
    pub fn group(&self, title: &str, body: &str) {
        if self.github {
            self.eprintln(&format!("::group::{title}\n{body}\n::endgroup::"));
        } else {
            self.eprintln(&format!("{title}\n{body}"));
        }
    }

    /// Writes data to stdout (never hidden by `--quiet`).
    pub fn data(&self, text: &str) {
        self.multi.suspend(|| {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(text.as_bytes());
            if !text.ends_with('\n') {
                let _ = stdout.write_all(b"\n");
            }
        });
    }

    /// Appends Markdown to the GitHub step summary when running in GitHub Actions.
    pub fn step_summary(&self, markdown: &str) {
        let Some(path) = &self.step_summary else {
            return;
        };
        let result = crate::fsutil::append(path)
            .and_then(|mut file| file.write_all(format!("{markdown}\n").as_bytes()));
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
            started: Instant::now(),
        }
    }

    fn eprintln(&self, line: &str) {
        self.multi.suspend(|| {
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        });
    }
}

/// One live progress line.
#[derive(Debug)]
pub struct Task {
    bar: ProgressBar,
    name: String,
    live: bool,
    quiet: bool,
    started: Instant,
}

impl Task {
    /// Shows what the task is doing now.
    pub fn phase(&self, message: impl Into<String>) {
        let message = message.into();
        if self.live {
            self.bar.set_message(message);
        } else if !self.quiet {
            self.bar.suspend(|| eprintln!("  {}: {message}", self.name));
        }
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
                eprintln!("  {}: {message}", self.name);
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

/// tracing writer that suspends the progress lines while it writes.
#[derive(Clone, Debug)]
pub struct BarSafeWriter(MultiProgress);

impl Write for BarSafeWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.suspend(|| std::io::stderr().lock().write_all(buf))?;
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

/// GitHub workflow commands need `%`, CR and LF escaped in messages.
fn escape_annotation(message: &str) -> String {
    message
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
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

/// A GitHub-flavoured Markdown table.
pub fn markdown_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let escape = |cell: &str| cell.replace('|', "\\|");
    let mut out = format!("| {} |\n", headers.join(" | "));
    out.push_str(&format!("|{}\n", "---|".repeat(headers.len())));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| escape(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
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
            markdown_table(&["project", "ref"], &rows),
            "| project | ref |\n|---|---|\n| torch | release/2.9 |\n| vision | a\\|b |\n"
        );
    }

    #[test]
    fn annotations_are_escaped() {
        assert_eq!(escape_annotation("50% done\nnext"), "50%25 done%0Anext");
        assert_eq!(escape_property("a: b, c"), "a%3A b%2C c");
    }
}
