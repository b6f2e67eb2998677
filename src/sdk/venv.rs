//! A Python virtual environment as rockbuild uses it: its interpreter, its site-packages and
//! what is installed there, read from files (dist-info directories, pyvenv.cfg) so that
//! `plan` can describe a venv without starting Python.

use std::path::{Path, PathBuf};

use crate::platform::Platform;
use crate::wheel::filename::escape_name;

/// Name of the file where rockbuild records what the installed SDK reported (see
/// [`super::SdkInfo`]); lets `plan` show real paths without running Python.
pub const SDK_RECORD: &str = "rockbuild-sdk.json";

/// Written into a venv's directory before rockbuild creates the venv and removed once it is
/// complete: a venv that still holds it was interrupted half-way (an interpreter, no pip yet)
/// and is made again instead of failing every later run with `No module named pip`.
pub const CREATING: &str = ".rockbuild-creating";

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Venv {
    pub dir: PathBuf,
    /// The platform whose layout the venv has.
    #[serde(skip)]
    pub platform: Platform,
}

impl Venv {
    /// A venv on this machine.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Venv::for_platform(dir, Platform::host())
    }

    /// A venv with `platform`'s layout (a plan for another platform names one).
    pub fn for_platform(dir: impl Into<PathBuf>, platform: Platform) -> Self {
        Venv {
            dir: dir.into(),
            platform,
        }
    }

    /// `bin/python`, `Scripts\python.exe`.
    pub fn python(&self) -> PathBuf {
        self.platform.venv_python(&self.dir)
    }

    /// `bin`, `Scripts`.
    pub fn bin(&self) -> PathBuf {
        self.dir.join(self.platform.venv_scripts())
    }

    /// True when the directory holds a complete venv (its interpreter exists, and its
    /// creation was not interrupted).
    pub fn exists(&self) -> bool {
        self.python().exists() && self.dir.join("pyvenv.cfg").is_file() && !self.interrupted()
    }

    /// True when rockbuild's creation of this venv was interrupted.
    pub fn interrupted(&self) -> bool {
        self.dir.join(CREATING).exists()
    }

    /// Creates the venv with `create` (`python -m venv DIR`), marked as being created until
    /// it is complete; one whose creation was interrupted is removed first.
    pub fn create(
        &self,
        runner: &crate::exec::Runner,
        create: &crate::exec::Cmd,
        status: &dyn Fn(&str),
    ) -> Result<(), super::Error> {
        let io = |source| super::Error::Venv {
            path: self.dir.clone(),
            source,
        };
        if self.interrupted() {
            status(&format!(
                "the venv {} was interrupted while being created: making it again",
                self.dir.display()
            ));
            fs_err::remove_dir_all(&self.dir).map_err(io)?;
        }
        fs_err::create_dir_all(&self.dir).map_err(io)?;
        let marker = self.dir.join(CREATING);
        crate::fsutil::write(&marker, b"").map_err(io)?;
        runner.run(create)?;
        fs_err::remove_file(&marker).map_err(io)
    }

    pub fn sdk_record(&self) -> PathBuf {
        self.dir.join(SDK_RECORD)
    }

    /// The Python version the venv was created with, from pyvenv.cfg (`version = 3.11.7`, or
    /// `version_info = 3.11.7` as uv writes it).
    pub fn python_version(&self) -> Option<String> {
        let text =
            crate::input::read_text(&self.dir.join("pyvenv.cfg"), crate::input::RECORD).ok()?;
        text.lines().find_map(|line| {
            let (key, value) = line.split_once('=')?;
            matches!(key.trim(), "version" | "version_info").then(|| value.trim().to_string())
        })
    }

    /// `lib/python3.X/site-packages` (`Lib\site-packages`).
    pub fn site_packages(&self) -> Option<PathBuf> {
        let lib = self.dir.join(self.platform.venv_lib());
        if self.platform == Platform::Windows {
            return Some(lib.join("site-packages")).filter(|p| p.is_dir());
        }
        let entries = fs_err::read_dir(&lib).ok()?;
        let mut found: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path().join("site-packages"))
            .filter(|p| p.is_dir())
            .collect();
        found.sort();
        found.pop()
    }

    /// The installed version of distribution `name`, from its `.dist-info` directory name.
    pub fn installed_version(&self, name: &str) -> Option<String> {
        installed_version_in(&self.site_packages()?, name)
    }
}

/// The core metadata (`METADATA`) of installed distribution `name`.
pub fn installed_metadata_in(site_packages: &Path, name: &str) -> Option<String> {
    let version = installed_version_in(site_packages, name)?;
    let entries = fs_err::read_dir(site_packages).ok()?;
    let wanted = (escape_name(name), version);
    entries.filter_map(Result::ok).find_map(|entry| {
        let file_name = entry.file_name();
        let stem = file_name.to_str()?.strip_suffix(".dist-info")?;
        let (dist, version) = stem.split_once('-')?;
        (escape_name(dist) == wanted.0 && version == wanted.1)
            .then(|| {
                crate::input::read_text(&entry.path().join("METADATA"), crate::input::RECORD).ok()
            })
            .flatten()
    })
}

/// Scans a site-packages directory for `<name>-<version>.dist-info`.
pub fn installed_version_in(site_packages: &Path, name: &str) -> Option<String> {
    let wanted = escape_name(name);
    let entries = fs_err::read_dir(site_packages).ok()?;
    entries.filter_map(Result::ok).find_map(|entry| {
        let file_name = entry.file_name();
        let stem = file_name.to_str()?.strip_suffix(".dist-info")?;
        let (dist, version) = stem.split_once('-')?;
        (escape_name(dist) == wanted).then(|| version.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_python_version_and_installed_packages_from_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let venv = Venv::new(dir.path());
        assert!(!venv.exists());
        fs_err::create_dir_all(venv.bin()).expect("bin");
        fs_err::write(venv.python(), "").expect("python");
        fs_err::write(
            dir.path().join("pyvenv.cfg"),
            "home = /usr/bin\nversion = 3.11.7\n",
        )
        .expect("cfg");
        let site = dir.path().join("lib/python3.11/site-packages");
        fs_err::create_dir_all(site.join("rocm_sdk_core-7.10.0a1.dist-info")).expect("dist-info");
        fs_err::create_dir_all(site.join("rocm-7.10.0a1.dist-info")).expect("dist-info");
        assert!(venv.exists());
        assert_eq!(venv.python_version().as_deref(), Some("3.11.7"));
        assert_eq!(venv.installed_version("rocm").as_deref(), Some("7.10.0a1"));
        assert_eq!(
            venv.installed_version("rocm-sdk-core").as_deref(),
            Some("7.10.0a1")
        );
        assert_eq!(venv.installed_version("torch"), None);
    }
}
