"""PEP 517 backend of the sample torch, standing in for PyTorch's scikit-build-core build.

Entry point, as TheRock runs it:

    python -m build --wheel --no-isolation -Cwheel.force-include.torch/_rocm_init.py=torch/_rocm_init.py

What it honours (the real build's contract, small scale):

    USE_ROCM                    ON/1/TRUE/YES: ROCm build; OFF: CPU-only; unset: ROCm when
                                $ROCM_HOME/bin/hipcc exists (PyTorch auto-detects ROCm)
    ROCM_HOME (or ROCM_PATH)    the ROCm SDK root; required for a ROCm build
    PYTORCH_ROCM_ARCH           targets, a CMake list (`gfx906;gfx1030`, spaces also accepted);
                                required for a ROCm build (no GPU to detect them from)
    CMAKE_PREFIX_PATH           searched for hip/hip-config.cmake, then $ROCM_HOME/lib/cmake
    PYTORCH_BUILD_VERSION       wheel version; needs PYTORCH_BUILD_NUMBER; a build number > 1
                                appends `.post<N>`; unset: version.txt + `+git<sha7>`
    PYTORCH_EXTRA_INSTALL_REQUIREMENTS   `|`-separated requirements -> Requires-Dist
    USE_FLASH_ATTENTION, USE_MEM_EFF_ATTENTION   default ON; ON with no aotriton-supported
                                target (gfx90a, gfx942, gfx950, gfx11*, gfx12*) fails, as
                                aotriton's configure does on an empty target list
    BLAS                        OpenBLAS: torch's CPU linear algebra links OpenBLAS (with its
                                LAPACK) from OpenBLAS_HOME (include/cblas.h, lib/lib<name>.so,
                                <name> = OpenBLAS_LIB_NAME, default openblas), as torch's
                                FindOpenBLAS does; not found is an error. Unset: no BLAS, no
                                LAPACK (torch.linalg refuses). Other values are refused.
    CXX, CXXFLAGS, CPPFLAGS, LDFLAGS, CMAKE_CXX_COMPILER_LAUNCHER   host compile and link
    -Cwheel.force-include.<src>=<dst>   files added to the wheel even though gitignored
                                (torch/_rocm_init.py), as scikit-build-core does

Outputs: dist/torch-<version>-cp3XY-cp3XY-linux_x86_64.whl with torch/lib/libtorch_hip.so
(hipified aten/src/ATen/native/hip/Scale.hip compiled for every target, linked against
libamdhip64), with a BLAS torch/lib/libtorch_cpu.so (torch/csrc/cpu/Linalg.cpp, linked against
it), torch/version.py, and the build record (tools/sample_build_record.py).
"""

import base64
import fnmatch
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from sample_build_record import WHEEL_RECORD_NAME, BuildRecord  # noqa: E402

FORCE_INCLUDE = "wheel.force-include."
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
FLASH_ATTENTION_PREFIXES = ("gfx90a", "gfx942", "gfx950", "gfx11", "gfx12")
TARGET = re.compile(r"^gfx[0-9a-f]+(:(xnack|sramecc)[+-])*$")
REQUIREMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._ -]*\])?\s*([<>=!~]=?.*|@.*|;.*)?$")

# PEP 440 (public spec grammar), for validating and normalising the version.
VERSION = re.compile(
    r"""^\s*v?(?:(?P<epoch>[0-9]+)!)?(?P<release>[0-9]+(?:\.[0-9]+)*)
    (?P<pre>[-_.]?(?P<pre_l>alpha|beta|preview|pre|rc|a|b|c)[-_.]?(?P<pre_n>[0-9]+)?)?
    (?P<post>-(?P<post_n1>[0-9]+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>[0-9]+)?)?
    (?P<dev>[-_.]?dev[-_.]?(?P<dev_n>[0-9]+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$""",
    re.VERBOSE | re.IGNORECASE,
)


class BuildError(Exception):
    pass


def canonical_version(text):
    m = VERSION.match(text)
    if not m:
        raise BuildError(f"'{text}' is not a valid PEP 440 version")
    out = ""
    if m.group("epoch") and int(m.group("epoch")):
        out += f"{int(m.group('epoch'))}!"
    out += ".".join(str(int(p)) for p in m.group("release").split("."))
    if m.group("pre"):
        label = m.group("pre_l").lower()
        label = {"alpha": "a", "beta": "b", "c": "rc", "pre": "rc", "preview": "rc"}.get(label, label)
        out += f"{label}{int(m.group('pre_n') or 0)}"
    if m.group("post"):
        out += f".post{int(m.group('post_n1') or m.group('post_n2') or 0)}"
    if m.group("dev"):
        out += f".dev{int(m.group('dev_n') or 0)}"
    if m.group("local"):
        parts = re.split(r"[-_.]", m.group("local").lower())
        out += "+" + ".".join(str(int(p)) if p.isdigit() else p for p in parts)
    return out


def env_flag(name, default=None):
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    if value.upper() in ("ON", "1", "TRUE", "YES", "Y"):
        return True
    if value.upper() in ("OFF", "0", "FALSE", "NO", "N"):
        return False
    raise BuildError(f"{name}='{value}' is not a boolean (use ON/OFF, 1/0, TRUE/FALSE)")


def git_sha():
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "Unknown"


def torch_version(sha):
    if os.environ.get("PYTORCH_BUILD_VERSION"):
        if os.environ.get("PYTORCH_BUILD_NUMBER") is None:
            raise BuildError("PYTORCH_BUILD_NUMBER must be set when PYTORCH_BUILD_VERSION is set")
        try:
            build_number = int(os.environ["PYTORCH_BUILD_NUMBER"])
        except ValueError:
            raise BuildError(f"PYTORCH_BUILD_NUMBER='{os.environ['PYTORCH_BUILD_NUMBER']}' is not an integer") from None
        version = os.environ["PYTORCH_BUILD_VERSION"]
        if build_number > 1:
            version += ".post" + str(build_number)
    else:
        version = (ROOT / "version.txt").read_text().strip()
        if sha != "Unknown":
            version += "+git" + sha[:7]
    return version


def rocm_targets():
    raw = os.environ.get("PYTORCH_ROCM_ARCH", "")
    if "," in raw:
        raise BuildError(
            f"PYTORCH_ROCM_ARCH='{raw}' is a CMake list: separate targets with ';' (CMake would "
            "read the whole string as one target)"
        )
    targets = [t for t in re.split(r"[;\s]+", raw) if t]
    if not targets:
        raise BuildError(
            "PYTORCH_ROCM_ARCH is not set and there is no GPU to detect targets from; set it, e.g. PYTORCH_ROCM_ARCH='gfx906;gfx1030'"
        )
    for target in targets:
        if not TARGET.match(target):
            raise BuildError(f"PYTORCH_ROCM_ARCH: '{target}' is not a gfx target")
    return targets


def find_hip_config(rocm_home):
    entries = [e for e in re.split(r"[:;]", os.environ.get("CMAKE_PREFIX_PATH", "")) if e]
    candidates = []
    for entry in entries:
        candidates += [Path(entry) / "hip", Path(entry) / "lib" / "cmake" / "hip"]
    candidates.append(Path(rocm_home) / "lib" / "cmake" / "hip")
    for candidate in candidates:
        if (candidate / "hip-config.cmake").exists():
            return candidate / "hip-config.cmake"
    raise BuildError(
        'Could not find a package configuration file provided by "hip" (hip-config.cmake) in '
        f"CMAKE_PREFIX_PATH={os.environ.get('CMAKE_PREFIX_PATH', '')!r} or {rocm_home}/lib/cmake"
    )


def hip_version(rocm_home):
    header = Path(rocm_home) / "include" / "hip" / "hip_version.h"
    try:
        text = header.read_text()
    except OSError:
        raise BuildError(
            f"HIP headers not found: {header} (ROCM_HOME must be the SDK root, `rocm-sdk path --root`)"
        ) from None
    fields = dict(re.findall(r"#define HIP_VERSION_(MAJOR|MINOR|PATCH|GITHASH)\s+\"?([^\"\n]*)\"?", text))
    version = f"{fields.get('MAJOR', '0')}.{fields.get('MINOR', '0')}.{fields.get('PATCH', '0')}"
    return f"{version}-{fields['GITHASH']}" if fields.get("GITHASH") else version


def compiler_identity(cxx):
    """("GCC", "12.2") or ("clang", "15.0.7"): what at::show_config() prints from __GNUC__ /
    __clang_major__ for the compiler that built the host code."""
    try:
        banner = subprocess.run([*cxx, "--version"], capture_output=True, text=True, check=True).stdout
        version = subprocess.run(
            [*cxx, "-dumpfullversion", "-dumpversion"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    if "clang" in banner.lower():
        return ("clang", version)
    return ("GCC", ".".join(version.split(".")[:2]))


def find_openblas():
    """(OpenBLAS_HOME, library name) when BLAS=OpenBLAS, as torch's cmake/Modules/FindOpenBLAS.cmake
    looks for it; None without a BLAS. OpenBLAS carries LAPACK (FindLAPACK finds cheev_ in it)."""
    blas = os.environ.get("BLAS", "").strip()
    if not blas:
        return None
    if blas != "OpenBLAS":
        raise BuildError(f"BLAS='{blas}' is not supported by the sample torch (OpenBLAS only, or unset)")
    home = os.environ.get("OpenBLAS_HOME", "").strip()
    name = os.environ.get("OpenBLAS_LIB_NAME", "").strip() or "openblas"
    if not home:
        raise BuildError("BLAS=OpenBLAS but OpenBLAS_HOME is not set; point it at the OpenBLAS prefix")
    header = Path(home) / "include" / "cblas.h"
    library = Path(home) / "lib" / f"lib{name}.so"
    missing = [str(p) for p in (header, library) if not p.exists()]
    if missing:
        raise BuildError(
            f"Could NOT find OpenBLAS (BLAS=OpenBLAS, OpenBLAS_HOME={home}, OpenBLAS_LIB_NAME={name}): "
            f"missing {', '.join(missing)}"
        )
    return home, name


def compile_cpu(blas, launcher, cxx, host_flags, record):
    """torch/lib/libtorch_cpu.so: LAPACK's SVD, linked against the BLAS found."""
    home, name = blas
    lib = ROOT / "build" / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    output = lib / "libtorch_cpu.so"
    run(
        launcher
        + cxx
        + ["-std=c++17", "-O2", "-fPIC", "-shared", f"-I{home}/include"]
        + host_flags
        + [ROOT / "torch/csrc/cpu/Linalg.cpp", "-o", output, "-Wl,-soname,libtorch_cpu.so"]
        + ["-Wl,--no-undefined", f"-L{home}/lib", f"-l{name}"]
        + shlex.split(os.environ.get("LDFLAGS", ""))
    )
    record.set(blas={"name": "OpenBLAS", "home": home, "library": name})
    return output


def build_options(version, sha, use_rocm, cxx, cxx_flags, blas):
    """The build settings real torch compiles in (caffe2/core/macros.h.in CAFFE2_BUILD_STRINGS,
    printed by torch.__config__.show() with empty values left out), with this build's values.
    The stand-in SDK ships no RCCL, MIOpen, MKL or OpenMP runtime, so those are OFF."""
    # CMake's TORCH_VERSION: major.minor.patch of version.txt, without pre-release or local parts.
    release = re.match(r"\d+(\.\d+)*", version).group(0)
    return [
        ("TORCH_VERSION", release),
        ("CXX_COMPILER", shutil.which(cxx[0]) or cxx[0]),
        ("CXX_FLAGS", " ".join(cxx_flags)),
        ("BUILD_TYPE", "Release"),
        # Dependencies.cmake: "open" for OpenBLAS, whose LAPACK FindLAPACK then finds.
        ("BLAS_INFO", "open" if blas else ""),
        ("LAPACK_INFO", "open" if blas else ""),
        ("USE_CUDA", "ON" if env_flag("USE_CUDA", default=False) else "OFF"),
        ("USE_ROCM", "ON" if use_rocm else "OFF"),
        ("CUDA_VERSION", ""),
        # Real torch reads ROCm's rocm_version.h; the stand-in SDK has none, so it stays empty.
        ("ROCM_VERSION", ""),
        ("USE_CUDNN", "OFF"),
        ("COMMIT_SHA", sha),
        ("CUDNN_VERSION", ""),
        ("USE_NCCL", "OFF"),
        ("USE_MPI", "ON" if env_flag("USE_MPI", default=False) else "OFF"),
        ("USE_GFLAGS", "OFF"),
        ("USE_GLOG", "OFF"),
        ("USE_GLOO", "OFF"),
        ("USE_NNPACK", "OFF"),
        ("USE_OPENMP", "OFF"),
        ("USE_EIGEN_FOR_BLAS", ""),
        ("USE_MKL", "OFF"),
        ("USE_MKLDNN", "OFF"),
        ("USE_ROCM_KERNEL_ASSERT", "OFF"),
        ("USE_CUSPARSELT", "OFF"),
        ("USE_XPU", "OFF"),
        ("USE_XCCL", "OFF"),
    ]


def run(cmd):
    print("+ " + shlex.join(str(c) for c in cmd), flush=True)
    try:
        result = subprocess.run([str(c) for c in cmd], cwd=ROOT)
    except OSError as e:
        raise BuildError(f"cannot run {cmd[0]}: {e}") from None
    if result.returncode != 0:
        raise BuildError(f"command failed with exit status {result.returncode}: {shlex.join(str(c) for c in cmd)}")


def compile_rocm(rocm_home, targets, record):
    hipcc = Path(rocm_home) / "bin" / "hipcc"
    if not os.access(hipcc, os.X_OK):
        raise BuildError(f"{hipcc} not found or not executable (ROCM_HOME={rocm_home})")
    kernel = ROOT / "aten/src/ATen/native/hip/Scale.hip"
    if not kernel.exists():
        raise BuildError(
            f"{kernel.relative_to(ROOT)} not found: a ROCm build needs hipified sources; run "
            "`python tools/amd_build/build_amd.py` in the repository root first"
        )
    obj = ROOT / "build" / "obj"
    lib = ROOT / "build" / "lib"
    obj.mkdir(parents=True, exist_ok=True)
    lib.mkdir(parents=True, exist_ok=True)
    arch_flags = [f"--offload-arch={t}" for t in targets]

    launcher = shlex.split(os.environ.get("CMAKE_CXX_COMPILER_LAUNCHER", "").replace(";", " "))
    cxx = shlex.split(os.environ.get("CXX") or "c++")
    host_flags = shlex.split(os.environ.get("CPPFLAGS", "")) + shlex.split(os.environ.get("CXXFLAGS", ""))
    run(
        launcher
        + cxx
        + ["-std=c++17", "-O2", "-fPIC", "-DUSE_ROCM", "-D__HIP_PLATFORM_AMD__", f"-I{rocm_home}/include", f"-I{ROOT}"]
        + host_flags
        + ["-c", ROOT / "torch/csrc/cuda/Module.cpp", "-o", obj / "Module.o"]
    )
    run(
        [
            hipcc,
            "-std=c++17",
            "-O2",
            "-fPIC",
            "-DUSE_ROCM",
            *arch_flags,
            f"-I{ROOT / 'aten/src'}",
            f"-I{ROOT}",
            "-c",
            kernel,
            "-o",
            obj / "Scale.o",
        ]
    )
    output = lib / "libtorch_hip.so"
    run(
        [
            hipcc,
            "-shared",
            "-fPIC",
            *arch_flags,
            obj / "Scale.o",
            obj / "Module.o",
            "-o",
            output,
            "-Wl,-soname,libtorch_hip.so",
            f"-L{rocm_home}/lib",
            "-lamdhip64",
        ]
        + shlex.split(os.environ.get("LDFLAGS", ""))
    )
    record.set(compiler_launcher=launcher, hipcc=str(hipcc))
    return output


def gitignore_patterns():
    try:
        lines = (ROOT / ".gitignore").read_text().splitlines()
    except OSError:
        return []
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def ignored(rel, patterns):
    parts = rel.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        dir_only = pattern.endswith("/")
        anchored = pattern.startswith("/") or "/" in pattern.rstrip("/")
        body = pattern.strip("/")
        for index, prefix in enumerate(prefixes):
            if dir_only and index == len(prefixes) - 1:
                continue
            subject = prefix if anchored else prefix.rsplit("/", 1)[-1]
            if fnmatch.fnmatchcase(subject, body):
                return True
    return False


def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(directory, version, files, requires):
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    abi = tag + getattr(sys, "abiflags", "")
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    name = f"torch-{version}-{tag}-{abi}-{plat}.whl"
    dist_info = f"torch-{version}.dist-info"
    metadata = [
        "Metadata-Version: 2.1",
        "Name: torch",
        f"Version: {version}",
        "Summary: Tensors and dynamic neural networks with GPU acceleration (rockbuild sample)",
        "Requires-Python: >=3.9",
    ] + [f"Requires-Dist: {r}" for r in requires]
    files = dict(sorted(files.items()))
    files[f"{dist_info}/METADATA"] = ("\n".join(metadata) + "\n").encode()
    files[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: torch_build_backend (rockbuild sample)\nRoot-Is-Purelib: false\nTag: {tag}-{abi}-{plat}\n"
    ).encode()
    files[f"{dist_info}/top_level.txt"] = b"torch\n"
    record = "".join(f"{n},{record_hash(d)},{len(d)}\n" for n, d in files.items()) + f"{dist_info}/RECORD,,\n"
    files[f"{dist_info}/RECORD"] = record.encode()
    path = Path(directory) / name
    temp = path.with_name(path.name + ".part")
    with zipfile.ZipFile(temp, "w") as archive:
        for arcname, data in files.items():
            info = zipfile.ZipInfo(arcname, date_time=ZIP_DATE)
            info.create_system = 3
            mode = 0o755 if arcname.endswith(".so") else 0o644
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    os.replace(temp, path)
    return name


def _build(wheel_directory, config_settings, record):
    force_include = {}
    for key, value in config_settings.items():
        if key.startswith(FORCE_INCLUDE):
            force_include[key[len(FORCE_INCLUDE) :]] = value
    for source in force_include:
        if not (ROOT / source).is_file():
            raise BuildError(f"wheel.force-include: '{source}' does not exist in {ROOT}")
    sha = git_sha()
    raw_version = torch_version(sha)
    version = canonical_version(raw_version)
    requires = [r.strip() for r in os.environ.get("PYTORCH_EXTRA_INSTALL_REQUIREMENTS", "").split("|") if r.strip()]
    for requirement in requires:
        if not REQUIREMENT.match(requirement):
            raise BuildError(f"PYTORCH_EXTRA_INSTALL_REQUIREMENTS: '{requirement}' is not a requirement")

    rocm_home = os.environ.get("ROCM_HOME") or os.environ.get("ROCM_PATH")
    use_rocm = env_flag("USE_ROCM")
    if use_rocm is None:
        use_rocm = bool(rocm_home) and os.access(Path(rocm_home) / "bin" / "hipcc", os.X_OK)
    record.set(version=version, git_version=sha, use_rocm=use_rocm, force_include=force_include, requires_dist=requires)

    generated = {}
    targets = []
    hip = None
    attention = {}
    if use_rocm:
        if not rocm_home:
            raise BuildError(
                "USE_ROCM is ON but neither ROCM_HOME nor ROCM_PATH is set; point ROCM_HOME at the SDK root (`rocm-sdk path --root`)"
            )
        targets = rocm_targets()
        hip_config = find_hip_config(rocm_home)
        hip = hip_version(rocm_home)
        attention = {name: env_flag(name, default=True) for name in ("USE_FLASH_ATTENTION", "USE_MEM_EFF_ATTENTION")}
        supported = [t for t in targets if t.startswith(FLASH_ATTENTION_PREFIXES)]
        for name, enabled in attention.items():
            if enabled and not supported:
                raise BuildError(
                    f"{name} is ON but no target in PYTORCH_ROCM_ARCH ({';'.join(targets)}) is supported by "
                    "aotriton (gfx90a, gfx942, gfx950, gfx11*, gfx12*); aotriton's configure fails on an "
                    f"empty target list (aotriton#169). Set {name}=OFF or add a supported target"
                )
        record.set(
            targets=targets,
            hip_version=hip,
            hip_config=str(hip_config),
            rocm_home=rocm_home,
            attention=attention,
            aotriton_targets=supported,
        )
        library = compile_rocm(rocm_home, targets, record)
        generated["torch/lib/libtorch_hip.so"] = library.read_bytes()

    cxx = shlex.split(os.environ.get("CXX") or "c++")
    host_flags = shlex.split(os.environ.get("CPPFLAGS", "")) + shlex.split(os.environ.get("CXXFLAGS", ""))
    blas = find_openblas()
    if blas is not None:
        launcher = shlex.split(os.environ.get("CMAKE_CXX_COMPILER_LAUNCHER", "").replace(";", " "))
        generated["torch/lib/libtorch_cpu.so"] = compile_cpu(blas, launcher, cxx, host_flags, record).read_bytes()
    settings_py = (
        "# Generated by the sample torch build (torch_build_backend.py): what real torch compiles\n"
        "# into libtorch and torch.__config__.show() prints.\n"
        f"COMPILER = {compiler_identity(cxx)!r}\n"
        "CPLUSPLUS = 201703\n"
        f"BUILD_OPTIONS = {build_options(version, sha, use_rocm, cxx, ['-std=c++17', '-O2', '-fPIC', *host_flags], blas)!r}\n"
        f"LAPACK = {blas is not None!r}\n"
        f"USE_FLASH_ATTENTION = {bool(attention.get('USE_FLASH_ATTENTION'))!r}\n"
        f"USE_MEM_EFF_ATTENTION = {bool(attention.get('USE_MEM_EFF_ATTENTION'))!r}\n"
    )
    (ROOT / "torch" / "_build_settings.py").write_text(settings_py)
    generated["torch/_build_settings.py"] = settings_py.encode()

    version_py = (
        "# Generated by the sample torch build (torch_build_backend.py).\n"
        f"__version__ = {version!r}\n"
        "debug = False\n"
        "cuda = None\n"
        f"git_version = {sha!r}\n"
        f"hip = {hip!r}\n"
        "xpu = None\n"
        f"rocm_arch = {targets!r}\n"
    )
    (ROOT / "torch" / "version.py").write_text(version_py)
    generated["torch/version.py"] = version_py.encode()

    patterns = gitignore_patterns()
    files = {}
    for path in sorted((ROOT / "torch").rglob("*")):
        rel = path.relative_to(ROOT).as_posix()
        if path.is_dir() or "__pycache__" in path.parts or rel.startswith("torch/csrc/") or ignored(rel, patterns):
            continue
        files[rel] = path.read_bytes()
    for source, destination in force_include.items():
        files[destination] = (ROOT / source).read_bytes()
    files.update(generated)
    record.set(wheel_files=sorted(files))
    files[f"torch/{WHEEL_RECORD_NAME}"] = record.wheel_json().encode()
    Path(wheel_directory).mkdir(parents=True, exist_ok=True)
    name = write_wheel(wheel_directory, version, files, requires)
    record.finish(wheel=name)
    print(f"built {name}", flush=True)
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    record = BuildRecord("torch", ROOT)
    try:
        return _build(wheel_directory, config_settings or {}, record)
    except BuildError as e:
        record.fail(e)
        print(f"\nerror: torch build failed: {e}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
