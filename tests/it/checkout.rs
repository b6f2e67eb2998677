//! `rockbuild checkout` and `rockbuild lock` against real git origins.

use std::path::Path;

use predicates::prelude::*;
use predicates::str::contains;
use serde_json::Value;

use crate::common::TestEnv;
use crate::common::git::{StackWorld, git_in, status};

fn checkout(
    env: &TestEnv,
    world: &StackWorld,
    root: &str,
    extra: &[&str],
) -> assert_cmd::assert::Assert {
    env.rockbuild()
        .args(["checkout", "--config"])
        .arg(&world.config)
        .args(["--root-checkout-dir", root])
        .args(extra)
        .assert()
}

fn read_lock(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("lock exists"))
        .expect("lock is JSON")
}

fn hipify_runs(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join(".git/hipify-runs")).map_or(0, |t| t.lines().count())
}

/// Whether every entry of the repository's index is older, in whole seconds, than the index
/// file: git re-reads the file of any other entry ("racily clean") at every status.
fn index_is_settled(dir: &Path) -> bool {
    let index = dir.join(git_in(dir, &["rev-parse", "--git-path", "index"]));
    let written = std::fs::metadata(&index)
        .and_then(|m| m.modified())
        .expect("index")
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after the epoch")
        .as_secs();
    let entries = git_in(dir, &["ls-files", "--debug"]);
    let mtimes: Vec<u64> = entries
        .lines()
        .filter_map(|line| line.trim().strip_prefix("mtime: "))
        .filter_map(|stamp| stamp.split(':').next()?.parse().ok())
        .collect();
    !mtimes.is_empty() && mtimes.iter().all(|&sec| sec < written)
}

#[test]
fn whole_stack_checkout_tags_hipifies_and_locks() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    checkout(&env, &world, "ws", &[])
        .success()
        .stderr(contains("project"))
        .stderr(contains("hipify"));
    let root = env.path("ws");
    let torch = root.join("pytorch");

    // torch: upstream tag on the fetched commit, hipify commit on top, hipify tag on it.
    let upstream = git_in(&torch, &["rev-parse", "THEROCK_UPSTREAM_DIFFBASE"]);
    assert_eq!(upstream, world.torch.head());
    assert_eq!(
        git_in(&torch, &["log", "-1", "--format=%s"]),
        "DO NOT SUBMIT: HIPIFY"
    );
    assert_eq!(git_in(&torch, &["rev-parse", "HEAD^"]), upstream);
    assert_eq!(
        git_in(&torch, &["rev-parse", "THEROCK_HIPIFY_DIFFBASE"]),
        git_in(&torch, &["rev-parse", "HEAD"])
    );
    let kernel = std::fs::read_to_string(torch.join("csrc/kernel.cu")).expect("kernel");
    assert!(
        kernel.contains("hipMalloc") && kernel.contains("<hip/hip_runtime.h>"),
        "{kernel}"
    );
    assert_eq!(status(&torch), "", "hipify changes are committed");

    // Nested submodules: checked out, tagged, hipify committed where it changed something.
    let kineto = torch.join("third_party/kineto");
    assert_eq!(
        git_in(&kineto, &["log", "-1", "--format=%s"]),
        "DO NOT SUBMIT: HIPIFY"
    );
    assert!(
        std::fs::read_to_string(kineto.join("platform.h"))
            .expect("platform")
            .contains("HIP_PLATFORM_AMD")
    );
    let fmt = kineto.join("third_party/fmt");
    assert_eq!(
        git_in(&fmt, &["rev-parse", "THEROCK_UPSTREAM_DIFFBASE"]),
        world.fmt.head()
    );
    // Left alone by hipify: no hipify tag, as the reference tags only what it committed.
    assert_eq!(
        git_in(&fmt, &["tag", "--list", "THEROCK_HIPIFY_DIFFBASE"]),
        ""
    );
    // Submodule changes are hidden from the parent: ignore=all and skip-worktree.
    assert_eq!(
        git_in(&torch, &["config", "submodule.third_party/kineto.ignore"]),
        "all"
    );
    assert!(git_in(&torch, &["ls-files", "-v", "third_party/kineto"]).starts_with("S "));
    // A repository the script left alone has its index rewritten after its files (beside the
    // script), so the statuses after it trust stat data instead of re-reading every file.
    assert!(
        index_is_settled(&fmt),
        "fmt's index holds racily clean entries"
    );

    // Projects pinned by torch: audio/vision/apex from related_commits, triton from its pin.
    assert_eq!(
        git_in(&root.join("pytorch_audio"), &["rev-parse", "HEAD"]),
        world.audio_pin
    );
    assert_eq!(
        git_in(&root.join("pytorch_vision"), &["rev-parse", "HEAD"]),
        world.vision_pin
    );
    assert_eq!(
        git_in(&root.join("apex"), &["rev-parse", "HEAD"]),
        world.apex_pin
    );
    assert_eq!(
        git_in(&root.join("triton"), &["rev-parse", "HEAD"]),
        world.triton_pin
    );
    assert_eq!(
        std::fs::read_to_string(root.join("triton/build_env.json")).expect("build_env.json"),
        "{\"TRITON_WHEEL_VERSION_SUFFIX\": \"\"}\n"
    );
    assert_eq!(
        status(&root.join("triton")),
        "",
        "build_env.json is excluded locally"
    );

    // The lock: every pin, where it came from, submodules and the hipify stamp.
    let lock = read_lock(&root.join("rockbuild.lock.json"));
    assert_eq!(lock["schema"], 1);
    let projects = lock["projects"].as_object().expect("projects");
    assert_eq!(
        projects.keys().collect::<Vec<_>>(),
        ["torch", "audio", "vision", "triton", "apex"]
    );
    let torch_lock = &lock["projects"]["torch"];
    assert_eq!(torch_lock["commit"], world.torch.head());
    assert_eq!(torch_lock["pin"]["kind"], "default");
    let subs: Vec<&str> = torch_lock["submodules"]
        .as_array()
        .expect("subs")
        .iter()
        .map(|s| s["path"].as_str().expect("path"))
        .collect();
    assert_eq!(
        subs,
        ["third_party/kineto", "third_party/kineto/third_party/fmt"]
    );
    let stamp = &torch_lock["hipify"];
    assert_eq!(
        stamp["upstream_tree"],
        git_in(&torch, &["rev-parse", "THEROCK_UPSTREAM_DIFFBASE^{tree}"])
    );
    assert_eq!(
        stamp["result_tree"],
        git_in(&torch, &["rev-parse", "HEAD^{tree}"])
    );
    assert_eq!(stamp["changed_files"], 4);
    assert_eq!(
        lock["projects"]["audio"]["pin"],
        serde_json::json!({"kind": "related_commits", "file": "pytorch/related_commits", "line": 3})
    );
    assert_eq!(lock["projects"]["apex"]["pin"]["line"], 5);
    assert_eq!(
        lock["projects"]["triton"]["pin"],
        serde_json::json!({"kind": "commit_file", "file": "pytorch/.ci/docker/ci_commit_pins/triton.txt"})
    );
    assert!(lock["projects"]["apex"]["hipify"].is_null());
}

#[test]
fn second_run_is_up_to_date_and_changes_nothing() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    checkout(&env, &world, "ws", &[]).success();
    let torch = env.path("ws/pytorch");
    let head = git_in(&torch, &["rev-parse", "HEAD"]);
    let kernel = torch.join("csrc/kernel.cu");
    let mtime = std::fs::metadata(&kernel)
        .and_then(|m| m.modified())
        .expect("mtime");
    let lock_before = std::fs::read_to_string(env.path("ws/rockbuild.lock.json")).expect("lock");

    checkout(&env, &world, "ws", &[])
        .success()
        .stderr(contains("up to date"));
    assert_eq!(
        hipify_runs(&torch),
        1,
        "hipify never runs twice on the same tree"
    );
    assert_eq!(git_in(&torch, &["rev-parse", "HEAD"]), head);
    assert_eq!(
        std::fs::metadata(&kernel)
            .and_then(|m| m.modified())
            .expect("mtime"),
        mtime
    );
    assert_eq!(
        std::fs::read_to_string(env.path("ws/rockbuild.lock.json")).expect("lock"),
        lock_before
    );
}

#[test]
fn uncommitted_hipify_is_up_to_date_too() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let args = ["--project", "torch", "--no-commit-hipify"];
    checkout(&env, &world, "ws", &args).success();
    let torch = env.path("ws/pytorch");
    assert_eq!(git_in(&torch, &["rev-parse", "HEAD"]), world.torch.head());
    assert!(status(&torch).contains(" M csrc/kernel.cu"));
    checkout(&env, &world, "ws", &args)
        .success()
        .stderr(contains("up to date"));
    assert_eq!(hipify_runs(&torch), 1);
    // Switching to committed hipify starts again from the pristine tree and takes the
    // result the first run left in the cache (the script does not run again).
    checkout(&env, &world, "ws", &["--project", "torch"]).success();
    assert_eq!(hipify_runs(&torch), 1);
    assert_eq!(
        git_in(&torch, &["log", "-1", "--format=%s"]),
        "DO NOT SUBMIT: HIPIFY"
    );
    let module = std::fs::read_to_string(torch.join("csrc/Module.cpp")).expect("module");
    assert_eq!(
        module, "#include <hip/driver_types.h>\n",
        "hipify ran on a pristine tree"
    );
}

#[test]
fn submodules_come_from_the_cache_laid_out_as_git_lays_them_out() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    checkout(&env, &world, "cold", &["--project", "torch"]).success();
    checkout(&env, &world, "warm", &["--project", "torch"]).success();
    let cold = env.path("cold/pytorch");
    let torch = env.path("warm/pytorch");
    assert_eq!(
        hipify_runs(&torch),
        0,
        "a new root takes hipify from the cache"
    );
    for rel in [
        "",
        "third_party/kineto",
        "third_party/kineto/third_party/fmt",
    ] {
        assert_eq!(
            git_in(&torch.join(rel), &["rev-parse", "HEAD", "HEAD^{tree}"]),
            git_in(&cold.join(rel), &["rev-parse", "HEAD", "HEAD^{tree}"]),
            "{rel}: the cached hipify commit, checked out directly"
        );
        assert_eq!(status(&torch.join(rel)), "", "{rel} is clean");
    }
    // Where `git submodule update` would put them: repositories under the parent's
    // .git/modules, a `.git` file in the working tree, the URL in the parent's config.
    let kineto = torch.join("third_party/kineto");
    let fmt = kineto.join("third_party/fmt");
    assert_eq!(
        git_in(&kineto, &["rev-parse", "--absolute-git-dir"]),
        torch
            .join(".git/modules/third_party/kineto")
            .display()
            .to_string()
    );
    assert_eq!(
        git_in(&fmt, &["rev-parse", "--absolute-git-dir"]),
        torch
            .join(".git/modules/third_party/kineto/modules/third_party/fmt")
            .display()
            .to_string()
    );
    assert_eq!(
        git_in(&kineto, &["rev-parse", "--show-toplevel"]),
        kineto.display().to_string()
    );
    assert_eq!(
        git_in(&torch, &["config", "submodule.third_party/kineto.url"]),
        world.kineto.url()
    );
    assert_eq!(
        git_in(&kineto, &["config", "remote.origin.url"]),
        world.kineto.url()
    );
    assert_eq!(
        git_in(&kineto, &["config", "submodule.third_party/fmt.url"]),
        world.fmt.url()
    );
    // git itself sees both as initialised submodules (`-` would mean not checked out; the
    // parent's ignore=all hides kineto's hipify commit), with every object they need.
    let recorded = |dir: &Path, path: &str| git_in(dir, &["rev-parse", &format!("HEAD:{path}")]);
    assert_eq!(
        format!(
            " {}",
            git_in(&torch, &["submodule", "status", "--recursive"])
        ),
        format!(
            " {} third_party/kineto (THEROCK_UPSTREAM_DIFFBASE)\n {} third_party/kineto/third_party/fmt (THEROCK_UPSTREAM_DIFFBASE)",
            recorded(&torch, "third_party/kineto"),
            recorded(&kineto, "third_party/fmt"),
        )
    );
    for dir in [&torch, &kineto, &fmt] {
        git_in(dir, &["fsck", "--connectivity-only", "--no-dangling"]);
    }
}

#[test]
fn up_to_date_runs_trust_the_snapshot_only_while_nothing_changed() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let args = ["--project", "torch"];
    checkout(&env, &world, "ws", &args).success();
    let torch = env.path("ws/pytorch");
    let snapshot = torch.join(".git/rockbuild/snapshot.json");
    assert!(snapshot.is_file(), "the checkout records a snapshot");
    checkout(&env, &world, "ws", &args)
        .success()
        .stderr(contains("up to date"));

    // An edit, a new file and a deleted file, in torch and in a nested submodule: each one is
    // seen (refused as a user change), and once undone the tree is up to date again.
    for rel in ["", "third_party/kineto/third_party/fmt"] {
        let repo = torch.join(rel);
        let tracked = git_in(&repo, &["ls-files"]);
        let file = tracked.lines().next().expect("a tracked file").to_string();
        let shown = |code: &str, path: &str| {
            let full = if rel.is_empty() {
                path.to_string()
            } else {
                format!("{rel}/{path}")
            };
            contains(format!("{code} {full}")).or(contains(format!("{rel}/{code} {path}")))
        };
        let original = std::fs::read(repo.join(&file)).expect("read");

        let mut edited = original.clone();
        edited.extend_from_slice(b"// local edit\n");
        std::fs::write(repo.join(&file), &edited).expect("edit");
        checkout(&env, &world, "ws", &args)
            .code(2)
            .stderr(shown("M", &file));
        std::fs::write(repo.join(&file), &original).expect("undo the edit");
        checkout(&env, &world, "ws", &args)
            .success()
            .stderr(contains("up to date"));

        std::fs::write(repo.join("scratch.txt"), "new\n").expect("add");
        checkout(&env, &world, "ws", &args)
            .code(2)
            .stderr(shown("??", "scratch.txt"));
        std::fs::remove_file(repo.join("scratch.txt")).expect("undo the addition");
        checkout(&env, &world, "ws", &args)
            .success()
            .stderr(contains("up to date"));

        std::fs::remove_file(repo.join(&file)).expect("delete");
        checkout(&env, &world, "ws", &args)
            .code(2)
            .stderr(shown("D", &file));
        std::fs::write(repo.join(&file), &original).expect("undo the deletion");
        checkout(&env, &world, "ws", &args)
            .success()
            .stderr(contains("up to date"));
        assert!(snapshot.is_file(), "an up-to-date run records what it read");
    }
    assert_eq!(hipify_runs(&torch), 1);
}

#[test]
fn every_ref_kind_and_shallow_fetches() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let first = world.torch.git(&["rev-parse", "v2.9.0^{commit}"]);
    for (reference, expected) in [
        ("release/2.9", first.clone()),
        ("v2.9.0", first.clone()),
        ("tip-light", world.torch.head()),
        (first.as_str(), first.clone()),
    ] {
        let root = format!("ref-{}", reference.replace('/', "-"));
        checkout(
            &env,
            &world,
            &root,
            &[
                "--project",
                "torch",
                "--repo-hashtag",
                reference,
                "--no-hipify",
                "--depth",
                "1",
            ],
        )
        .success();
        let torch = env.path(&format!("{root}/pytorch"));
        assert_eq!(
            git_in(&torch, &["rev-parse", "HEAD"]),
            expected,
            "{reference}"
        );
        assert_eq!(
            git_in(&torch, &["rev-parse", "THEROCK_UPSTREAM_DIFFBASE"]),
            expected
        );
        assert!(
            torch.join(".git/shallow").exists(),
            "--depth makes a shallow clone"
        );
        let lock = read_lock(&env.path(&format!("{root}/rockbuild.lock.json")));
        assert_eq!(lock["projects"]["torch"]["requested_ref"], reference);
        assert_eq!(lock["projects"]["torch"]["pin"]["flag"], "--repo-hashtag");
    }
}

#[test]
fn submodules_and_hipify_can_be_skipped() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    checkout(
        &env,
        &world,
        "ws",
        &["--project", "torch", "--no-submodules", "--no-hipify"],
    )
    .success();
    let torch = env.path("ws/pytorch");
    assert!(!torch.join("third_party/kineto/platform.h").exists());
    assert_eq!(git_in(&torch, &["rev-parse", "HEAD"]), world.torch.head());
    assert_eq!(hipify_runs(&torch), 0);
    let lock = read_lock(&env.path("ws/rockbuild.lock.json"));
    assert_eq!(
        lock["projects"]["torch"]["submodules"],
        serde_json::json!([])
    );
    assert!(lock["projects"]["torch"]["hipify"].is_null());
    // The same request again: nothing to do.
    checkout(
        &env,
        &world,
        "ws",
        &["--project", "torch", "--no-submodules", "--no-hipify"],
    )
    .success()
    .stderr(contains("up to date"));
}

#[test]
fn flags_beat_pins_and_missing_rows_can_be_required() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let audio_tip = world.audio.head();
    checkout(
        &env,
        &world,
        "ws",
        &["--hashtag", "audio=main", "--no-hipify"],
    )
    .success();
    assert_eq!(
        git_in(&env.path("ws/pytorch_audio"), &["rev-parse", "HEAD"]),
        audio_tip
    );
    let lock = read_lock(&env.path("ws/rockbuild.lock.json"));
    assert_eq!(
        lock["projects"]["audio"]["pin"]["flag"],
        "--hashtag audio=main"
    );

    // A requested torch ref without related_commits: the shipped default (the reference's
    // rule for every ref but nightly) requires the rows; a presets table whose default pins
    // optionally takes them as required only with --require-related-commit.
    world
        .torch
        .git(&["checkout", "-q", "-b", "bare-pins", "v2.9.0"]);
    world.torch.git(&["rm", "-q", "related_commits"]);
    world.torch.commit("no pins");
    world.torch.publish();
    let optional = env.path("optional-presets.yaml");
    std::fs::write(
        &optional,
        "schema: 1\npresets: {}\ndefault:\n  description: torch as requested, pins optional\n  projects:\n    torch: {ref: requested}\n",
    )
    .expect("presets");
    for (extra, message) in [
        (
            vec![
                "--presets".to_string(),
                optional.display().to_string(),
                "--require-related-commit".into(),
            ],
            "'torch' has no pytorch/related_commits to pin 'vision' (required by --require-related-commit)",
        ),
        (
            vec!["--gitrepo-origin".to_string(), world.torch.url()],
            "'torch' has no pytorch/related_commits to pin 'vision' (required by preset 'default', configs/presets.yaml (built in):",
        ),
    ] {
        env.rockbuild()
            .args(["checkout", "--config"])
            .arg(&world.config)
            .args([
                "--root-checkout-dir",
                "strict",
                "--repo-hashtag",
                "bare-pins",
                "--no-hipify",
            ])
            .args(&extra)
            .args(["--project", "torch", "--project", "vision"])
            .assert()
            .code(2)
            .stderr(contains(message));
    }
    assert!(!env.path("strict/rockbuild.lock.json").exists());
}

#[test]
fn malformed_related_commits_names_the_line() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    world.torch.write(
        "related_commits",
        "# pins\nubuntu|pytorch|torchaudio|main\n",
    );
    world.torch.commit("broken pins");
    world.torch.publish();
    checkout(
        &env,
        &world,
        "ws",
        &["--project", "torch", "--project", "audio", "--no-hipify"],
    )
    .code(2)
    .stderr(contains(
        "pytorch/related_commits:2: malformed related_commits line: 4 fields instead of 6",
    ))
    .stderr(contains("the lock"));
    assert!(!env.path("ws/rockbuild.lock.json").exists());
}

#[test]
fn unknown_refs_and_unreachable_origins_fail_without_a_lock() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    checkout(
        &env,
        &world,
        "ws",
        &["--project", "torch", "--repo-hashtag", "no-such-branch"],
    )
    .code(2)
    .stderr(contains("unknown ref 'no-such-branch' for 'torch'"));
    assert!(!env.path("ws/rockbuild.lock.json").exists());

    // A previous lock survives a failed run untouched.
    checkout(&env, &world, "ws", &["--project", "vision", "--no-hipify"]).success();
    let before = std::fs::read_to_string(env.path("ws/rockbuild.lock.json")).expect("lock");
    checkout(
        &env,
        &world,
        "ws",
        &[
            "--project",
            "vision",
            "--origin",
            "vision=file:///nonexistent/vision.git",
            "--hashtag",
            "vision=main",
            "--fetch-attempts",
            "1",
        ],
    )
    .code(1)
    .stderr(contains(
        "fetching 'main' of 'vision' from file:///nonexistent/vision.git failed",
    ))
    .stderr(contains("does not appear to be a git repository"));
    assert_eq!(
        std::fs::read_to_string(env.path("ws/rockbuild.lock.json")).expect("lock"),
        before
    );
}

#[test]
fn a_stalled_origin_is_retried_then_stopped_by_the_watchdog() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    // A server that accepts connections and never answers, counting them.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let connections = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = connections.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(stream);
        }
    });
    let origin = format!("http://127.0.0.1:{port}/torch.git");
    let output = checkout(
        &env,
        &world,
        "ws",
        &[
            "--project",
            "torch",
            "--gitrepo-origin",
            &origin,
            "--stall-timeout",
            "2",
            "--fetch-attempts",
            "2",
        ],
    )
    .code(1)
    .stderr(contains(format!(
        "fetching 'main' of 'torch' from {origin} stopped: the origin accepted the connection but sent nothing; check that it is reachable and serving (a proxy, a firewall, an overloaded server) and run again — a slow but live origin needs a larger --stall-timeout, a flaky one more --fetch-attempts"
    )))
    .stderr(contains("made no progress for 2s and was stopped (watchdog), on each of 2 attempts"))
    .get_output()
    .clone();
    assert_eq!(
        connections.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "one connection per attempt: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!env.path("ws/rockbuild.lock.json").exists());
}

#[test]
fn dirty_trees_are_refused_unless_forced() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    checkout(&env, &world, "ws", &["--project", "torch"]).success();
    let torch = env.path("ws/pytorch");
    std::fs::write(torch.join("version.txt"), "2.9.0a0+mine\n").expect("edit");
    std::fs::write(torch.join("notes.txt"), "scratch\n").expect("new file");
    std::fs::write(
        torch.join("third_party/kineto/platform.h"),
        "// local edit\n",
    )
    .expect("edit submodule");
    checkout(&env, &world, "ws", &["--project", "torch"])
        .code(2)
        .stderr(contains("has uncommitted changes that hipify did not make"))
        .stderr(contains("M version.txt"))
        .stderr(contains("?? notes.txt"))
        .stderr(
            contains("third_party/kineto/M platform.h")
                .or(contains("M third_party/kineto/platform.h")),
        )
        .stderr(contains("--force"));
    // A dry run reports the tree as it is and what the checkout would do: refuse.
    let dry = checkout(&env, &world, "ws", &["--project", "torch", "--dry-run"])
        .success()
        .get_output()
        .clone();
    let plan = String::from_utf8_lossy(&dry.stdout);
    assert!(
        plan.contains("torch (pytorch): would refuse: 3 uncommitted changes hipify did not make (")
            && plan.contains("M version.txt")
            && plan.contains("?? notes.txt")
            && plan.contains("or pass --force to discard them"),
        "{plan}"
    );
    assert_eq!(
        std::fs::read_to_string(torch.join("version.txt")).expect("kept"),
        "2.9.0a0+mine\n"
    );

    checkout(&env, &world, "ws", &["--project", "torch", "--force"]).success();
    assert_eq!(
        std::fs::read_to_string(torch.join("version.txt")).expect("reset"),
        "2.9.0a0\n"
    );
    assert!(!torch.join("notes.txt").exists());
    assert_eq!(status(&torch), "");
    assert_eq!(
        hipify_runs(&torch),
        1,
        "the pristine tree got its hipify result from the cache after --force"
    );
    assert_eq!(
        std::fs::read_to_string(torch.join("csrc/Module.cpp")).expect("module"),
        "#include <hip/driver_types.h>\n"
    );
    assert_eq!(
        git_in(&torch, &["log", "-1", "--format=%s"]),
        "DO NOT SUBMIT: HIPIFY"
    );
}

#[test]
fn from_lock_reproduces_the_same_trees() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    checkout(&env, &world, "first", &["--repo-hashtag", "release/2.9"]).success();
    // The branch moves on; the lock still names the old commits.
    world.torch.git(&["checkout", "-q", "release/2.9"]);
    world.torch.write("README", "moved\n");
    world.torch.commit("release branch moves");
    world.torch.publish();

    let lock_path = env.path("first/rockbuild.lock.json");
    env.rockbuild()
        .args(["checkout", "--config"])
        .arg(&world.config)
        .args(["--root-checkout-dir", "second", "--from-lock"])
        .arg(&lock_path)
        .assert()
        .success();
    let first = read_lock(&lock_path);
    let second = read_lock(&env.path("second/rockbuild.lock.json"));
    for project in ["torch", "audio", "vision", "triton", "apex"] {
        for key in ["commit", "tree", "submodules", "hipify"] {
            assert_eq!(
                first["projects"][project][key], second["projects"][project][key],
                "{project}.{key}"
            );
        }
    }
    for dir in ["pytorch", "pytorch/third_party/kineto", "pytorch_vision"] {
        assert_eq!(
            git_in(
                &env.path(&format!("first/{dir}")),
                &["rev-parse", "HEAD^{tree}"]
            ),
            git_in(
                &env.path(&format!("second/{dir}")),
                &["rev-parse", "HEAD^{tree}"]
            ),
            "{dir}"
        );
    }
    // Same upstream + same hipify result = the same hipify commit, everywhere.
    assert_eq!(
        git_in(&env.path("first/pytorch"), &["rev-parse", "HEAD"]),
        git_in(&env.path("second/pytorch"), &["rev-parse", "HEAD"])
    );
}

#[test]
fn therock_manifests_are_accepted() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let manifest = env.path("therock-manifest_torch_linux_release-2.9.json");
    std::fs::write(
        &manifest,
        serde_json::json!({
            "schema_version": 1,
            "pytorch": {"repo": world.torch.url(), "commit": world.torch.head(), "branch": "main"},
            "pytorch_vision": {"repo": world.vision.url(), "commit": world.vision_pin},
            "therock": {"repo": "https://github.com/ROCm/TheRock.git", "commit": "0123456789abcdef0123456789abcdef01234567"}
        })
        .to_string(),
    )
    .expect("write manifest");
    env.rockbuild()
        .args(["checkout", "--config"])
        .arg(&world.config)
        .args(["--root-checkout-dir", "ws", "--no-hipify", "--from-lock"])
        .arg(&manifest)
        .assert()
        .success();
    let lock = read_lock(&env.path("ws/rockbuild.lock.json"));
    assert_eq!(
        lock["projects"]
            .as_object()
            .expect("projects")
            .keys()
            .collect::<Vec<_>>(),
        ["torch", "vision"]
    );
    assert_eq!(lock["projects"]["vision"]["commit"], world.vision_pin);
    assert_eq!(lock["projects"]["torch"]["requested_ref"], "main");
}

/// `--manifest-url`, as TheRock's checkout_from_manifest.py has it: a manifest served over
/// HTTP is read (bounded) and reproduced exactly like a manifest file; what cannot be read
/// says why and names the URL.
#[test]
fn therock_manifests_are_read_from_a_url() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let served = env.path("served");
    std::fs::create_dir_all(&served).expect("mkdir");
    let name = "therock-manifest_torch_linux_release-2.9.json";
    std::fs::write(
        served.join(name),
        serde_json::json!({
            "schema_version": 1,
            "pytorch": {"repo": world.torch.url(), "commit": world.torch.head(), "branch": "main"},
            "pytorch_vision": {"repo": world.vision.url(), "commit": world.vision_pin},
            "therock": {"repo": "https://github.com/ROCm/TheRock.git", "commit": "0123456789abcdef0123456789abcdef01234567"}
        })
        .to_string(),
    )
    .expect("write manifest");
    // 1 MiB and one byte: more than any manifest.
    std::fs::write(served.join("huge.json"), vec![b' '; (1 << 20) + 1]).expect("write");
    std::fs::write(served.join("lock.json"), r#"{"schema": 1, "projects": {}}"#).expect("write");
    let server = crate::common::http::serve(&served);
    let url = format!("{}{name}", server.url());
    let manifest_url = |root: &str, url: &str| {
        let mut cmd = env.rockbuild();
        cmd.args(["checkout", "--config"]).arg(&world.config).args([
            "--root-checkout-dir",
            root,
            "--no-hipify",
            "--manifest-url",
            url,
        ]);
        cmd.assert()
    };
    manifest_url("ws", &url).success();
    let lock = read_lock(&env.path("ws/rockbuild.lock.json"));
    assert_eq!(
        lock["projects"]
            .as_object()
            .expect("projects")
            .keys()
            .collect::<Vec<_>>(),
        ["torch", "vision"]
    );
    assert_eq!(lock["projects"]["torch"]["commit"], world.torch.head());
    assert_eq!(lock["projects"]["vision"]["commit"], world.vision_pin);
    assert_eq!(
        lock["projects"]["vision"]["pin"],
        serde_json::json!({"kind": "lock", "file": url})
    );

    let base = server.url();
    manifest_url("missing", &format!("{base}nothing-here.json"))
        .code(2)
        .stderr(contains(format!(
            "--manifest-url {base}nothing-here.json: the server answered HTTP 404; check the URL"
        )));
    manifest_url("huge", &format!("{base}huge.json"))
        .code(2)
        .stderr(contains(
            "huge.json: the answer is larger than 1048576 bytes, which no TheRock manifest is",
        ));
    manifest_url("lock", &format!("{base}lock.json"))
        .code(2)
        .stderr(contains(
            "lock.json: not a TheRock source manifest (it has neither `schema_version` nor `pytorch`); a rockbuild lock is reproduced with --from-lock FILE",
        ));
    manifest_url("file", &format!("file://{}", served.join(name).display()))
        .code(2)
        .stderr(contains(
            "the scheme is `file`; --manifest-url takes http or https (a local manifest goes to --from-lock)",
        ));
    // A server that accepts and never answers: one connection per attempt, then words.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let connections = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = connections.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(stream);
        }
    });
    let silent = format!("http://127.0.0.1:{port}/{name}");
    env.rockbuild()
        .args(["checkout", "--config"])
        .arg(&world.config)
        .args(["--root-checkout-dir", "silent", "--manifest-url", &silent])
        .args(["--stall-timeout", "1", "--fetch-attempts", "2"])
        .assert()
        .code(1)
        .stderr(contains(format!(
            "downloading the manifest {silent} failed: no answer within 1s (attempt 2 of 2); check the URL and the network"
        )));
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 2);
    for root in ["missing", "huge", "lock", "file", "silent"] {
        assert!(
            !env.path(&format!("{root}/rockbuild.lock.json")).exists(),
            "{root}"
        );
    }
}

/// The head of PyTorch 1.13.1's aten/src/ATen/hip/HIPBlas.cpp as its build_amd.py writes it
/// (hipified from aten/src/ATen/cuda/CUDABlas.cpp, lines 1-17; Debian's pytorch
/// 1.13.1+dfsg source): `CUDA_VERSION` became `TORCH_HIP_VERSION`, the include did not change.
/// No ROCm build takes the branch (TORCH_HIP_VERSION is major * 100 + minor), but the check
/// cannot decide a comparison of a version number.
const HIPBLAS_1_13_HEAD: &str = "// !!! This is a file automatically generated by hipify!!!
/*
  Provides the implementations of CUDA BLAS function templates.
 */

#include <ATen/ATen.h>
#include <ATen/hip/HIPBlas.h>
#include <ATen/hip/Exceptions.h>
#include <c10/hip/HIPFunctions.h>
#include <c10/macros/Export.h>
#include <c10/util/irange.h>

// cublasLT was introduced in CUDA 10.1 but we enable only for 11.1 that also
// added bf16 support
#if defined(TORCH_HIP_VERSION) && TORCH_HIP_VERSION >= 11000 && !defined(_MSC_VER)
#include <cublasLt.h>
#endif
";

#[test]
fn leftover_cuda_includes_are_reported_and_refused_only_when_strict() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    world
        .torch
        .write("csrc/HIPBlas.cpp", HIPBLAS_1_13_HEAD)
        // A source the fixture's hipify does not translate (it only handles .cu and .cuh).
        .write("csrc/missed.cpp", "#include <cublas_v2.h>\n");
    world
        .torch
        .commit("PyTorch 1.13's HIPBlas.cpp guard, a file hipify skips");
    world.torch.publish();
    let leftovers = [
        "csrc/HIPBlas.cpp:16: still includes <cublasLt.h> (inside `#if defined(TORCH_HIP_VERSION) && TORCH_HIP_VERSION >= 11000 && !defined(_MSC_VER)`, undecided on ROCm)",
        "csrc/missed.cpp:1: still includes <cublas_v2.h>",
    ];
    // Reported, as the reference (which has no such check) goes on: in the warning, the
    // report, the lock and the step summary.
    let summary = env.path("summary.md");
    env.rockbuild()
        .env("GITHUB_STEP_SUMMARY", &summary)
        .args(["checkout", "--config"])
        .arg(&world.config)
        .args(["--root-checkout-dir", "ws", "--project", "torch", "--report", "report.json"])
        .assert()
        .success()
        .stderr(contains(format!(
            "warning: torch: hipify left 2 CUDA-only includes (reported, not refused; `--strict` fails the checkout on them):\n    {}\n    {}",
            leftovers[0], leftovers[1]
        )))
        .stderr(contains("2 CUDA includes left"));
    let lock = read_lock(&env.path("ws/rockbuild.lock.json"));
    assert_eq!(
        lock["projects"]["torch"]["hipify"]["leftovers"],
        serde_json::json!(leftovers)
    );
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("report.json")).expect("report"))
            .expect("JSON");
    assert_eq!(report[0]["leftovers"], serde_json::json!(leftovers));
    let summary = std::fs::read_to_string(&summary).expect("step summary");
    // Each as a code span, fenced longer than the backticks it holds (the first names its
    // `#if`).
    assert!(
        summary.contains(&format!(
            "**torch**: 2 CUDA-only includes left after hipify\n\n- ``{}``\n- `{}`\n",
            leftovers[0], leftovers[1]
        )),
        "{summary}"
    );

    // Opted in: `--strict` (or ROCKBUILD_STRICT) fails the up-to-date tree, and a new one.
    checkout(&env, &world, "ws", &["--project", "torch", "--strict"])
        .code(1)
        .stderr(contains(
            "left 2 CUDA-only include(s) that have HIP equivalents (TheRock#7266), refused by --strict",
        ))
        .stderr(contains(leftovers[0]));
    env.rockbuild()
        .env("ROCKBUILD_STRICT", "true")
        .args(["checkout", "--config"])
        .arg(&world.config)
        .args(["--root-checkout-dir", "strict", "--project", "torch"])
        .assert()
        .code(1)
        .stderr(contains("refused by --strict"));
    assert!(!env.path("strict/rockbuild.lock.json").exists());
    // ... or the project's `leftover-cuda: refuse` in the stack config.
    let config = std::fs::read_to_string(&world.config).expect("config");
    let refusing = config.replacen(
        "      check-paths: [csrc]\n",
        "      check-paths: [csrc]\n      leftover-cuda: refuse\n",
        1,
    );
    std::fs::write(&world.config, &refusing).expect("write config");
    checkout(&env, &world, "refusing", &["--project", "torch"])
        .code(1)
        .stderr(contains(format!(
            "refused by `hipify: leftover-cuda: refuse` in {}",
            world.config.display()
        )));
    // Allowed by the stack config, the strict checkout passes.
    let allowing = refusing.replacen(
        "      check-paths: [csrc]\n",
        "      check-paths: [csrc]\n      allow: [csrc/missed.cpp, csrc/HIPBlas.cpp]\n",
        1,
    );
    std::fs::write(&world.config, allowing).expect("write config");
    checkout(
        &env,
        &world,
        "refusing",
        &["--project", "torch", "--strict"],
    )
    .success()
    .stderr(contains("CUDA-only include").not());
}

#[test]
fn moving_to_a_new_pin_rehipifies_once() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    checkout(&env, &world, "ws", &["--project", "torch"]).success();
    world
        .torch
        .write("csrc/new.cu", "#include <cuda_runtime.h>\n");
    let new_head = world.torch.commit("new kernel");
    world.torch.publish();
    // A dry run shows what the lock in the root pins and what this checkout moves it to.
    let lock = env.path("ws/rockbuild.lock.json");
    let old_head = read_lock(&lock)["projects"]["torch"]["commit"]
        .as_str()
        .expect("locked commit")
        .to_string();
    let dry = checkout(&env, &world, "ws", &["--project", "torch", "--dry-run"]).success();
    let plan = String::from_utf8_lossy(&dry.get_output().stdout).into_owned();
    let lock_section = plan
        .split_once("\nlock ")
        .map(|(_, rest)| rest)
        .unwrap_or_default();
    let path = lock.display();
    assert_eq!(
        lock_section,
        format!(
            "{path}: this checkout resolves the refs again and writes over it \
             (`--from-lock {path}` checks out its pins instead)\n  torch  {} -> {}\n",
            &old_head[..12],
            &new_head[..12]
        ),
        "{plan}"
    );
    let json = checkout(
        &env,
        &world,
        "ws",
        &["--project", "torch", "--dry-run", "--json"],
    )
    .success();
    let json: Value = serde_json::from_slice(&json.get_output().stdout).expect("plan JSON");
    assert_eq!(json["lock"]["pins"]["torch"], old_head.as_str());
    checkout(&env, &world, "ws", &["--project", "torch"]).success();
    let torch = env.path("ws/pytorch");
    assert_eq!(
        git_in(&torch, &["rev-parse", "THEROCK_UPSTREAM_DIFFBASE"]),
        new_head
    );
    assert_eq!(git_in(&torch, &["rev-parse", "HEAD^"]), new_head);
    assert!(
        std::fs::read_to_string(torch.join("csrc/new.cu"))
            .expect("new")
            .contains("hip/hip_runtime.h")
    );
    assert_eq!(
        std::fs::read_to_string(torch.join("csrc/Module.cpp")).expect("module"),
        "#include <hip/driver_types.h>\n"
    );
}

#[test]
fn lock_resolves_without_working_trees() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    env.rockbuild()
        .args(["lock", "--config"])
        .arg(&world.config)
        .args(["--lock", "ci.lock.json"])
        .assert()
        .success();
    let lock = read_lock(&env.path("ci.lock.json"));
    assert_eq!(lock["projects"]["torch"]["commit"], world.torch.head());
    assert_eq!(lock["projects"]["audio"]["commit"], world.audio_pin);
    assert_eq!(lock["projects"]["triton"]["commit"], world.triton_pin);
    let subs = lock["projects"]["torch"]["submodules"]
        .as_array()
        .expect("subs");
    assert_eq!(subs.len(), 2);
    assert_eq!(subs[1]["path"], "third_party/kineto/third_party/fmt");
    assert_eq!(subs[1]["commit"], world.fmt.head());
    assert!(!env.path("pytorch").exists(), "no working tree");

    // The lock then drives a checkout to the same commits.
    env.rockbuild()
        .args(["checkout", "--config"])
        .arg(&world.config)
        .args(["--root-checkout-dir", "ws", "--from-lock", "ci.lock.json"])
        .assert()
        .success();
    let checked = read_lock(&env.path("ws/rockbuild.lock.json"));
    for project in ["torch", "audio", "vision", "triton", "apex"] {
        assert_eq!(
            lock["projects"][project]["commit"],
            checked["projects"][project]["commit"]
        );
        assert_eq!(
            lock["projects"][project]["tree"],
            checked["projects"][project]["tree"]
        );
        assert_eq!(
            lock["projects"][project]["submodules"],
            checked["projects"][project]["submodules"]
        );
    }
}

#[test]
fn triton_release_branch_comes_from_the_version_file() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    checkout(
        &env,
        &world,
        "ws",
        &[
            "--project",
            "torch",
            "--project",
            "triton",
            "--release",
            "--no-hipify",
        ],
    )
    .success();
    let lock = read_lock(&env.path("ws/rockbuild.lock.json"));
    assert_eq!(lock["projects"]["triton"]["requested_ref"], "release/3.4.x");
    assert_eq!(lock["projects"]["triton"]["pin"]["kind"], "release_branch");
    assert_eq!(
        git_in(&env.path("ws/triton"), &["log", "-1", "--format=%s"]),
        "triton 3.4 release"
    );
}

#[test]
fn bad_selections_are_usage_errors() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    checkout(&env, &world, "ws", &["--project", "tourch"])
        .code(2)
        .stderr(contains("unknown project 'tourch' (did you mean 'torch'?)"));
    checkout(&env, &world, "ws", &["--hashtag", "torch"])
        .code(2)
        .stderr(contains("--hashtag torch: expected NAME=REF"));
    env.rockbuild()
        .args(["checkout", "--config"])
        .arg(&world.config)
        .args(["--checkout-dir", "x"])
        .assert()
        .code(2)
        .stderr(contains("pass exactly one --project"));
    checkout(
        &env,
        &world,
        "ws",
        &["--project", "torch", "--repo-hashtag", "1a2b3c4d"],
    )
    .code(2)
    .stderr(contains("looks like an abbreviated commit"));
    checkout(
        &env,
        &world,
        "ws",
        &[
            "--project",
            "torch",
            "--gitrepo-origin",
            "https://bot:hunter2secret@example.com/x.git",
        ],
    )
    .code(2)
    .stderr(contains(
        "`https://****@example.com/x.git` is not a valid origin: it carries credentials",
    ))
    .stderr(contains("hunter2secret").not());
}

#[test]
fn an_interrupted_checkout_leaves_no_lock_and_is_repaired() {
    let mut env = TestEnv::new();
    let world = StackWorld::new(&env);
    env.set("FIXTURE_HIPIFY_PAUSE", "1");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rockbuild"))
        .env_clear()
        .envs(env.vars())
        .current_dir(env.root())
        .args([
            "checkout",
            "--project",
            "torch",
            "--root-checkout-dir",
            "ws",
            "--config",
        ])
        .arg(&world.config)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start rockbuild");
    let paused = env.path("ws/pytorch/.git/hipify-paused");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !paused.exists() {
        assert!(std::time::Instant::now() < deadline, "hipify never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(143), "128 + SIGTERM");
    assert!(!env.path("ws/rockbuild.lock.json").exists());
    let torch = env.path("ws/pytorch");
    assert!(
        torch.join(".git/rockbuild/incomplete").exists(),
        "the interrupted state is marked"
    );
    // What a git killed mid-write leaves (a submodule is still being written beside hipify).
    std::fs::write(torch.join(".git/index.lock"), "").expect("stale lock");

    env.set("FIXTURE_HIPIFY_PAUSE", "");
    env.rockbuild()
        .args([
            "checkout",
            "--project",
            "torch",
            "--root-checkout-dir",
            "ws",
            "--config",
        ])
        .arg(&world.config)
        .assert()
        .success()
        .stderr(contains("was interrupted; discarding its partial state"));
    assert!(!torch.join(".git/rockbuild/incomplete").exists());
    assert_eq!(hipify_runs(&torch), 2);
    assert_eq!(
        std::fs::read_to_string(torch.join("csrc/Module.cpp")).expect("module"),
        "#include <hip/driver_types.h>\n"
    );
    assert!(env.path("ws/rockbuild.lock.json").exists());
}

/// The stack config with torch's `hipify: edits-submodules` replaced by `list` (`None`: the
/// key removed, so hipify waits for every submodule).
fn with_edits_submodules(world: &StackWorld, list: Option<&str>) -> String {
    let config = std::fs::read_to_string(&world.config).expect("config");
    let start = config.find("      edits-submodules:").expect("listed");
    let end = start + config[start..].find(']').expect("list ends") + 2;
    let replacement = list.map_or(String::new(), |l| format!("      edits-submodules: {l}\n"));
    format!("{}{replacement}{}", &config[..start], &config[end..])
}

#[test]
fn an_overlapped_checkout_equals_the_sequential_one() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    // Overlapped: kineto (the submodule the script edits) and fmt (nested in it) beside
    // torch's checkout; hipify waits for kineto alone, fmt may still be being written.
    checkout(&env, &world, "overlapped", &["--project", "torch"]).success();
    // Hipify after every submodule, with a cache of its own (so hipify runs again).
    let sequential_config = env.path("sequential.yaml");
    std::fs::write(&sequential_config, with_edits_submodules(&world, None)).expect("write");
    env.rockbuild()
        .args(["checkout", "--project", "torch", "--config"])
        .arg(&sequential_config)
        .args(["--root-checkout-dir", "sequential", "--cache-dir", "cache2"])
        .assert()
        .success();
    let overlapped = env.path("overlapped/pytorch");
    let sequential = env.path("sequential/pytorch");
    assert_eq!(hipify_runs(&overlapped), 1);
    assert_eq!(hipify_runs(&sequential), 1);
    let repos = [
        "",
        "third_party/kineto",
        "third_party/kineto/third_party/fmt",
    ];
    let facts = crate::common::git::checkout_facts(&overlapped);
    assert_eq!(
        facts,
        crate::common::git::checkout_facts(&sequential),
        "the same commits, trees and tags"
    );
    for rel in repos {
        assert_eq!(
            git_in(&overlapped.join(rel), &["rev-parse", "HEAD"]),
            git_in(&sequential.join(rel), &["rev-parse", "HEAD"]),
            "{rel}: the same hipify commits"
        );
        assert_eq!(status(&overlapped.join(rel)), "", "{rel} is clean");
    }
    // Tagged as the reference tags them: the repositories hipify changed, no others.
    let reference = env.path("reference");
    crate::common::git::reference_checkout(&env, &world.torch.url(), "main", &reference);
    assert_eq!(facts, crate::common::git::checkout_facts(&reference));
    let lock = |root: &str| read_lock(&env.path(&format!("{root}/rockbuild.lock.json")));
    let (first, second) = (lock("overlapped"), lock("sequential"));
    for key in ["commit", "tree", "submodules", "hipify"] {
        assert_eq!(
            first["projects"]["torch"][key], second["projects"]["torch"][key],
            "torch.{key}"
        );
    }

    // And both are what git's own commands give, one step after another (clone, submodules,
    // the script from the root): the same tree in every repository.
    let plain = env.path("plain");
    crate::common::run_ok(
        env.command("git")
            .args(["-c", "protocol.file.allow=always", "clone", "-q"])
            .arg("--recurse-submodules")
            .arg(world.torch.url())
            .arg(&plain),
    );
    crate::common::run_ok(
        env.command("python3")
            .arg("tools/amd_build/build_amd.py")
            .current_dir(&plain),
    );
    for rel in repos {
        git_in(&plain.join(rel), &["add", "-A"]);
        assert_eq!(
            git_in(&plain.join(rel), &["write-tree"]),
            git_in(&overlapped.join(rel), &["rev-parse", "HEAD^{tree}"]),
            "{rel}: the tree git's sequential steps produce"
        );
    }
}

/// The hipify cache is a fast path too: a record whose commits do not give the trees it
/// records (a damaged or hand-edited cache) is a miss, not an error: the script runs in the
/// reference's order and its result replaces the record.
#[test]
fn a_cached_hipify_result_that_does_not_reproduce_is_made_again() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    checkout(&env, &world, "first", &["--project", "torch"]).success();
    let records: Vec<_> = std::fs::read_dir(env.path("rockbuild-cache/hipify"))
        .expect("hipify cache")
        .map(|e| e.expect("entry").path())
        .collect();
    let [record] = records.as_slice() else {
        panic!("one record: {records:?}");
    };
    let good = std::fs::read_to_string(record).expect("record");
    let mut damaged: Value = serde_json::from_str(&good).expect("JSON");
    let wrong = damaged["stamp"]["upstream_tree"].clone();
    damaged["stamp"]["submodule_trees"]["third_party/kineto"] = wrong;
    std::fs::write(record, damaged.to_string()).expect("damage");

    checkout(&env, &world, "second", &["--project", "torch"])
        .success()
        .stderr(contains("warning: torch: the cached hipify result "))
        .stderr(contains(
            "does not reproduce here (third_party/kineto is ",
        ))
        .stderr(contains(
            "running the hipify script instead, after every submodule (the reference's order), and replacing the record",
        ));
    let second = env.path("second/pytorch");
    assert_eq!(hipify_runs(&second), 1, "the script ran in the new root");
    let facts = crate::common::git::checkout_facts(&second);
    assert_eq!(
        facts,
        crate::common::git::checkout_facts(&env.path("first/pytorch"))
    );
    let reference = env.path("reference");
    crate::common::git::reference_checkout(&env, &world.torch.url(), "main", &reference);
    assert_eq!(facts, crate::common::git::checkout_facts(&reference));
    let repaired: Value =
        serde_json::from_str(&std::fs::read_to_string(record).expect("record")).expect("JSON");
    let good: Value = serde_json::from_str(&good).expect("JSON");
    assert_eq!(repaired["stamp"], good["stamp"], "the record is made again");
    // And a third root takes it from the cache again, without the script.
    checkout(&env, &world, "third", &["--project", "torch"])
        .success()
        .stderr(contains("does not reproduce").not());
    assert_eq!(hipify_runs(&env.path("third/pytorch")), 0);
}

/// Keeping a hipify result in the cache only spares the next checkout the script: when the
/// cache cannot take it, the checkout is complete anyway, and says what it costs.
#[test]
fn a_cache_that_cannot_keep_the_hipify_result_costs_only_speed() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    std::fs::create_dir_all(env.path("rockbuild-cache")).expect("mkdir");
    // Where the records go, a file: no directory can be made there.
    std::fs::write(env.path("rockbuild-cache/hipify"), "").expect("block");
    checkout(&env, &world, "ws", &["--project", "torch"])
        .success()
        .stderr(contains(
            "warning: torch: the hipify result was not kept in the cache (the hipify cache ",
        ))
        .stderr(contains(
            "the next checkout of this tree runs the script again",
        ));
    let torch = env.path("ws/pytorch");
    assert_eq!(hipify_runs(&torch), 1);
    let reference = env.path("reference");
    crate::common::git::reference_checkout(&env, &world.torch.url(), "main", &reference);
    assert_eq!(
        crate::common::git::checkout_facts(&torch),
        crate::common::git::checkout_facts(&reference)
    );
    assert!(env.path("ws/rockbuild.lock.json").exists());
}

/// The mirror cache is a speed-up the reference does without: when the default one cannot be
/// used (no HOME, a home that is not a directory), the run takes a temporary one, says so, and
/// checks out what the reference would; a `--cache-dir` that cannot be used is refused.
#[test]
fn an_unusable_default_cache_is_replaced_by_a_temporary_one() {
    let mut env = TestEnv::new();
    let world = StackWorld::new(&env);
    env.unset("ROCKBUILD_CACHE_DIR");
    env.unset("XDG_CACHE_HOME");
    let home = env.path("home-is-a-file");
    std::fs::write(&home, "").expect("write");
    env.set("HOME", home.display().to_string());
    let output = checkout(&env, &world, "ws", &["--project", "torch"])
        .success()
        .stderr(contains(format!(
            "warning: no cache of git mirrors and hipify results ({}/.cache/rockbuild cannot be used: ",
            home.display()
        )))
        .stderr(contains(
            "and removes it at its end, so it fetches everything and the next run does again; pass --cache-dir DIR (or set XDG_CACHE_HOME) to keep one",
        ))
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let temporary = stderr
        .split("this run uses ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .expect("the temporary cache is named");
    assert!(!Path::new(temporary).exists(), "{temporary} was removed");
    let reference = env.path("reference");
    crate::common::git::reference_checkout(&env, &world.torch.url(), "main", &reference);
    assert_eq!(
        crate::common::git::checkout_facts(&env.path("ws/pytorch")),
        crate::common::git::checkout_facts(&reference)
    );
    // No HOME at all: the same.
    env.unset("HOME");
    checkout(&env, &world, "ws2", &["--project", "torch"])
        .success()
        .stderr(contains(
            "no cache of git mirrors and hipify results (neither XDG_CACHE_HOME nor HOME is set)",
        ));
    // Asked for by name: the user's to fix.
    let named = home.join("cache").display().to_string();
    checkout(
        &env,
        &world,
        "ws3",
        &["--project", "torch", "--cache-dir", &named],
    )
    .code(1)
    .stderr(contains(format!(
        "the git cache {named}/git: creating the cache directory"
    )));
}

/// The mirror of `origin` in the test's cache (`<last segment>-<hash>.git`).
fn mirror_of(env: &TestEnv, name: &str) -> std::path::PathBuf {
    std::fs::read_dir(env.path("rockbuild-cache/git"))
        .expect("mirrors")
        .map(|e| e.expect("entry").path())
        .find(|p| {
            p.extension().is_some_and(|x| x == "git")
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{name}-")))
        })
        .unwrap_or_else(|| panic!("no mirror of {name}"))
}

/// Garbles the stored data of `object` inside the mirror's pack, leaving the pack's trailer
/// (what the check at open compares) as it was: bit rot, not a truncated write.
fn garble_in_pack(mirror: &Path, object: &str) {
    // `<sha> <type> <size> <size-in-pack> <offset>`, in the pack that holds it.
    let (idx, line) = std::fs::read_dir(mirror.join("objects/pack"))
        .expect("packs")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "idx"))
        .find_map(|idx| {
            let listing = git_in(mirror, &["verify-pack", "-v", idx.to_str().expect("utf-8")]);
            let line = listing.lines().find(|l| l.starts_with(object))?.to_string();
            Some((idx, line))
        })
        .unwrap_or_else(|| panic!("{object} is in no pack of {}", mirror.display()));
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (in_pack, offset): (u64, u64) = (
        fields[3].parse().expect("size"),
        fields[4].parse().expect("offset"),
    );
    let pack = idx.with_extension("pack");
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&pack, std::fs::Permissions::from_mode(0o644)).expect("writable");
    let mut bytes = std::fs::read(&pack).expect("read");
    // Past the entry's header, before its end: the compressed data.
    for byte in &mut bytes[(offset + in_pack / 2) as usize..(offset + in_pack - 1) as usize] {
        *byte ^= 0x5a;
    }
    std::fs::write(&pack, bytes).expect("write");
}

/// A mirror whose pack holds a damaged object (the check at open reads trailers only) is a
/// cache that lies; the checkout that finds it heals it — damaged packs out, the commit
/// fetched again as a new clone would — and ends with the reference's trees.
#[test]
fn a_damaged_object_in_the_cache_is_fetched_again() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    // A file bigger than its pack entry's header and trailer, as any real source is.
    let big: String = (0..400)
        .map(|i| format!("int f{i}(void) {{ return {i}; }}\n"))
        .collect();
    world.torch.write("csrc/big.cpp", &big);
    world.torch.commit("a bigger source");
    world.torch.publish();
    let big_blob = world.torch.git(&["rev-parse", "HEAD:csrc/big.cpp"]);
    checkout(&env, &world, "first", &["--project", "torch"]).success();
    let mirror = mirror_of(&env, "torch");
    // Git would read the checkout pack instead: gone, as when it was pruned.
    std::fs::remove_dir_all(mirror.join("rockbuild-checkout")).expect("drop checkout packs");
    garble_in_pack(&mirror, big_blob.trim());

    checkout(&env, &world, "second", &["--project", "torch"])
        .success()
        .stderr(contains(format!(
            "warning: torch: git found an object damaged in the cache {} (",
            mirror.display()
        )))
        .stderr(contains(format!(
            "verifying its packs and fetching {} again from {}, as a new clone would",
            world.torch.head(),
            world.torch.url()
        )));
    let second = env.path("second/pytorch");
    assert_eq!(
        std::fs::read_to_string(second.join("csrc/big.cpp")).expect("big"),
        big
    );
    assert_eq!(
        crate::common::git::checkout_facts(&second),
        crate::common::git::checkout_facts(&env.path("first/pytorch"))
    );
    git_in(&mirror, &["fsck", "--no-dangling"]);
}

/// Scripts that reach kineto, a submodule the stack config then does not list, each the way
/// a real build_amd.py could: the fast path must notice, do the work again in the reference's
/// order, say which line to extend, and end with the reference's trees.
const UNLISTED_REACH: [(&str, &str); 4] = [
    (
        // build_amd.py's own shape (its hip_platform_files loop, lines 187-199 at v2.6.0): a
        // file not out yet is skipped without a word, which no status can see afterwards.
        "looks before it edits",
        r#"import pathlib
platform = pathlib.Path("third_party/kineto/platform.h")
if platform.exists():
    platform.write_text(platform.read_text().replace("HIP_PLATFORM_HCC", "HIP_PLATFORM_AMD"))
"#,
    ),
    (
        "edits once the submodule is out",
        r#"import pathlib, time
index = pathlib.Path(".git/modules/third_party/kineto/index")
for _ in range(1200):
    if index.exists():
        break
    time.sleep(0.05)
platform = pathlib.Path("third_party/kineto/platform.h")
platform.write_text(platform.read_text().replace("HIP_PLATFORM_HCC", "HIP_PLATFORM_AMD"))
"#,
    ),
    (
        // Without a guard: fails when the file is not out yet.
        "reads without looking",
        r#"platform = "third_party/kineto/third_party/fmt/format.h"
with open(platform) as f:
    text = f.read()
with open(platform, "w") as f:
    f.write(text.replace("HIP_PLATFORM_HCC", "HIP_PLATFORM_AMD"))
"#,
    ),
    (
        // Another program does the edit: its reach cannot be seen.
        "edits through sed",
        r#"import subprocess
subprocess.run(["sed", "-i", "s/HIP_PLATFORM_HCC/HIP_PLATFORM_AMD/", "third_party/kineto/platform.h"], check=False)
"#,
    ),
];

#[test]
fn a_script_reaching_an_unlisted_submodule_is_rerun_in_the_references_order() {
    for (case, script) in UNLISTED_REACH {
        let env = TestEnv::new();
        let world = StackWorld::new(&env);
        world.torch.write(
            "tools/amd_build/build_amd.py",
            &format!(
                "with open(\".git/hipify-runs\", \"a\") as runs:\n    runs.write(\"run\\n\")\n{script}"
            ),
        );
        world.torch.commit(case);
        world.torch.publish();
        // The fast path, with a list that leaves kineto (and its fmt) out.
        std::fs::write(&world.config, with_edits_submodules(&world, Some("[]"))).expect("write");
        let line = std::fs::read_to_string(&world.config)
            .expect("config")
            .lines()
            .position(|l| l.contains("edits-submodules: []"))
            .expect("listed")
            + 1;
        let output = checkout(&env, &world, "ws", &["--project", "torch"])
            .success()
            .get_output()
            .clone();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let warning = format!(
            "warning: torch: hipify ran while the submodules `hipify: edits-submodules` ({}:{line}) does not list were still being checked out, and ",
            world.config.display()
        );
        assert!(stderr.contains(&warning), "{case}: {stderr}");
        assert!(
            stderr.contains("it ran again once every submodule was out (the reference's order), so the trees are the reference's"),
            "{case}: {stderr}"
        );
        let keep = if case == "edits through sed" {
            "remove it there to wait for every submodule from the start"
        } else if case == "reads without looking" {
            "add third_party/kineto/third_party/fmt to it"
        } else {
            "add third_party/kineto to it"
        };
        assert!(stderr.contains(keep), "{case}: {stderr}");
        let torch = env.path("ws/pytorch");
        assert_eq!(hipify_runs(&torch), 2, "{case}");

        let reference = env.path("reference");
        crate::common::git::reference_checkout(&env, &world.torch.url(), "main", &reference);
        let facts = crate::common::git::checkout_facts(&torch);
        assert_eq!(
            facts,
            crate::common::git::checkout_facts(&reference),
            "{case}: the reference's trees, tags and hipify commits"
        );
        assert!(
            facts
                .iter()
                .any(|f| f.starts_with("third_party/kineto") && f.contains("hipified")),
            "{case}: the script changed a submodule: {facts:?}"
        );
        for repo in crate::common::git::repositories(&torch) {
            assert_eq!(status(&torch.join(&repo)), "", "{case}: {repo} is clean");
        }
        let lock = read_lock(&env.path("ws/rockbuild.lock.json"));
        assert!(
            lock["projects"]["torch"]["hipify"]["submodule_trees"]
                .as_object()
                .is_some_and(|trees| !trees.is_empty()),
            "{case}: {lock}"
        );
    }
}
