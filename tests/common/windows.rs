//! Real Windows images for tests: DLLs and extension modules linked by Debian's MinGW-w64
//! (`x86_64-w64-mingw32-gcc`), importing each other, KERNEL32 and DLLs that are not present
//! (import libraries made by `dlltool` from a `.def`, as for `amdhip64_7.dll`), some
//! delay-loaded, and GPU code: an offload bundle made by Debian's `clang-offload-bundler`
//! from code objects hipcc compiled, put in a `.hip_fat` section (the name MSVC's link and
//! lld-link give clang's `.hip_fatbin` in an image). Built once per test run and cached
//! (`wheels::cached_build`).

use std::path::PathBuf;
use std::process::Command;

use super::wheels::cached_build;

/// A DLL to link against: its name and the functions the image calls in it.
#[derive(Clone, Copy)]
pub struct Import<'a> {
    pub dll: &'a str,
    pub functions: &'a [&'a str],
}

/// What to link.
#[derive(Clone, Copy, Default)]
pub struct Image<'a> {
    /// The image's own name (its export directory's name, the `LIBRARY` of its `.def`).
    pub name: &'a str,
    /// C source (KERNEL32 and msvcrt come with MinGW).
    pub source: &'a str,
    pub imports: &'a [Import<'a>],
    pub delay_imports: &'a [Import<'a>],
    /// gfx targets of the HIP kernel whose offload bundle the image carries.
    pub gpu_targets: &'a [&'a str],
}

const HIP_KERNEL: &str = "#include <hip/hip_runtime.h>\n\
__global__ void scale(float* x, float f) { x[threadIdx.x] *= f; }\n";

/// Points data directory 13 of a PE32+ image at its delay-load descriptors: argv image,
/// descriptor VA (hex), table size.
const DELAY_DIRECTORY: &str = "import struct, sys
path, va, size = sys.argv[1], int(sys.argv[2], 16), int(sys.argv[3])
image = bytearray(open(path, 'rb').read())
optional = struct.unpack_from('<I', image, 0x3c)[0] + 24
assert struct.unpack_from('<H', image, optional)[0] == 0x20b
base = struct.unpack_from('<Q', image, optional + 24)[0]
struct.pack_into('<II', image, optional + 112 + 13 * 8, va - base, size)
open(path, 'wb').write(image)
";

/// Links `image` with MinGW-w64; returns the cached path of the PE file.
#[track_caller]
pub fn pe_image(image: Image<'_>) -> PathBuf {
    let mut script = String::from("set -eu\nwork=$(dirname \"$2\")\ncd \"$work\"\nlibs=\n");
    for (delay, imports) in [(false, image.imports), (true, image.delay_imports)] {
        for (index, import) in imports.iter().enumerate() {
            let lib = format!("lib{}{index}.a", if delay { "delay" } else { "import" });
            script.push_str(&format!(
                "printf 'LIBRARY {}\\nEXPORTS\\n{}\\n' > {lib}.def\n\
                 x86_64-w64-mingw32-dlltool -d {lib}.def {} {lib}\nlibs=\"$libs {lib}\"\n",
                import.dll,
                import.functions.join("\\n"),
                if delay { "-y" } else { "-l" },
            ));
        }
    }
    script.push_str("x86_64-w64-mingw32-gcc -O1 -c \"$1\" -o image.o\n");
    if !image.gpu_targets.is_empty() {
        script.push_str(&format!("cat > kernel.hip <<'HIP'\n{HIP_KERNEL}HIP\n"));
        let mut bundle_targets = vec!["host-x86_64-pc-windows-msvc".to_string()];
        let mut inputs = vec!["-input=host.o".to_string()];
        for target in image.gpu_targets {
            script.push_str(&format!(
                "ROCM_PATH=/usr /usr/bin/hipcc --cuda-device-only --no-gpu-bundle-output \
                 --offload-arch={target} -c kernel.hip -o {target}.co\n"
            ));
            bundle_targets.push(format!("hipv4-amdgcn-amd-amdhsa--{target}"));
            inputs.push(format!("-input={target}.co"));
        }
        script.push_str(&format!(
            ": > host.o\n/usr/lib/llvm-15/bin/clang-offload-bundler -type=o -targets={} {} \
             -output=fat.bin\n\
             x86_64-w64-mingw32-objcopy --add-section .hip_fat=fat.bin \
             --set-section-flags .hip_fat=contents,alloc,load,readonly,data image.o\n",
            bundle_targets.join(","),
            inputs.join(" ")
        ));
    }
    script.push_str(&format!(
        "printf 'LIBRARY {}\\n' > self.def\n\
         x86_64-w64-mingw32-gcc -shared -o \"$2\" image.o self.def $libs\n",
        image.name
    ));
    if !image.delay_imports.is_empty() {
        // GNU ld 2.40 (Debian 12) writes dlltool's delay-load descriptors but leaves the data
        // directory that points at them (13) empty, which MSVC's link and lld-link fill in:
        // fill it in as they do, from the descriptor's symbol. GNU ld places each DLL's
        // descriptor apart (and none null after them), so only one DLL is delay-loaded here.
        assert!(
            image.delay_imports.len() <= 1,
            "one delay-loaded DLL at most"
        );
        script.push_str(&format!(
            "addr=$(x86_64-w64-mingw32-nm \"$2\" | awk '/ __DELAY_IMPORT_DESCRIPTOR_/ {{print $1; exit}}')\n\
             python3 - \"$2\" \"$addr\" {} <<'PY'\n{DELAY_DIRECTORY}PY\n",
            image.delay_imports.len() * 32
        ));
    }
    let mut key = vec!["mingw", image.name];
    key.extend(image.gpu_targets);
    let imports: Vec<String> = image
        .imports
        .iter()
        .chain(image.delay_imports)
        .map(|i| format!("{}:{}", i.dll, i.functions.join(",")))
        .collect();
    key.extend(imports.iter().map(String::as_str));
    key.push(&script);
    cached_build(&key, "image.c", image.source, |source, output| {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(&script)
            .arg("sh")
            .arg(source)
            .arg(output);
        command
    })
}
