//! The sample world of examples/: the stand-in ROCm SDK installed over HTTP with pip and uv
//! and compiling for two targets, the local git origins, hipify's non-idempotence, and every
//! sample project built through its real entry point with the environment rockbuild gives it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::http::serve;
use crate::common::sample::{
    Venv, build_record, clone_recursive, offload_bundle_ids, offload_targets, only_wheel,
    requires_dist, sample_origins, sample_origins_in, wheel_build_record, wheel_member,
    wheel_members,
};
use crate::common::sdk::sdk_index;
use crate::common::{TestEnv, repo_root, run_ok, tools_bin};

const SDK_VERSION: &str = "7.10.0a20251124";
const TARGETS: [&str; 2] = ["gfx906", "gfx1030"];

/// F20's preload list, as TheRock writes it into torch/_rocm_init.py.
const PRELOAD: &str = r#"["amd_comgr", "amd_smi", "amdhip64", "hiprtc", "hipblas", "hipfft", "hiprand", "hipsparse", "hipsparselt", "hipsolver", "hipblaslt", "miopen", "hipdnn", "rocm_sysdeps_liblzma", "rocm-openblas", "rocm_smi64", "rocprofiler-sdk", "rocprofiler-sdk-roctx", "roctracer64", "roctx64", "rccl", "hipfile"]"#;

#[track_caller]
fn run_fail(command: &mut Command) -> String {
    let output = command.output().expect("spawn");
    assert!(
        !output.status.success(),
        "{command:?} succeeded but should have failed"
    );
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[track_caller]
fn check(command: &mut Command) -> Output {
    let output = command.output().expect("spawn");
    assert!(
        output.status.success(),
        "{command:?} failed ({}):\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn sorted(mut items: Vec<String>) -> Vec<String> {
    items.sort();
    items
}

/// A venv with the stand-in SDK `rocm[libraries,devel]==version` installed from `index_url`,
/// and the SDK root (`rocm-sdk path --root`).
fn sdk_venv(env: &TestEnv, dir: &Path, index_url: &str, version: &str) -> (Venv, PathBuf) {
    let venv = Venv::create(env, dir);
    run_ok(
        venv.uv_install(env)
            .args(["--index-url", index_url])
            .arg(format!("rocm[libraries,devel]=={version}")),
    );
    let root = run_ok(
        venv.python_command(env)
            .args(["-m", "rocm_sdk", "path", "--root"]),
    );
    (venv, PathBuf::from(root.trim()))
}

/// Compiles a kernel with `<root>/bin/hipcc` for `targets`, with the variables a build sets
/// (ROCM_PATH at the SDK root, HIP_DEVICE_LIB_PATH at its bitcode), into a shared library.
fn compile_kernel(env: &TestEnv, root: &Path, targets: &[&str]) -> Vec<u8> {
    let source = env.path("kernel.hip");
    std::fs::write(
        &source,
        "#include <hip/hip_runtime.h>\n\
         __global__ void twice(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2; }\n\
         extern \"C\" int launch(float* x, int n) { hipLaunchKernelGGL(twice, dim3(1), dim3(n), 0, 0, x, n); return (int)hipGetLastError(); }\n",
    )
    .expect("write the kernel");
    let library = env.path("libkernel.so");
    let mut hipcc = env.command(root.join("bin/hipcc"));
    hipcc
        .env("ROCM_PATH", root)
        .env("ROCM_HOME", root)
        .env("HIP_DEVICE_LIB_PATH", root.join("lib/llvm/amdgcn/bitcode"))
        .args(targets.iter().map(|t| format!("--offload-arch={t}")))
        .args(["-fPIC", "-shared", "-o"])
        .arg(&library)
        .arg(&source)
        .arg(format!("-L{}", root.join("lib").display()))
        .arg("-lamdhip64");
    check(&mut hipcc);
    std::fs::read(&library).expect("read the compiled library")
}

#[test]
fn stand_in_sdk_installs_over_http_with_pip_and_compiles_for_two_targets() {
    let env = TestEnv::new();
    let server = serve(&sdk_index(SDK_VERSION, &TARGETS));
    let venv = Venv::create(&env, &env.path("venv"));
    run_ok(
        venv.python_command(&env)
            .args(["-m", "pip", "install", "--isolated", "-q", "--index-url"])
            .arg(format!("{}simple/", server.url()))
            .arg(format!("rocm[libraries,devel]=={SDK_VERSION}")),
    );

    let cli = |args: &[&str]| {
        run_ok(
            venv.python_command(&env)
                .args(["-m", "rocm_sdk"])
                .args(args),
        )
        .trim()
        .to_string()
    };
    assert_eq!(cli(&["version"]), SDK_VERSION);
    assert_eq!(cli(&["targets"]), "gfx906;gfx1030");
    let root = PathBuf::from(cli(&["path", "--root"]));
    assert_eq!(
        cli(&["path", "--bin"]),
        root.join("bin").display().to_string()
    );
    assert_eq!(
        cli(&["path", "--cmake"]),
        root.join("lib/cmake").display().to_string()
    );
    // The console script is the same CLI.
    let script = run_ok(env.command(venv.bin().join("rocm-sdk")).arg("version"));
    assert_eq!(script.trim(), SDK_VERSION);
    for dir in [
        "bin/hipcc",
        "lib/libamdhip64.so",
        "lib/llvm/amdgcn/bitcode/ocml.bc",
        "lib/cmake/hip/hip-config.cmake",
        "include/hip/hip_runtime.h",
        "include/roctracer",
        "lib/rocm_sysdeps/include",
        "lib/rocm_sysdeps/lib/pkgconfig",
        "lib/host-math/lib",
    ] {
        assert!(root.join(dir).exists(), "SDK root lacks {dir}");
    }
    run_ok(venv.python_command(&env).args(["-m", "rocm_sdk", "test"]));

    let library = compile_kernel(&env, &root, &TARGETS);
    assert_eq!(
        sorted(offload_targets(&library)),
        sorted(TARGETS.map(String::from).to_vec())
    );
    assert!(
        offload_bundle_ids(&library).contains(&"hipv4-amdgcn-amd-amdhsa--gfx1030".to_string()),
        "{:?}",
        offload_bundle_ids(&library)
    );

    // The expanded tree belongs to rocm-sdk-devel: uninstalling removes it.
    run_ok(venv.python_command(&env).args([
        "-m",
        "pip",
        "uninstall",
        "-y",
        "-q",
        "rocm-sdk-devel",
    ]));
    assert!(
        !root.exists(),
        "{} survived uninstalling rocm-sdk-devel",
        root.display()
    );
}

#[test]
fn stand_in_sdk_installs_over_http_with_uv_for_a_local_version() {
    let env = TestEnv::new();
    let version = "7.10.0.dev0+efed3c0123";
    let index = sdk_index(version, &TARGETS);
    let page = std::fs::read_to_string(index.join("simple/rocm/index.html")).expect("rocm page");
    assert!(
        page.contains("rocm-7.10.0.dev0%2Befed3c0123-py3-none-any.whl#sha256="),
        "{page}"
    );
    let server = serve(&index);
    let venv = Venv::create(&env, &env.path("venv"));
    run_ok(
        venv.uv_install(&env)
            .args(["--index-url", &format!("{}simple/", server.url())])
            .arg(format!("rocm[libraries,devel,device-gfx1030]=={version}")),
    );
    let version_out = run_ok(
        venv.python_command(&env)
            .args(["-m", "rocm_sdk", "version"]),
    );
    assert_eq!(version_out.trim(), version);
    // The device extra pulled the per-target package into the libraries tree.
    let marker = run_ok(venv.python_command(&env).args([
        "-c",
        "import _rocm_sdk_libraries, pathlib; print(sorted(p.name for p in (pathlib.Path(_rocm_sdk_libraries.__file__).parent / 'share/therock/device').iterdir()))",
    ]));
    assert_eq!(marker.trim(), "['gfx1030.json']");
    let root = run_ok(
        venv.python_command(&env)
            .args(["-m", "rocm_sdk", "path", "--root"]),
    );
    let library = compile_kernel(&env, Path::new(root.trim()), &["gfx906"]);
    assert_eq!(offload_targets(&library), ["gfx906"]);

    // uv removes the expanded tree too (it is in RECORD), without following its links.
    run_ok(
        env.command(tools_bin().join("uv"))
            .args(["pip", "uninstall", "-q", "--python"])
            .arg(venv.python())
            .arg("rocm-sdk-devel"),
    );
    assert!(
        !Path::new(root.trim()).exists(),
        "{} survived uv pip uninstall",
        root.trim()
    );
    assert!(Path::new("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ocml.bc").exists());
}

#[test]
fn stand_in_sdk_rejects_what_the_real_one_rejects() {
    let env = TestEnv::new();
    let server = serve(&sdk_index(SDK_VERSION, &TARGETS));
    let venv = Venv::create(&env, &env.path("venv"));
    // rocm alone: no libraries, no devel.
    run_ok(
        venv.uv_install(&env)
            .args(["--index-url", &format!("{}simple/", server.url())])
            .arg(format!("rocm=={SDK_VERSION}")),
    );
    let python = |code: &str| {
        venv.python_command(&env)
            .args(["-c", code])
            .output()
            .expect("spawn python")
    };

    let missing_devel = run_fail(
        venv.python_command(&env)
            .args(["-m", "rocm_sdk", "path", "--root"]),
    );
    assert!(missing_devel.contains("`rocm[devel]`"), "{missing_devel}");

    let unknown =
        python("import rocm_sdk; rocm_sdk.initialize_process(preload_shortnames=['hipblas2'])");
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("Unknown rocm library 'hipblas2'"));

    let no_libraries = python(
        "import rocm_sdk; rocm_sdk.initialize_process(preload_shortnames=['amdhip64', 'hipblas'])",
    );
    let stderr = String::from_utf8_lossy(&no_libraries.stderr);
    assert!(
        !no_libraries.status.success() && stderr.contains("pip install rocm[libraries]"),
        "{stderr}"
    );

    // Core libraries load (Debian's libamdhip64); a version mismatch warns, or fails when asked.
    let ok = run_ok(venv.python_command(&env).args([
        "-W",
        "error",
        "-c",
        "import rocm_sdk; rocm_sdk.initialize_process(preload_shortnames=['amdhip64', 'amd_comgr'], check_version='7.10.0a*'); print(sorted(rocm_sdk._ALL_CDLLS))",
    ]));
    assert_eq!(ok.trim(), "['amd_comgr', 'amdhip64']");
    let warned = python("import rocm_sdk; rocm_sdk.initialize_process(check_version='7.9.0')");
    assert!(warned.status.success());
    assert!(
        String::from_utf8_lossy(&warned.stderr)
            .contains("installed ROCm version in this Python environment is 7.10.0a20251124")
    );
    let strict = python(
        "import rocm_sdk; rocm_sdk.initialize_process(check_version='7.9.0', fail_on_version_mismatch=True)",
    );
    assert!(
        !strict.status.success()
            && String::from_utf8_lossy(&strict.stderr).contains("RuntimeError")
    );
}

#[test]
fn sdk_builder_is_deterministic_and_refuses_bad_input() {
    let env = TestEnv::new();
    let builder = repo_root().join("examples/sdk/build_sdk.py");
    let build = |out: &str, version: &str, targets: &str| {
        env.command("python3")
            .arg(&builder)
            .args(["--version", version, "--targets", targets, "--out"])
            .arg(env.path(out))
            .output()
            .expect("run build_sdk.py")
    };
    for out in ["a", "b"] {
        assert!(build(out, "7.10.0rc2", "gfx906,gfx90a").status.success());
    }
    let listing = |out: &str| {
        let mut files: Vec<(String, Vec<u8>)> = walkdir::WalkDir::new(env.path(out))
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .map(|e| {
                let rel = e
                    .path()
                    .strip_prefix(env.path(out))
                    .expect("under out")
                    .display()
                    .to_string();
                (rel, std::fs::read(e.path()).expect("read"))
            })
            .collect();
        files.sort();
        files
    };
    let first = listing("a");
    assert_eq!(first, listing("b"), "two runs must produce identical bytes");
    let names: Vec<&str> = first.iter().map(|(n, _)| n.as_str()).collect();
    for expected in [
        "simple/index.html",
        "simple/rocm/index.html",
        "simple/rocm-sdk-core/index.html",
        "simple/rocm-sdk-libraries/index.html",
        "simple/rocm-sdk-device-gfx90a/index.html",
        "simple/rocm-sdk-devel/index.html",
        "wheels/index.html",
        "wheels/rocm-7.10.0rc2-py3-none-any.whl",
        "wheels/rocm_sdk_core-7.10.0rc2-py3-none-linux_x86_64.whl",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let meta = String::from_utf8(wheel_member(
        &env.path("a/wheels/rocm-7.10.0rc2-py3-none-any.whl"),
        "rocm-7.10.0rc2.dist-info/METADATA",
    ))
    .expect("utf-8");
    for line in [
        "Requires-Dist: rocm-sdk-core==7.10.0rc2",
        "Requires-Dist: rocm-sdk-libraries==7.10.0rc2; extra == \"libraries\"",
        "Requires-Dist: rocm-sdk-devel==7.10.0rc2; extra == \"devel\"",
        "Requires-Dist: rocm-sdk-device-gfx90a==7.10.0rc2; extra == \"device-gfx90a\"",
        "Provides-Extra: device-all",
    ] {
        assert!(
            meta.lines().any(|l| l == line),
            "METADATA lacks {line}:\n{meta}"
        );
    }

    for (version, targets, message) in [
        (
            "7.10.0-rc2",
            "gfx906",
            "'7.10.0-rc2' is not a canonical PEP 440 version",
        ),
        ("7.10.0", "gfx94x", "'gfx94x' is not a gfx target"),
        ("7.10.0", ",", "--targets is empty"),
    ] {
        let output = build("bad", version, targets);
        assert_eq!(output.status.code(), Some(2));
        assert!(
            String::from_utf8_lossy(&output.stderr).contains(message),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    assert!(
        !env.path("bad/simple").exists(),
        "a refused build must not write an index"
    );
}

#[test]
fn sample_origins_are_reproducible_and_carry_the_pins() {
    let env = TestEnv::new();
    let origins = sample_origins(&env);
    let again = sample_origins_in(&env, &env.path("sample"));
    for (project, repo) in &origins.repos {
        assert_eq!(
            repo.branches,
            again.repo(project).branches,
            "{project}: re-running changed the SHAs"
        );
    }

    let torch = origins.repo("torch");
    assert_eq!(torch.default_branch, "main");
    assert!(torch.tags["v2.9.0"].annotated && !torch.tags["v2.9.0-rc1"].annotated);
    assert_eq!(torch.tags["v2.9.0"].commit, torch.branch("release/2.9"));
    assert_ne!(torch.tags["v2.9.0"].object, torch.tags["v2.9.0"].commit);
    assert_eq!(origins.repo("apex").default_branch, "master");

    let show = |reference: &str, file: &str| {
        run_ok(
            env.command("git")
                .arg("-C")
                .arg(&torch.path)
                .args(["show", &format!("{reference}:{file}")]),
        )
    };
    for (branch, audio, vision, apex, triton, triton_version) in [
        ("main", "main", "main", "master", "main", "3.5.0"),
        (
            "release/2.9",
            "release/2.9",
            "release/0.24",
            "release/1.9.0",
            "release/3.4.x",
            "3.4.0",
        ),
    ] {
        let related = show(branch, "related_commits");
        for (key, project, pin_branch) in [
            ("torchaudio", "audio", audio),
            ("torchvision", "vision", vision),
            ("apex", "apex", apex),
        ] {
            let repo = origins.repo(project);
            let row = format!(
                "ubuntu|pytorch|{key}|{pin_branch}|{}|{}",
                repo.branch(pin_branch),
                repo.url
            );
            assert!(
                related.lines().any(|l| l == row),
                "{branch}: related_commits lacks `{row}`:\n{related}"
            );
        }
        assert_eq!(
            show(branch, ".ci/docker/ci_commit_pins/triton.txt").trim(),
            origins.repo("triton").branch(triton)
        );
        assert_eq!(
            show(branch, ".ci/docker/triton_version.txt").trim(),
            triton_version
        );
    }

    // A recursive clone reaches the second-level submodule through the relative URLs.
    let checkout = env.path("checkout");
    clone_recursive(&env, &torch.url, "v2.9.0", &checkout);
    let status = run_ok(env.command("git").arg("-C").arg(&checkout).args([
        "submodule",
        "status",
        "--recursive",
    ]));
    assert!(
        status.contains(&format!(
            "{} third_party/kineto ",
            origins.repo("kineto").head()
        )),
        "{status}"
    );
    assert!(
        status.contains(&format!(
            "{} third_party/kineto/third_party/fmt ",
            origins.repo("fmt").head()
        )),
        "{status}"
    );
    let stack = std::fs::read_to_string(&origins.stack_yaml).expect("stack.yaml");
    assert!(
        stack.contains(&format!("origin: \"{}\"", torch.url)),
        "{stack}"
    );
}

#[test]
fn build_amd_rewrites_sources_and_is_not_idempotent() {
    let env = TestEnv::new();
    let origins = sample_origins(&env);
    let torch = env.path("pytorch");
    clone_recursive(&env, &origins.repo("torch").url, "main", &torch);
    let hipify = || {
        run_ok(
            env.command("python3")
                .current_dir(&torch)
                .arg("tools/amd_build/build_amd.py"),
        )
    };
    let status = |dir: &Path| {
        run_ok(
            env.command("git")
                .arg("-C")
                .arg(dir)
                .args(["status", "--porcelain", "-u"]),
        )
    };

    let log = hipify();
    assert!(
        log.contains("aten/src/ATen/native/hip/Scale.hip [ok]"),
        "{log}"
    );
    let kernel = std::fs::read_to_string(torch.join("aten/src/ATen/native/hip/Scale.hip"))
        .expect("hipified kernel");
    assert!(kernel.starts_with("// !!! This is a file automatically generated by hipify!!!\n"));
    assert!(
        kernel.contains("#include <hip/hip_runtime.h>")
            && kernel.contains("#include <ATen/hip/HIPContext.h>")
    );
    assert!(kernel.contains("hipMalloc(&device, bytes)") && !kernel.contains("cudaMalloc"));
    let module =
        || std::fs::read_to_string(torch.join("torch/csrc/cuda/Module.cpp")).expect("Module.cpp");
    assert!(module().contains("#include \"hip/driver_types.h\""));
    assert!(status(&torch).contains("?? c10/hip/HIPStream.h"));
    // hipify edited a file inside the kineto submodule.
    let kineto = torch.join("third_party/kineto");
    assert!(
        status(&kineto).contains(" M libkineto/CMakeLists.txt"),
        "{}",
        status(&kineto)
    );
    let cmake = std::fs::read_to_string(kineto.join("libkineto/CMakeLists.txt"))
        .expect("kineto CMakeLists");
    assert!(
        cmake.contains("__HIP_PLATFORM_AMD__")
            && cmake.contains("HIP_CLANG_FLAGS")
            && !cmake.contains("HCC")
    );

    // The second run is not a no-op.
    let second = hipify();
    assert!(
        second.contains("torch/csrc/cuda/Module.cpp [ok]"),
        "{second}"
    );
    assert!(
        second.contains("Scale.hip [skipped, already hipified]"),
        "{second}"
    );
    assert!(
        module().contains("#include \"hip/hip/driver_types.h\""),
        "{}",
        module()
    );
    hipify();
    assert!(module().contains("#include \"hip/hip/hip/driver_types.h\""));
}

#[test]
fn triton_version_joins_suffixes_like_upstream() {
    let env = TestEnv::new();
    let origins = sample_origins(&env);
    let triton = origins.repo("triton");
    let venv = Venv::create(&env, &env.path("venv"));
    let tag = venv.wheel_tag(&env);
    let source = env.path("triton");
    clone_recursive(&env, &triton.url, "release/3.4.x", &source);
    let sha8 = &triton.branch("release/3.4.x")[..8];
    let build = |suffix: Option<&str>| -> String {
        let _ = std::fs::remove_dir_all(source.join("dist"));
        let mut command = venv.python_command(&env);
        command
            .current_dir(&source)
            .args(["setup.py", "bdist_wheel"]);
        command.env(
            "TRITON_APPEND_CMAKE_ARGS",
            "-DCMAKE_FIND_USE_CMAKE_ENVIRONMENT_PATH=FALSE",
        );
        if let Some(suffix) = suffix {
            command.env("TRITON_WHEEL_VERSION_SUFFIX", suffix);
        }
        check(&mut command);
        let wheel = only_wheel(&source.join("dist"), "triton");
        wheel
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned()
    };
    // Detached HEAD (how checkouts leave it): the git hash, then the suffix with `+` -> `-`.
    assert_eq!(
        build(Some("+rocm7.10.0a20251124")),
        format!("triton-3.4.0+git{sha8}.rocm7.10.0a20251124-{tag}.whl")
    );
    assert_eq!(build(None), format!("triton-3.4.0+git{sha8}-{tag}.whl"));
    // On a release branch there is no git hash and the suffix keeps its `+`.
    run_ok(env.command("git").arg("-C").arg(&source).args([
        "checkout",
        "-q",
        "-B",
        "release/3.4.x",
    ]));
    assert_eq!(
        build(Some("+rocm7.10.0a20251124")),
        format!("triton-3.4.0+rocm7.10.0a20251124-{tag}.whl")
    );
    let record = build_record(&source);
    assert_eq!(
        record["cmake_args"],
        serde_json::json!(["-DCMAKE_FIND_USE_CMAKE_ENVIRONMENT_PATH=FALSE"])
    );
    // Host code only: no device code for any target.
    let wheel = only_wheel(&source.join("dist"), "triton");
    assert!(offload_bundle_ids(&wheel_member(&wheel, "triton/_C/libtriton.so")).is_empty());
}

/// The environment rockbuild gives every project (F18) for an SDK root and targets.
fn common_env(root: &Path, venv: &Venv, env: &TestEnv) -> BTreeMap<String, String> {
    let r = root.display();
    let path = format!("{r}/bin:{}:{}", venv.bin().display(), env.vars()["PATH"]);
    let flags = "-Wno-error=maybe-uninitialized -Wno-error=uninitialized -Wno-error=restrict";
    [
        ("PYTHONUTF8", "1".to_string()),
        ("CMAKE_PREFIX_PATH", format!("{r}/lib/cmake")),
        ("ROCM_HOME", r.to_string()),
        ("ROCM_PATH", r.to_string()),
        ("PYTORCH_ROCM_ARCH", TARGETS.join(";")),
        ("USE_KINETO", "ON".into()),
        ("USE_GLOO", "ON".into()),
        ("PATH", path),
        ("VIRTUAL_ENV", venv.dir.display().to_string()),
        (
            "TRITON_APPEND_CMAKE_ARGS",
            "-DCMAKE_FIND_USE_CMAKE_ENVIRONMENT_PATH=FALSE".into(),
        ),
        (
            "HIP_DEVICE_LIB_PATH",
            format!("{r}/lib/llvm/amdgcn/bitcode"),
        ),
        ("BLAS", "OpenBLAS".into()),
        ("OpenBLAS_HOME", format!("{r}/lib/host-math")),
        ("OpenBLAS_LIB_NAME", "rocm-openblas".into()),
        ("CXXFLAGS", flags.into()),
        ("CPPFLAGS", flags.into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// torch's additions (F19), for a build version and its extra requirements.
fn torch_env(
    root: &Path,
    base: &BTreeMap<String, String>,
    version: &str,
    requires: &str,
) -> BTreeMap<String, String> {
    let r = root.display();
    let mut env = base.clone();
    for (key, value) in [
        ("USE_ROCM", "ON".to_string()),
        ("USE_CUDA", "OFF".into()),
        ("USE_MPI", "OFF".into()),
        ("USE_NUMA", "OFF".into()),
        ("PYTORCH_BUILD_VERSION", version.into()),
        ("PYTORCH_BUILD_NUMBER", "1".into()),
        ("PYTORCH_EXTRA_INSTALL_REQUIREMENTS", requires.into()),
        ("USE_FLASH_ATTENTION", "OFF".into()),
        ("USE_MEM_EFF_ATTENTION", "OFF".into()),
        ("LDFLAGS", format!("-L{r}/lib/rocm_sysdeps/lib")),
        (
            "PKG_CONFIG_PATH",
            format!("{r}/lib/rocm_sysdeps/lib/pkgconfig"),
        ),
        ("LD_LIBRARY_PATH", format!("{r}/lib/rocm_sysdeps/lib")),
    ] {
        env.insert(key.into(), value);
    }
    let cxxflags = format!(
        "{} -I{r}/lib/rocm_sysdeps/include -I{r}/include/roctracer",
        base["CXXFLAGS"]
    );
    env.insert("CXXFLAGS".into(), cxxflags);
    env
}

fn write_rocm_init(torch: &Path, version: &str) {
    std::fs::write(
        torch.join("torch/_rocm_init.py"),
        format!("def initialize():\n    import rocm_sdk\n\n    rocm_sdk.initialize_process(\n        preload_shortnames={PRELOAD},\n        check_version={version:?},\n    )\n"),
    )
    .expect("write _rocm_init.py");
}

#[track_caller]
fn assert_env(record: &serde_json::Value, expected: &BTreeMap<String, String>, keys: &[&str]) {
    for key in keys {
        assert_eq!(
            record["env"][key].as_str(),
            Some(expected[*key].as_str()),
            "{} saw {key}",
            record["project"]
        );
    }
}

#[test]
fn sample_stack_builds_with_the_real_entry_points() {
    let env = TestEnv::new();
    let server = serve(&sdk_index(SDK_VERSION, &TARGETS));
    let index_url = format!("{}simple/", server.url());
    let origins = sample_origins(&env);
    let (venv, root) = sdk_venv(&env, &env.path("venv"), &index_url, SDK_VERSION);
    let tag = venv.wheel_tag(&env);
    let src = env.path("src");
    for (project, dir) in [
        ("torch", "pytorch"),
        ("audio", "pytorch_audio"),
        ("vision", "pytorch_vision"),
        ("triton", "triton"),
        ("apex", "apex"),
    ] {
        let repo = origins.repo(project);
        clone_recursive(&env, &repo.url, repo.head(), &src.join(dir));
    }
    let base = common_env(&root, &venv, &env);
    let suffix = format!("+rocm{SDK_VERSION}");

    // triton: setup.py bdist_wheel at the root; its version joins the suffix after +git<sha8>.
    let triton_dir = src.join("triton");
    let mut triton_env = base.clone();
    triton_env.insert("TRITON_WHEEL_VERSION_SUFFIX".into(), suffix.clone());
    check(
        venv.python_command(&env)
            .current_dir(&triton_dir)
            .envs(&triton_env)
            .args(["setup.py", "bdist_wheel"]),
    );
    let triton_wheel = only_wheel(&triton_dir.join("dist"), "triton");
    let triton_version = format!(
        "3.5.0+git{}.rocm{SDK_VERSION}",
        &origins.repo("triton").head()[..8]
    );
    assert!(
        triton_wheel.ends_with(format!("triton-{triton_version}-{tag}.whl")),
        "{}",
        triton_wheel.display()
    );

    // torch: hipify, _rocm_init.py, python -m build --wheel --no-isolation with force-include.
    let torch_dir = src.join("pytorch");
    run_ok(
        env.command("python3")
            .current_dir(&torch_dir)
            .arg("tools/amd_build/build_amd.py"),
    );
    write_rocm_init(&torch_dir, SDK_VERSION);
    let torch_version = format!("2.10.0a0+rocm{SDK_VERSION}");
    let requires = format!("rocm[libraries]=={SDK_VERSION}|triton=={triton_version}");
    let torch_build_env = torch_env(&root, &base, &torch_version, &requires);
    check(
        venv.python_command(&env)
            .current_dir(&torch_dir)
            .envs(&torch_build_env)
            .args([
                "-m",
                "build",
                "--wheel",
                "--no-isolation",
                "-Cwheel.force-include.torch/_rocm_init.py=torch/_rocm_init.py",
            ]),
    );
    let torch_wheel = only_wheel(&torch_dir.join("dist"), "torch");
    assert!(torch_wheel.ends_with(format!("torch-{torch_version}-{tag}.whl")));
    assert_eq!(
        requires_dist(&torch_wheel),
        [
            format!("rocm[libraries]=={SDK_VERSION}"),
            format!("triton=={triton_version}")
        ]
    );
    let members = wheel_members(&torch_wheel);
    assert!(
        members.contains(&"torch/_rocm_init.py".to_string()),
        "{members:?}"
    );
    assert_eq!(
        sorted(offload_targets(&wheel_member(
            &torch_wheel,
            "torch/lib/libtorch_hip.so"
        ))),
        sorted(TARGETS.map(String::from).to_vec())
    );
    let torch_record = build_record(&torch_dir);
    assert_env(
        &torch_record,
        &torch_build_env,
        &[
            "PYTORCH_ROCM_ARCH",
            "USE_ROCM",
            "ROCM_HOME",
            "PYTORCH_BUILD_VERSION",
            "CMAKE_PREFIX_PATH",
            "HIP_DEVICE_LIB_PATH",
        ],
    );
    assert_eq!(
        wheel_build_record(&torch_wheel, "torch")["env"]["PYTORCH_EXTRA_INSTALL_REQUIREMENTS"]
            .as_str(),
        Some(requires.as_str())
    );

    // Install torch as the reference does before audio/vision: its requirements resolve
    // against the SDK index (rocm[libraries]) and the built triton.
    run_ok(
        venv.uv_install(&env)
            .args(["--index-url", &index_url, "--find-links"])
            .arg(torch_dir.join("dist"))
            .arg("--find-links")
            .arg(triton_dir.join("dist"))
            .arg(format!("torch=={torch_version}")),
    );
    let smoke = run_ok(venv.python_command(&env).args([
        "-c",
        "import json, torch, triton, rocm_sdk; print(json.dumps([torch.__version__, torch.version.hip, torch.cuda.get_arch_list(), torch.cuda.is_available(), sorted(rocm_sdk._ALL_CDLLS)]))",
    ]));
    let smoke: serde_json::Value = serde_json::from_str(smoke.trim()).expect("smoke output");
    assert_eq!(
        smoke,
        serde_json::json!([
            torch_version,
            "5.2.21153",
            TARGETS,
            false,
            // What the SDK ships of the preload list: Debian's HIP runtime and comgr, the
            // wheels' OpenBLAS and the AMD SMI and hipBLAS stand-ins.
            [
                "amd_comgr",
                "amd_smi",
                "amdhip64",
                "hipblas",
                "rocm-openblas"
            ]
        ])
    );

    // audio and vision build concurrently against the installed torch.
    let audio_dir = src.join("pytorch_audio");
    let vision_dir = src.join("pytorch_vision");
    let audio_version = format!("2.10.0a0+rocm{SDK_VERSION}");
    let vision_version = format!("0.25.0a0+rocm{SDK_VERSION}");
    let mut audio_env = base.clone();
    for (k, v) in [
        ("BUILD_VERSION", audio_version.as_str()),
        ("BUILD_NUMBER", "1"),
        ("USE_ROCM", "1"),
        ("USE_CUDA", "0"),
        ("USE_FFMPEG", "1"),
        ("USE_OPENMP", "1"),
        ("BUILD_SOX", "0"),
    ] {
        audio_env.insert(k.into(), v.into());
    }
    let mut vision_env = base.clone();
    for (k, v) in [
        ("BUILD_VERSION", vision_version.as_str()),
        ("VERSION_NAME", vision_version.as_str()),
        ("BUILD_NUMBER", "1"),
        ("FORCE_CUDA", "1"),
        ("TORCHVISION_USE_NVJPEG", "0"),
        ("TORCHVISION_USE_VIDEO_CODEC", "0"),
        ("PYTORCH_VERSION", torch_version.as_str()),
    ] {
        vision_env.insert(k.into(), v.into());
    }
    let spawn = |dir: &Path, vars: &BTreeMap<String, String>| {
        venv.python_command(&env)
            .current_dir(dir)
            .envs(vars)
            .args(["setup.py", "bdist_wheel"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn a setup.py build")
    };
    let audio = spawn(&audio_dir, &audio_env);
    let vision = spawn(&vision_dir, &vision_env);
    for (name, child) in [("audio", audio), ("vision", vision)] {
        let output = child.wait_with_output().expect("wait for a build");
        assert!(
            output.status.success(),
            "{name} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let audio_wheel = only_wheel(&audio_dir.join("dist"), "torchaudio");
    let vision_wheel = only_wheel(&vision_dir.join("dist"), "torchvision");
    assert!(audio_wheel.ends_with(format!("torchaudio-{audio_version}-{tag}.whl")));
    assert!(vision_wheel.ends_with(format!("torchvision-{vision_version}-{tag}.whl")));
    // Upstream pins torch only when PYTORCH_VERSION is set.
    assert_eq!(requires_dist(&audio_wheel), ["torch"]);
    assert_eq!(
        requires_dist(&vision_wheel),
        [format!("torch=={torch_version}")]
    );
    for (wheel, member) in [
        (&audio_wheel, "torchaudio/lib/libtorchaudio_hip.so"),
        (&vision_wheel, "torchvision/_C_hip.so"),
    ] {
        assert_eq!(
            sorted(offload_targets(&wheel_member(wheel, member))),
            sorted(TARGETS.map(String::from).to_vec()),
            "{member}"
        );
    }
    let audio_record = build_record(&audio_dir);
    let vision_record = build_record(&vision_dir);
    assert_env(
        &audio_record,
        &audio_env,
        &["USE_ROCM", "USE_CUDA", "BUILD_VERSION", "PYTORCH_ROCM_ARCH"],
    );
    assert_env(
        &vision_record,
        &vision_env,
        &["FORCE_CUDA", "BUILD_VERSION", "VERSION_NAME"],
    );
    assert!(
        audio_record["env"].get("PYTORCH_BUILD_VERSION").is_none(),
        "torch's variables leaked into audio"
    );
    assert_eq!(
        audio_record["torch_version"].as_str(),
        Some(torch_version.as_str())
    );
    let time = |record: &serde_json::Value, key: &str| record[key].as_f64().expect("timestamp");
    assert!(
        time(&audio_record, "start") < time(&vision_record, "end")
            && time(&vision_record, "start") < time(&audio_record, "end"),
        "audio and vision did not overlap: {audio_record:?} {vision_record:?}"
    );

    // apex: python -m build with the two build options.
    let apex_dir = src.join("apex");
    let apex_version = format!("1.10.0+rocm{SDK_VERSION}");
    let mut apex_env = base.clone();
    apex_env.insert("BUILD_VERSION".into(), apex_version.clone());
    apex_env.insert("BUILD_NUMBER".into(), "1".into());
    check(
        venv.python_command(&env)
            .current_dir(&apex_dir)
            .envs(&apex_env)
            .args([
                "-m",
                "build",
                "--wheel",
                "--no-isolation",
                "-C--build-option=--cpp_ext",
                "-C--build-option=--cuda_ext",
            ]),
    );
    let apex_wheel = only_wheel(&apex_dir.join("dist"), "apex");
    assert!(apex_wheel.ends_with(format!("apex-{apex_version}-{tag}.whl")));
    assert!(wheel_members(&apex_wheel).contains(&format!("apex_C{}", venv.ext_suffix(&env))));
    assert_eq!(
        sorted(offload_targets(&wheel_member(
            &apex_wheel,
            "apex/lib/libapex_hip.so"
        ))),
        sorted(TARGETS.map(String::from).to_vec())
    );
    let apex_record = wheel_build_record(&apex_wheel, "apex");
    assert_eq!(
        (
            apex_record["cpp_ext"].as_bool(),
            apex_record["cuda_ext"].as_bool()
        ),
        (Some(true), Some(true))
    );

    // Everything installs and imports together.
    run_ok(
        venv.uv_install(&env)
            .args(["--index-url", &index_url])
            .args([&audio_wheel, &vision_wheel, &apex_wheel]),
    );
    run_ok(venv.python_command(&env).args([
        "-c",
        "import torchaudio, torchvision, apex, apex_C; assert apex_C.backend() == 'rocm'",
    ]));
}

#[test]
fn torch_build_fails_loudly_on_a_broken_contract() {
    let env = TestEnv::new();
    let server = serve(&sdk_index(SDK_VERSION, &TARGETS));
    let origins = sample_origins(&env);
    let (venv, root) = sdk_venv(
        &env,
        &env.path("venv"),
        &format!("{}simple/", server.url()),
        SDK_VERSION,
    );
    let torch_dir = env.path("pytorch");
    clone_recursive(&env, &origins.repo("torch").url, "main", &torch_dir);
    let good = torch_env(
        &root,
        &common_env(&root, &venv, &env),
        &format!("2.10.0a0+rocm{SDK_VERSION}"),
        &format!("rocm[libraries]=={SDK_VERSION}"),
    );
    let build = |vars: &BTreeMap<String, String>, force_include: bool| {
        let mut command = venv.python_command(&env);
        command.current_dir(&torch_dir).envs(vars).args([
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
        ]);
        if force_include {
            command.arg("-Cwheel.force-include.torch/_rocm_init.py=torch/_rocm_init.py");
        }
        command
    };
    let with = |changes: &[(&str, Option<&str>)]| {
        let mut vars = good.clone();
        for (key, value) in changes {
            match value {
                Some(value) => vars.insert(key.to_string(), value.to_string()),
                None => vars.remove(*key),
            };
        }
        vars
    };

    // Not hipified yet: the ROCm build has no HIP sources.
    let output = run_fail(&mut build(&good, false));
    assert!(
        output.contains("run `python tools/amd_build/build_amd.py`"),
        "{output}"
    );
    assert_eq!(build_record(&torch_dir)["ok"], serde_json::json!(false));
    run_ok(
        env.command("python3")
            .current_dir(&torch_dir)
            .arg("tools/amd_build/build_amd.py"),
    );

    // -C force-include of a file the build stage did not write.
    let output = run_fail(&mut build(&good, true));
    assert!(
        output.contains("wheel.force-include: 'torch/_rocm_init.py' does not exist"),
        "{output}"
    );
    write_rocm_init(&torch_dir, SDK_VERSION);

    for (changes, message) in [
        (
            vec![("ROCM_HOME", None), ("ROCM_PATH", None)],
            "USE_ROCM is ON but neither ROCM_HOME nor ROCM_PATH is set",
        ),
        (
            vec![("PYTORCH_ROCM_ARCH", Some("gfx906,gfx1030"))],
            "PYTORCH_ROCM_ARCH='gfx906,gfx1030' is a CMake list: separate targets with ';'",
        ),
        (
            vec![("PYTORCH_ROCM_ARCH", None)],
            "PYTORCH_ROCM_ARCH is not set",
        ),
        (
            vec![("USE_FLASH_ATTENTION", None)],
            "USE_FLASH_ATTENTION is ON but no target in PYTORCH_ROCM_ARCH (gfx906;gfx1030) is supported by aotriton",
        ),
        (
            vec![("PYTORCH_BUILD_NUMBER", None)],
            "PYTORCH_BUILD_NUMBER must be set when PYTORCH_BUILD_VERSION is set",
        ),
        (
            vec![(
                "PYTORCH_EXTRA_INSTALL_REQUIREMENTS",
                Some("rocm[libraries]==7|==oops"),
            )],
            "'==oops' is not a requirement",
        ),
        (
            vec![("USE_ROCM", Some("maybe"))],
            "USE_ROCM='maybe' is not a boolean",
        ),
        (
            vec![
                ("CMAKE_PREFIX_PATH", Some("/nowhere")),
                ("ROCM_HOME", Some("/nowhere")),
                ("ROCM_PATH", None),
            ],
            "Could not find a package configuration file provided by \"hip\"",
        ),
    ] {
        let output = run_fail(&mut build(&with(&changes), true));
        assert!(
            output.contains(message),
            "{changes:?}: expected `{message}` in:\n{output}"
        );
        let record = build_record(&torch_dir);
        assert_eq!(record["ok"], serde_json::json!(false));
        assert!(
            record["error"]
                .as_str()
                .is_some_and(|e| e.contains(message)),
            "{record:?}"
        );
    }

    // hipcc itself fails: a target this toolchain does not know.
    let output = run_fail(&mut build(
        &with(&[("PYTORCH_ROCM_ARCH", Some("gfx942"))]),
        true,
    ));
    assert!(
        output.contains("invalid target ID 'gfx942'")
            && output.contains("command failed with exit status"),
        "{output}"
    );
    assert!(only_wheel_absent(&torch_dir.join("dist")));

    // A second hipify run breaks the build, as upstream's would.
    run_ok(
        env.command("python3")
            .current_dir(&torch_dir)
            .arg("tools/amd_build/build_amd.py"),
    );
    let output = run_fail(&mut build(&good, true));
    assert!(output.contains("hip/hip/driver_types.h"), "{output}");
}

fn only_wheel_absent(dist: &Path) -> bool {
    std::fs::read_dir(dist).map_or(true, |entries| {
        !entries
            .filter_map(Result::ok)
            .any(|e| e.path().extension().is_some_and(|x| x == "whl"))
    })
}

#[test]
fn extensions_refuse_to_build_without_torch() {
    let env = TestEnv::new();
    let origins = sample_origins(&env);
    let venv = Venv::create(&env, &env.path("venv"));
    for (project, dir, entry_point) in [
        ("audio", "pytorch_audio", vec!["setup.py", "bdist_wheel"]),
        ("vision", "pytorch_vision", vec!["setup.py", "bdist_wheel"]),
        (
            "apex",
            "apex",
            vec![
                "-m",
                "build",
                "--wheel",
                "--no-isolation",
                "-C--build-option=--cpp_ext",
            ],
        ),
    ] {
        let source = env.path(dir);
        clone_recursive(
            &env,
            &origins.repo(project).url,
            origins.repo(project).head(),
            &source,
        );
        let output = run_fail(
            venv.python_command(&env)
                .current_dir(&source)
                .args(&entry_point),
        );
        assert!(
            output.contains("builds against an installed torch; install the torch wheel first"),
            "{project}:\n{output}"
        );
        assert_eq!(
            build_record(&source)["ok"],
            serde_json::json!(false),
            "{project}"
        );
    }
}
