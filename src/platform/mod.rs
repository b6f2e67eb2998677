//! The platform seam: the one place where Linux and Windows differ.
//!
//! It has two halves, because "the platform" means two things:
//!
//! * [`Platform`], the platform a plan is **for**: pure data that settings pick (`--platform`,
//!   else the host) and plans take as input. It knows the venv layout (`bin/python` or
//!   `Scripts\python.exe`), executable names (`.exe`), the path-list separator (`:` or `;`),
//!   how an inherited variable is written, and the shared-library format a wheel's checks
//!   expect (ELF or PE/COFF). Any host can plan for any platform: `rockbuild plan --platform
//!   windows` on Linux is pure and prints a Windows plan.
//! * [`host`], what the machine rockbuild **runs on** does differently: process trees and
//!   signals (process groups and SIGTERM, or Job Objects), file stat data and identity,
//!   positional reads, free disk space, thread priority. These are the only `cfg(unix)` and
//!   `cfg(windows)` of the crate, and the only users of `std::os::unix`, `libc` and
//!   `signal-hook` (a test keeps it so: `tests/it/platform_seam.rs`).
//!
//! Where the standard library is already cross-platform it is used directly and needs no
//! seam: file locks (`File::lock`, `try_lock`), atomic replace (`tempfile`'s `persist`,
//! MoveFileEx on Windows), `std::env::split_paths` for the host's PATH.
//!
//! Adding a platform: a variant of [`Platform`] (every `match` on it then fails to compile
//! until the new platform answers each question), and, when rockbuild itself must run there,
//! a `host/<family>.rs` beside `unix.rs` and `windows.rs` with the same functions.

pub mod host;

use std::fmt;
use std::path::{Path, PathBuf};

/// The platform a plan, a venv or a wheel is for.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    Linux,
    Windows,
}

/// The file format of the native libraries and extension modules in a wheel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LibraryFormat {
    /// ELF shared objects (`.so`).
    Elf,
    /// PE/COFF DLLs and extension modules (`.dll`, `.pyd`).
    Pe,
}

impl Platform {
    /// The platform rockbuild runs on.
    pub const fn host() -> Platform {
        if cfg!(windows) {
            Platform::Windows
        } else {
            Platform::Linux
        }
    }

    pub fn is_host(self) -> bool {
        self == Platform::host()
    }

    pub fn name(self) -> &'static str {
        match self {
            Platform::Linux => "linux",
            Platform::Windows => "windows",
        }
    }

    /// The venv's directory of executables (`bin`, `Scripts`).
    pub fn venv_scripts(self) -> &'static str {
        match self {
            Platform::Linux => "bin",
            Platform::Windows => "Scripts",
        }
    }

    /// The venv's interpreter: `<venv>/bin/python`, `<venv>\Scripts\python.exe`.
    pub fn venv_python(self, venv: &Path) -> PathBuf {
        venv.join(self.venv_scripts())
            .join(self.executable("python"))
    }

    /// The venv's `lib` directory, under which `site-packages` lives (`lib/python3.X/` on
    /// Linux, directly under `Lib\` on Windows).
    pub fn venv_lib(self) -> &'static str {
        match self {
            Platform::Linux => "lib",
            Platform::Windows => "Lib",
        }
    }

    /// The file name of program `name`: `git`, `git.exe`.
    pub fn executable(self, name: &str) -> String {
        match self {
            Platform::Linux => name.to_string(),
            Platform::Windows => format!("{name}.exe"),
        }
    }

    /// Separator of path lists (`PATH`, `PYTHONPATH`, `LD_LIBRARY_PATH`).
    pub fn path_list_separator(self) -> char {
        match self {
            Platform::Linux => ':',
            Platform::Windows => ';',
        }
    }

    /// `a<sep>b<sep>c`: a path list of this platform.
    pub fn join_path_list<S: AsRef<str>>(self, parts: impl IntoIterator<Item = S>) -> String {
        let mut joined = String::new();
        for part in parts {
            if !joined.is_empty() {
                joined.push(self.path_list_separator());
            }
            joined.push_str(part.as_ref());
        }
        joined
    }

    /// How a plan for this platform writes the value of `variable` inherited from the machine
    /// it runs on, when that machine is not this one: `$PATH`, `%PATH%`.
    pub fn inherited(self, variable: &str) -> String {
        match self {
            Platform::Linux => format!("${variable}"),
            Platform::Windows => format!("%{variable}%"),
        }
    }

    /// The format of the native libraries a wheel for this platform carries.
    pub fn library_format(self) -> LibraryFormat {
        match self {
            Platform::Linux => LibraryFormat::Elf,
            Platform::Windows => LibraryFormat::Pe,
        }
    }

    /// The platform a wheel's platform tag is for (`linux_x86_64`, `manylinux_2_28_x86_64`,
    /// `win_amd64`); `None` for `any` and platforms rockbuild does not build for.
    pub fn of_wheel_tag(tag: &str) -> Option<Platform> {
        if tag.starts_with("linux_") || tag.starts_with("manylinux") {
            Some(Platform::Linux)
        } else if tag.starts_with("win") {
            Some(Platform::Windows)
        } else {
            None
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl LibraryFormat {
    /// The first bytes of a file of this format.
    pub const fn magic(self) -> &'static [u8] {
        match self {
            LibraryFormat::Elf => b"\x7fELF",
            LibraryFormat::Pe => b"MZ",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            LibraryFormat::Elf => "ELF",
            LibraryFormat::Pe => "PE/COFF",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn venv_layout_and_names_per_platform() {
        let venv = Path::new("/w/venv");
        assert_eq!(
            Platform::Linux.venv_python(venv),
            Path::new("/w/venv/bin/python")
        );
        assert_eq!(
            Platform::Windows.venv_python(venv),
            Path::new("/w/venv").join("Scripts").join("python.exe")
        );
        assert_eq!(Platform::Windows.executable("git"), "git.exe");
        assert_eq!(Platform::Linux.executable("git"), "git");
        assert_eq!(Platform::Linux.join_path_list(["/a", "/b"]), "/a:/b");
        assert_eq!(
            Platform::Windows.join_path_list(["C:\\a", "C:\\b"]),
            "C:\\a;C:\\b"
        );
        assert_eq!(Platform::Windows.inherited("PATH"), "%PATH%");
        assert_eq!(Platform::Linux.inherited("PATH"), "$PATH");
    }

    #[test]
    fn wheel_tags_name_their_platform_and_library_format() {
        let format = |tag| Platform::of_wheel_tag(tag).map(Platform::library_format);
        assert_eq!(format("linux_x86_64"), Some(LibraryFormat::Elf));
        assert_eq!(format("manylinux_2_28_x86_64"), Some(LibraryFormat::Elf));
        assert_eq!(format("manylinux2014_x86_64"), Some(LibraryFormat::Elf));
        assert_eq!(format("win_amd64"), Some(LibraryFormat::Pe));
        assert_eq!(format("any"), None);
        assert_eq!(format("macosx_11_0_arm64"), None);
    }
}
