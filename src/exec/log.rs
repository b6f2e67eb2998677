//! The log file of one step: a header with the repro line, every output line (masked), a
//! footer with how the step ended. Appended to, so every attempt of a retried step is there.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::ProcessError;

/// An open step log, or none when the step has no log file.
pub(super) struct StepLog {
    file: Option<(std::fs::File, PathBuf)>,
}

impl StepLog {
    /// Opens (creating its directory) the log file at `path`, if there is one.
    pub(super) fn open(path: Option<&Path>) -> Result<StepLog, ProcessError> {
        let Some(path) = path else {
            return Ok(StepLog { file: None });
        };
        let open = || -> std::io::Result<std::fs::File> {
            // The log's own directory (an output directory's `logs/`) may not be a link;
            // what holds it is the user's to choose.
            if let Some(parent) = path.parent() {
                match parent.parent() {
                    Some(above) => crate::fsutil::create_dirs_below(above, parent, None)?,
                    None => fs_err::create_dir_all(parent)?,
                }
            }
            crate::fsutil::append(path)
        };
        let file = open().map_err(|source| ProcessError::Log {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(StepLog {
            file: Some((file, path.to_path_buf())),
        })
    }

    pub(super) fn header(
        &mut self,
        label: &str,
        attempt: u32,
        repro: &str,
    ) -> Result<(), ProcessError> {
        let started_at = jiff::Timestamp::now();
        self.write(&format!(
            "==> {started_at} {label} (attempt {attempt})\n$ {repro}\n"
        ))
    }

    pub(super) fn line(&mut self, line: &str) -> Result<(), ProcessError> {
        self.write(&format!("{line}\n"))
    }

    pub(super) fn footer(&mut self, ending: &str, after: Duration) -> Result<(), ProcessError> {
        self.write(&format!("==> {ending} after {:.1}s\n", after.as_secs_f64()))
    }

    fn write(&mut self, text: &str) -> Result<(), ProcessError> {
        let Some((file, path)) = self.file.as_mut() else {
            return Ok(());
        };
        file.write_all(text.as_bytes())
            .map_err(|source| ProcessError::Log {
                path: path.clone(),
                source,
            })
    }
}
