//! Which DLLs a Windows wheel may import without carrying them: those every Windows machine
//! that can run it provides. An import outside this rule must be found in the set (the
//! product wheels or the ROCm SDK's companion wheels), or the wheel fails to load where they
//! are not installed.
//!
//! The rule, in the order it is applied (names compare without regard to case, as the loader
//! compares them):
//!
//! 1. **API sets** — `api-ms-win-*` and `ext-ms-*`: virtual names the loader maps through the
//!    API set schema of the running Windows (this covers the Universal CRT's
//!    `api-ms-win-crt-*`).
//! 2. **C and C++ runtimes** — the Universal CRT (`ucrtbase.dll`), the system's own CRT
//!    (`msvcrt.dll`, what MinGW-w64 links), and the Visual C++ redistributable's libraries,
//!    named `<library><toolset version>[_<n>].dll`: `vcruntime140.dll`, `vcruntime140_1.dll`,
//!    `msvcp140.dll`, `msvcp140_2.dll`, `concrt140.dll`, `vcomp140.dll`, `vccorlib140.dll`.
//!    PyTorch documents the redistributable as a prerequisite, and Python itself ships
//!    `vcruntime140.dll`. Not LLVM's OpenMP (`libomp140.x86_64.dll`): that one is not part of
//!    the redistributable, which is why the reference copies it into `torch/lib`.
//! 3. **The Python interpreter** — `python3.dll` (the stable ABI) and `python3<minor>.dll`:
//!    the interpreter that imports the extension module has it loaded.
//! 4. **Windows' own API DLLs** — `kernel32.dll`, `user32.dll`, `advapi32.dll`, …: these have
//!    no naming rule, so they are the one table here: the DLLs of the Win32 API umbrella that
//!    every supported Windows (10 and later, Server 2016 and later) has in `System32`.
//!    Driver-supplied DLLs (the GPU driver's) are not in it: a wheel that needs one of them
//!    says so by carrying or documenting it, never silently.

/// Why a DLL is provided by every machine the wheel runs on, or `None`.
pub fn provided_by_system(dll: &str) -> Option<&'static str> {
    let name = dll.to_ascii_lowercase();
    let stem = name.strip_suffix(".dll")?;
    if stem.starts_with("api-ms-win-") || stem.starts_with("ext-ms-") {
        return Some("an API set of Windows");
    }
    if stem == "ucrtbase" || stem == "msvcrt" || is_msvc_runtime(stem) {
        return Some("the C/C++ runtime of Windows and the Visual C++ redistributable");
    }
    if stem == "python3"
        || stem
            .strip_prefix("python3")
            .is_some_and(|minor| !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit()))
    {
        return Some("the Python interpreter");
    }
    if WINDOWS_API.binary_search(&stem).is_ok() {
        return Some("a DLL of Windows");
    }
    None
}

/// The Visual C++ redistributable's libraries: `<library><toolset>` with an optional `_<n>`
/// or `_<part>` suffix (`vcruntime140_1`, `msvcp140_atomic_wait`, `msvcp140_codecvt_ids`).
fn is_msvc_runtime(stem: &str) -> bool {
    const LIBRARIES: [&str; 5] = ["vcruntime", "msvcp", "concrt", "vcomp", "vccorlib"];
    LIBRARIES.iter().any(|library| {
        stem.strip_prefix(library).is_some_and(|rest| {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            let suffix = &rest[digits..];
            digits >= 2
                && (suffix.is_empty()
                    || suffix.strip_prefix('_').is_some_and(|part| {
                        !part.is_empty()
                            && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    }))
        })
    })
}

/// Windows' own API DLLs (rule 4), sorted, without `.dll`.
const WINDOWS_API: &[&str] = &[
    "advapi32",
    "bcrypt",
    "cfgmgr32",
    "comctl32",
    "comdlg32",
    "crypt32",
    "d3d11",
    "d3d12",
    "dbghelp",
    "dnsapi",
    "dwmapi",
    "dxcore",
    "dxgi",
    "gdi32",
    "imagehlp",
    "imm32",
    "iphlpapi",
    "kernel32",
    "kernelbase",
    "mpr",
    "msimg32",
    "mswsock",
    "ncrypt",
    "netapi32",
    "normaliz",
    "ntdll",
    "ole32",
    "oleaut32",
    "opengl32",
    "pdh",
    "powrprof",
    "psapi",
    "rpcrt4",
    "secur32",
    "setupapi",
    "shell32",
    "shlwapi",
    "user32",
    "userenv",
    "uxtheme",
    "version",
    "winhttp",
    "wininet",
    "winmm",
    "wintrust",
    "wldap32",
    "ws2_32",
    "wsock32",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_for_its_search() {
        assert!(WINDOWS_API.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn applies_the_rule() {
        for (dll, why) in [
            ("api-ms-win-crt-runtime-l1-1-0.dll", "API set"),
            ("API-MS-WIN-CORE-SYNCH-L1-2-0.DLL", "API set"),
            ("ext-ms-win-ntuser-window-l1-1-0.dll", "API set"),
            ("VCRUNTIME140.dll", "runtime"),
            ("vcruntime140_1.dll", "runtime"),
            ("MSVCP140.dll", "runtime"),
            ("msvcp140_atomic_wait.dll", "runtime"),
            ("vcomp140.dll", "runtime"),
            ("ucrtbase.dll", "runtime"),
            ("msvcrt.dll", "runtime"),
            ("python312.dll", "Python"),
            ("python3.dll", "Python"),
            ("KERNEL32.dll", "Windows"),
            ("ws2_32.dll", "Windows"),
        ] {
            let found = provided_by_system(dll).unwrap_or_else(|| panic!("{dll} not provided"));
            assert!(found.contains(why), "{dll}: {found}");
        }
        for dll in [
            "libomp140.x86_64.dll",
            "amdhip64_7.dll",
            "uv.dll",
            "c10.dll",
            "msvcp.dll",
            "vcruntime140_.dll",
            "python3x.dll",
            "kernel32",
            "api-ms-win-core.so",
        ] {
            assert_eq!(provided_by_system(dll), None, "{dll}");
        }
    }
}
