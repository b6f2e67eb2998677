//! Git origins built by the tests: real repositories with branches, annotated and lightweight
//! tags and nested submodules, served as `file://` bare repos. Fixed identity and dates, so
//! nothing depends on the developer's git config.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{TestEnv, run_ok};

/// A working repository whose history the test writes, published to a bare origin.
pub struct RepoBuilder {
    pub name: String,
    pub dir: PathBuf,
    pub origin: PathBuf,
    env: Vec<(String, String)>,
}

impl RepoBuilder {
    pub fn new(env: &TestEnv, name: &str) -> Self {
        let dir = env.path(&format!("src/{name}"));
        let origin = env.path(&format!("origins/{name}.git"));
        std::fs::create_dir_all(&dir).expect("create repo dir");
        let mut vars: Vec<(String, String)> = env
            .vars()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (key, value) in [
            ("GIT_AUTHOR_NAME", "Fixture"),
            ("GIT_AUTHOR_EMAIL", "fixture@example.com"),
            ("GIT_COMMITTER_NAME", "Fixture"),
            ("GIT_COMMITTER_EMAIL", "fixture@example.com"),
            ("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z"),
            ("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z"),
        ] {
            vars.push((key.into(), value.into()));
        }
        let builder = RepoBuilder {
            name: name.into(),
            dir,
            origin,
            env: vars,
        };
        builder.git(&["init", "-q", "--initial-branch=main"]);
        builder
    }

    /// The origin as a `file://` URL.
    pub fn url(&self) -> String {
        format!("file://{}", self.origin.display())
    }

    pub fn git(&self, args: &[&str]) -> String {
        let mut command = Command::new("git");
        command
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(&self.dir)
            .args(["-c", "protocol.file.allow=always"])
            .args(args);
        run_ok(&mut command).trim().to_string()
    }

    pub fn write(&self, path: &str, content: &str) -> &Self {
        let full = self.dir.join(path);
        std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        std::fs::write(full, content).expect("write");
        self
    }

    /// Commits everything and returns the commit SHA.
    pub fn commit(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.head()
    }

    pub fn head(&self) -> String {
        self.git(&["rev-parse", "HEAD"])
    }

    pub fn add_submodule(&self, url: &str, path: &str) -> &Self {
        self.git(&["submodule", "add", "-q", url, path]);
        self
    }

    /// Pushes every branch and tag to the bare origin (created on first use).
    pub fn publish(&self) -> String {
        self.publish_to(&self.origin)
    }

    /// Pushes every branch and tag to another bare repository (created on first use), e.g.
    /// a fork.
    pub fn publish_to(&self, bare: &Path) -> String {
        if !bare.exists() {
            let mut command = Command::new("git");
            command
                .env_clear()
                .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            run_ok(
                command
                    .args(["init", "-q", "--bare", "--initial-branch=main"])
                    .arg(bare),
            );
        }
        let url = format!("file://{}", bare.display());
        self.git(&["push", "-q", "--force", "--all", &url]);
        self.git(&["push", "-q", "--force", "--tags", &url]);
        url
    }
}

/// The hipify script of the fixture torch: translates CUDA sources in place, edits a file in
/// a submodule, and — like upstream build_amd.py (pytorch#160579) — is not idempotent: each
/// run grows `hip/` in one include. It counts its runs in .git/hipify-runs, and with
/// FIXTURE_HIPIFY_PAUSE set it stops half-way (after writing) so a test can interrupt it.
pub const BUILD_AMD: &str = r##"import os, pathlib, time
root = pathlib.Path(".")
for path in sorted((root / "csrc").rglob("*")):
    if path.suffix in (".cu", ".cuh"):
        text = path.read_text()
        text = text.replace("#include <cuda_runtime.h>", "#include <hip/hip_runtime.h>")
        text = text.replace("cudaMalloc", "hipMalloc")
        path.write_text(text)
module = root / "csrc" / "Module.cpp"
text = module.read_text()
module.write_text(text.replace("driver_types.h", "hip/driver_types.h"))
platform = root / "third_party" / "kineto" / "platform.h"
if platform.exists():
    platform.write_text(platform.read_text().replace("HIP_PLATFORM_HCC", "HIP_PLATFORM_AMD"))
with open(root / ".git" / "hipify-runs", "a") as runs:
    runs.write("run\n")
if os.environ.get("FIXTURE_HIPIFY_PAUSE"):
    (root / ".git" / "hipify-paused").write_text("paused\n")
    time.sleep(120)
"##;

/// A small ROCm PyTorch stack in origins: torch (with related_commits, triton pins and a
/// two-level nested submodule), audio (with an empty .gitmodules), vision, triton, apex; and
/// torch's ROCm fork (`origins/torch-fork.git`, configs/stack.yaml's `rocm-fork`), which holds
/// the same history as torch when the world is made.
pub struct StackWorld {
    pub torch: RepoBuilder,
    pub fork: PathBuf,
    pub audio: RepoBuilder,
    pub vision: RepoBuilder,
    pub triton: RepoBuilder,
    pub apex: RepoBuilder,
    pub kineto: RepoBuilder,
    pub fmt: RepoBuilder,
    pub config: PathBuf,
    /// Commits the torch `main` branch pins.
    pub audio_pin: String,
    pub vision_pin: String,
    pub apex_pin: String,
    pub triton_pin: String,
}

impl StackWorld {
    /// The fork's URL.
    pub fn fork_url(&self) -> String {
        format!("file://{}", self.fork.display())
    }

    pub fn new(env: &TestEnv) -> Self {
        let fmt = RepoBuilder::new(env, "fmt");
        fmt.write("format.h", "// fmt\n#define HIP_PLATFORM_HCC 1\n");
        fmt.commit("fmt");
        fmt.publish();

        let kineto = RepoBuilder::new(env, "kineto");
        kineto.write("platform.h", "#define HIP_PLATFORM_HCC 1\n");
        kineto.add_submodule(&fmt.url(), "third_party/fmt");
        kineto.commit("kineto");
        kineto.publish();

        let simple = |name: &str, version: &str| {
            let repo = RepoBuilder::new(env, name);
            repo.write("version.txt", version);
            repo.write("README", &format!("{name}\n"));
            repo
        };
        let audio = simple("audio", "2.9.0a0\n");
        audio.write(".gitmodules", "");
        let audio_pin = audio.commit("audio 2.9");
        audio.write("README", "audio, newer\n");
        audio.commit("audio tip");
        audio.publish();
        let vision = simple("vision", "0.24.0a0\n");
        let vision_pin = vision.commit("vision 0.24");
        vision.publish();
        let apex = simple("apex", "1.9.0\n");
        let apex_pin = apex.commit("apex");
        apex.publish();
        let triton = simple("triton", "3.4.0\n");
        let triton_pin = triton.commit("triton");
        triton.git(&["checkout", "-q", "-b", "release/3.4.x"]);
        triton.write("README", "triton release branch\n");
        triton.commit("triton 3.4 release");
        triton.git(&["checkout", "-q", "main"]);
        triton.publish();

        let torch = RepoBuilder::new(env, "torch");
        torch
            .write("version.txt", "2.9.0a0\n")
            .write("tools/amd_build/build_amd.py", BUILD_AMD)
            .write(
                "csrc/kernel.cu",
                "#include <cuda_runtime.h>\nvoid* f() { void* p; cudaMalloc(&p, 4); return p; }\n",
            )
            .write("csrc/kernel.cuh", "#include <cuda_runtime.h>\n")
            .write("csrc/Module.cpp", "#include <driver_types.h>\n")
            .write(
                "related_commits",
                &format!(
                    "# os|source|project|branch|commit|origin\n\n\
                     ubuntu|pytorch|torchaudio|release/2.9|{audio_pin}|{}\n\
                     ubuntu|pytorch|torchvision|release/2.9|{vision_pin}|{}\n\
                     ubuntu|pytorch|apex|master|{apex_pin}|{}\n",
                    audio.url(),
                    vision.url(),
                    apex.url()
                ),
            )
            .write(
                ".ci/docker/ci_commit_pins/triton.txt",
                &format!("{triton_pin}\n"),
            )
            .write(".ci/docker/triton_version.txt", "3.4.0\n")
            .add_submodule(&kineto.url(), "third_party/kineto");
        torch.commit("torch 2.9");
        torch.git(&["tag", "-a", "v2.9.0", "-m", "release 2.9.0"]);
        torch.git(&["branch", "release/2.9"]);
        torch.write("README", "tip of main\n");
        torch.commit("torch tip");
        torch.git(&["tag", "tip-light"]);
        torch.publish();
        let fork = env.path("origins/torch-fork.git");
        torch.publish_to(&fork);

        let config = env.path("stack.yaml");
        std::fs::write(
            &config,
            stack_yaml(&torch, &fork, &audio, &vision, &triton, &apex),
        )
        .expect("write config");
        StackWorld {
            torch,
            fork,
            audio,
            vision,
            triton,
            apex,
            kineto,
            fmt,
            config,
            audio_pin,
            vision_pin,
            apex_pin,
            triton_pin,
        }
    }
}

fn stack_yaml(
    torch: &RepoBuilder,
    fork: &Path,
    audio: &RepoBuilder,
    vision: &RepoBuilder,
    triton: &RepoBuilder,
    apex: &RepoBuilder,
) -> String {
    let base = std::fs::read_to_string(super::repo_root().join("configs/stack.yaml"))
        .expect("read configs/stack.yaml");
    let mut text = base
        .replace("https://github.com/pytorch/pytorch.git", &torch.url())
        .replace(
            "https://github.com/ROCm/pytorch.git",
            &format!("file://{}", fork.display()),
        )
        .replace("https://github.com/pytorch/audio.git", &audio.url())
        .replace("https://github.com/pytorch/vision.git", &vision.url())
        .replace("https://github.com/ROCm/triton.git", &triton.url())
        .replace("https://github.com/ROCm/apex.git", &apex.url())
        .replace("ref: nightly", "ref: main")
        .replace("ref: master", "ref: main");
    // The fixture torch translates csrc/ in place: all of it must be clean afterwards.
    text = text.replacen(
        "      script: tools/amd_build/build_amd.py\n",
        "      script: tools/amd_build/build_amd.py\n      check-paths: [csrc]\n",
        1,
    );
    text
}

/// Lists `git status --porcelain` of a checkout.
pub fn status(dir: &Path) -> String {
    let mut command = Command::new("git");
    run_ok(
        command
            .current_dir(dir)
            .args(["status", "--porcelain", "--untracked-files=all"]),
    )
}

/// Runs a read-only git command in a checkout and returns its trimmed stdout.
pub fn git_in(dir: &Path, args: &[&str]) -> String {
    let mut command = Command::new("git");
    run_ok(
        command
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .args(args),
    )
    .trim()
    .to_string()
}

/// The reference's checkout of one project, step for step, one after another
/// (TheRock external-builds/pytorch/repo_management.py: do_checkout, do_hipify,
/// commit_hipify; the same steps as benches/reference-checkout.sh): fetch the ref, check it
/// out, tag it, check out every submodule recursively and tag each, hide their changes from
/// their parents, run `tools/amd_build/build_amd.py` from the root, then commit and tag
/// hipify's changes in every repository it changed.
pub fn reference_checkout(env: &TestEnv, url: &str, reference: &str, dir: &Path) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let git = |args: &[&str]| {
        run_ok(
            env.command("git")
                .current_dir(dir)
                .args(["-c", "protocol.file.allow=always"])
                .args([
                    "-c",
                    "user.name=therockbot",
                    "-c",
                    "user.email=therockbot@example.com",
                ])
                .args(["-c", "tag.gpgSign=false", "-c", "commit.gpgSign=false"])
                .args(args),
        )
    };
    git(&["init", "-q", "--initial-branch=main"]);
    git(&["config", "advice.detachedHead", "false"]);
    git(&["remote", "add", "origin", url]);
    git(&[
        "fetch",
        "-q",
        "--no-recurse-submodules",
        "origin",
        reference,
    ]);
    git(&["checkout", "-q", "FETCH_HEAD"]);
    git(&["tag", "-f", "THEROCK_UPSTREAM_DIFFBASE"]);
    git(&["submodule", "update", "-q", "--init", "--recursive"]);
    git(&[
        "submodule",
        "foreach",
        "-q",
        "--recursive",
        "git -c tag.gpgSign=false tag -f THEROCK_UPSTREAM_DIFFBASE >/dev/null",
    ]);
    git(&[
        "submodule",
        "foreach",
        "-q",
        "--recursive",
        "git -C \"$toplevel\" config \"submodule.$name.ignore\" all; git -C \"$toplevel\" update-index --skip-worktree \"$sm_path\"",
    ]);
    run_ok(
        env.command("python3")
            .current_dir(dir)
            .arg("tools/amd_build/build_amd.py"),
    );
    for repo in repositories(dir) {
        let at = dir.join(&repo);
        let changed = run_ok(env.command("git").current_dir(&at).args([
            "status",
            "--porcelain",
            "-u",
            "--ignore-submodules",
        ]));
        if !changed.trim().is_empty() {
            let repo_git = |args: &[&str]| {
                run_ok(
                    env.command("git")
                        .current_dir(&at)
                        .args(["-c", "user.name=therockbot"])
                        .args(["-c", "user.email=therockbot@example.com"])
                        .args(["-c", "commit.gpgSign=false", "-c", "tag.gpgSign=false"])
                        .args(args),
                )
            };
            repo_git(&["add", "-A"]);
            repo_git(&["commit", "-q", "-m", "DO NOT SUBMIT: HIPIFY"]);
            repo_git(&["tag", "-f", "THEROCK_HIPIFY_DIFFBASE"]);
        }
    }
}

/// Every repository of a checkout: `.` and each submodule's path, recursively.
pub fn repositories(dir: &Path) -> Vec<String> {
    let listed = git_in(
        dir,
        &[
            "submodule",
            "foreach",
            "-q",
            "--recursive",
            "echo \"$displaypath\"",
        ],
    );
    let mut repos = vec![".".to_string()];
    repos.extend(listed.lines().map(str::to_string));
    repos
}

/// What the reference's checkout promises of each repository of a tree, one line each: the
/// commit `THEROCK_UPSTREAM_DIFFBASE` tags, `HEAD`'s tree, and for a repository hipify
/// changed the tree `THEROCK_HIPIFY_DIFFBASE` tags, its parent and whether `HEAD` is it.
/// Commit SHAs of hipify commits differ by identity and date, so trees are compared.
pub fn checkout_facts(dir: &Path) -> Vec<String> {
    repositories(dir)
        .into_iter()
        .map(|repo| {
            let at = dir.join(&repo);
            let tag = |name: &str, suffix: &str| {
                let output = Command::new("git")
                    .current_dir(&at)
                    .args(["rev-parse", "--verify", "--quiet"])
                    .arg(format!("refs/tags/{name}{suffix}"))
                    .output()
                    .expect("git rev-parse");
                String::from_utf8_lossy(&output.stdout).trim().to_string()
            };
            let hipify = match tag("THEROCK_HIPIFY_DIFFBASE", "") {
                hipified if hipified.is_empty() => "not hipified".to_string(),
                hipified => format!(
                    "hipified {} on {}, HEAD {}",
                    tag("THEROCK_HIPIFY_DIFFBASE", "^{tree}"),
                    tag("THEROCK_HIPIFY_DIFFBASE", "^"),
                    if git_in(&at, &["rev-parse", "HEAD"]) == hipified {
                        "is it"
                    } else {
                        "is not it"
                    }
                ),
            };
            format!(
                "{repo}: upstream {}, tree {}, {hipify}",
                tag("THEROCK_UPSTREAM_DIFFBASE", "^{commit}"),
                git_in(&at, &["rev-parse", "HEAD^{tree}"]),
            )
        })
        .collect()
}
