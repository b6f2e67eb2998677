//! The tools a build runs by name, as its PATH resolves them: part of the build cache's key in
//! place of the PATH itself. A different PATH that finds the same compilers (an activated
//! venv, a shell's own additions) changes nothing; a different compiler on the same PATH (an
//! upgrade, another toolchain first) changes every key, as it changes every object file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::env_vars::{self, Environment};
use crate::platform::Platform;

/// What the recipes' builds run by name: the C/C++ compilers setuptools and CMake pick by
/// default, HIP's compiler driver, and the build tools CMake drives.
const BY_NAME: &[&str] = &["cc", "c++", "gcc", "g++", "hipcc", "cmake", "ninja"];

/// Variables naming a compiler the builds use instead of the defaults.
const NAMED_BY: &[&str] = &[env_vars::CC, env_vars::CXX];

/// By name, the tool the build's PATH (`path_list`) finds and its identity: the file it
/// resolves to and the SHA-256 of that file (`absent` when none is found), plus the compilers
/// `CC`/`CXX` name in `base` and the venv's Python. Empty for a plan of another platform,
/// whose PATH is the build machine's.
pub fn resolve(
    platform: Platform,
    path_list: &str,
    base: &Environment,
    python: &Path,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if !platform.is_host() {
        return out;
    }
    let dirs: Vec<PathBuf> = std::env::split_paths(path_list).collect();
    for name in BY_NAME {
        out.insert((*name).to_string(), identity(find(&dirs, name).as_deref()));
    }
    for var in NAMED_BY {
        // `CC="ccache gcc"`: the compiler is the last word that is not an option.
        let Some(program) = base
            .get(var)
            .and_then(|v| v.split_whitespace().rfind(|w| !w.starts_with('-')))
        else {
            continue;
        };
        let path = Path::new(program);
        let found = if path.is_absolute() {
            Some(path.to_path_buf())
        } else {
            find(&dirs, program)
        };
        out.insert(format!("${var}"), identity(found.as_deref()));
    }
    out.insert("python".into(), identity(Some(python)));
    out
}

/// The first executable `name` in `dirs`.
fn find(dirs: &[PathBuf], name: &str) -> Option<PathBuf> {
    let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    dirs.iter().map(|dir| dir.join(&file)).find(|path| {
        fs_err::metadata(path)
            .is_ok_and(|m| m.is_file() && crate::platform::host::is_executable(&m))
    })
}

/// `<file it resolves to> sha256:<digest>`, or `absent`.
fn identity(path: Option<&Path>) -> String {
    let Some(path) = path else {
        return "absent".into();
    };
    let Ok(real) = fs_err::canonicalize(path) else {
        return "absent".into();
    };
    match crate::fsutil::sha256_file(&real) {
        Ok((digest, _)) => format!("{} sha256:{digest}", real.display()),
        Err(_) => format!("{} (unreadable)", real.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_that_finds_the_same_tools_is_the_same_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tools = dir.path().join("tools");
        let venv = dir.path().join("venv/bin");
        let other = dir.path().join("other");
        for d in [&tools, &venv, &other] {
            fs_err::create_dir_all(d).expect("mkdir");
        }
        let write = |path: &Path, text: &str| {
            fs_err::write(path, text).expect("write");
            crate::platform::host::set_executable(path).expect("chmod");
        };
        write(&tools.join("cc"), "cc 1");
        write(&venv.join("python"), "python");
        let python = venv.join("python");
        let base = Environment::from_pairs([("CC", "ccache cc")]);
        let join = |dirs: &[&Path]| {
            std::env::join_paths(dirs)
                .expect("join")
                .to_string_lossy()
                .into_owned()
        };
        let plain = resolve(Platform::host(), &join(&[&tools]), &base, &python);
        // An activated venv puts its bin first: nothing it holds is a tool of the build.
        let activated = resolve(
            Platform::host(),
            &join(&[&venv, &other, &tools]),
            &base,
            &python,
        );
        assert_eq!(plain, activated);
        assert!(plain["cc"].ends_with(&format!("sha256:{}", crate::fsutil::sha256_hex(b"cc 1"))));
        assert_eq!(plain["$CC"], plain["cc"]);
        assert_eq!(plain["ninja"], "absent");
        // Another compiler first on the PATH is another key.
        write(&other.join("cc"), "cc 2");
        let shadowed = resolve(Platform::host(), &join(&[&other, &tools]), &base, &python);
        assert_ne!(plain["cc"], shadowed["cc"]);
        let foreign = if Platform::host() == Platform::Linux {
            Platform::Windows
        } else {
            Platform::Linux
        };
        assert!(resolve(foreign, "", &base, &python).is_empty());
    }
}
