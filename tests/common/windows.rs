//! Real Windows images for tests: DLLs and extension modules linked by Debian's MinGW-w64
//! (`x86_64-w64-mingw32-gcc`), importing each other, KERNEL32 and DLLs that are not present
//! (import libraries made by `dlltool` from a `.def`, as for `amdhip64_7.dll`), some
//! delay-loaded, and GPU code as clang lays out a HIP translation unit's host object
//! (CGCUDANV.cpp): an offload bundle made by Debian's `clang-offload-bundler` from code
//! objects hipcc compiled, page-aligned in `.hip_fat`, and its `__CudaFatBinaryWrapper`
//! (magic `HIPF`, version 1, a pointer to the bundle) in `.hipFatB`, registered by a module
//! constructor through `__hipRegisterFatBinary` (the names MSVC's link and lld-link give
//! `.hip_fatbin` and `.hipFatBinSegment` in an image). Built once per test run and cached
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
    /// gfx targets of the HIP kernel whose offload bundle the image carries (its imports
    /// must then name `__hipRegisterFatBinary`).
    pub gpu_targets: &'a [&'a str],
    /// Linked as MSVC's link and lld-link write images: no COFF symbol table or DWARF
    /// sections (`-s`), their default base for a 64-bit DLL (0x180000000, where GNU ld
    /// derives one from the output's path), no time stamp and no checksum (reproducible bytes).
    pub stripped: bool,
}

const HIP_KERNEL: &str = "#include <hip/hip_runtime.h>\n\
__global__ void scale(float* x, float f) { x[threadIdx.x] *= f; }\n";

/// The bundle where clang puts it: `__hip_fatbin`, 4096-aligned, in `.hip_fat`.
const HIP_FATBIN: &str = "\t.section .hip_fat,\"dr\"\n\t.p2align 12\n\t.globl __hip_fatbin\n\
__hip_fatbin:\n\t.incbin \"fat.bin\"\n";

/// The host side of a HIP translation unit: its fat binary wrapper and the module
/// constructor that registers it with the runtime.
const HIP_MODULE: &str = "struct wrapper { unsigned magic, version; const void *binary; void *reserved; };\n\
extern const char __hip_fatbin[];\n\
__attribute__((section(\".hipFatB\"), used, aligned(8)))\n\
static const struct wrapper __hip_fatbin_wrapper = { 0x48495046u, 1u, __hip_fatbin, 0 };\n\
void **__hipRegisterFatBinary(const void *);\n\
void **__hip_gpubin_handle;\n\
__attribute__((constructor)) static void __hip_module_ctor(void) {\n\
  __hip_gpubin_handle = __hipRegisterFatBinary(&__hip_fatbin_wrapper);\n}\n";

/// Finishes a linked PE32+ image as MSVC's link and lld-link would have written it: data
/// directory 13 pointed at its delay-load descriptors (argv: image, descriptor VA in hex or
/// empty, table size), and its CheckSum: 0 for a `stripped` image (their default), else
/// recomputed over the patched bytes as GNU ld computed it over the unpatched ones
/// (imagehlp's `CheckSumMappedFile`).
const FINISH: &str = "import struct, sys
path, va, size, stripped = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == '1'
image = bytearray(open(path, 'rb').read())
optional = struct.unpack_from('<I', image, 0x3c)[0] + 24
assert struct.unpack_from('<H', image, optional)[0] == 0x20b
base = struct.unpack_from('<Q', image, optional + 24)[0]
if va:
    struct.pack_into('<II', image, optional + 112 + 13 * 8, int(va, 16) - base, size)
struct.pack_into('<I', image, optional + 64, 0)
if not stripped:
    total = 0
    for i in range(0, len(image), 2):
        total += image[i] | (image[i + 1] << 8 if i + 1 < len(image) else 0)
        total = (total & 0xffff) + (total >> 16)
    total = (total & 0xffff) + (total >> 16)
    struct.pack_into('<I', image, optional + 64, total + len(image))
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
    script.push_str("x86_64-w64-mingw32-gcc -O1 -c \"$1\" -o image.o\nobjects=image.o\n");
    if !image.gpu_targets.is_empty() {
        assert!(
            image
                .imports
                .iter()
                .any(|i| i.functions.contains(&"__hipRegisterFatBinary")),
            "an image with GPU code imports __hipRegisterFatBinary"
        );
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
             cat > fatbin.s <<'S'\n{HIP_FATBIN}S\n\
             cat > module.c <<'C'\n{HIP_MODULE}C\n\
             x86_64-w64-mingw32-as fatbin.s -o fatbin.o\n\
             x86_64-w64-mingw32-gcc -O1 -c module.c -o module.o\n\
             objects=\"$objects module.o fatbin.o\"\n",
            bundle_targets.join(","),
            inputs.join(" ")
        ));
    }
    script.push_str(&format!(
        "printf 'LIBRARY {}\\n' > self.def\n\
         x86_64-w64-mingw32-gcc -shared {}-Wl,-Map=image.map -o \"$2\" $objects self.def $libs\n",
        image.name,
        if image.stripped {
            "-s -Wl,--no-insert-timestamp,--image-base=0x180000000 "
        } else {
            ""
        }
    ));
    // GNU ld 2.40 (Debian 12) writes dlltool's delay-load descriptors but leaves the data
    // directory that points at them (13) empty, which MSVC's link and lld-link fill in: fill
    // it in as they do, from the descriptor's symbol (read in the link map: a stripped image
    // has no symbol table). GNU ld places each DLL's descriptor apart (and none null after
    // them), so only one DLL is delay-loaded here.
    assert!(
        image.delay_imports.len() <= 1,
        "one delay-loaded DLL at most"
    );
    script.push_str(&format!(
        "addr=$(awk '/ __DELAY_IMPORT_DESCRIPTOR_/ {{print $1; exit}}' image.map)\n\
         python3 - \"$2\" \"$addr\" {} {} <<'PY'\n{FINISH}PY\n",
        image.delay_imports.len() * 32,
        u8::from(image.stripped)
    ));
    let mut key = vec![
        "mingw",
        image.name,
        if image.stripped { "stripped" } else { "" },
    ];
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
