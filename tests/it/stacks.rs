//! Release-correct stacks on real git origins: the version presets (ROCm fork + required pins
//! for release branches, upstream for nightly), explicit flags over presets, the plan
//! `checkout --dry-run` prints, the lock resolved up front and honoured, and the mirror cache
//! (reuse, no network for cached pins, concurrent use, damage).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::git::{StackWorld, git_in};
use crate::common::http::serve;
use crate::common::sample::sample_origins;
use crate::common::sdk::sdk_index;
use crate::common::{TestEnv, scrub_short_ids as scrub};

fn read_json(path: &Path) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display())),
    )
    .expect("JSON")
}

fn checkout(env: &TestEnv, world: &StackWorld, root: &str, extra: &[&str]) -> assert_cmd::Command {
    let mut cmd = env.rockbuild();
    cmd.args(["checkout", "--config"])
        .arg(&world.config)
        .args(["--root-checkout-dir", root])
        .args(extra);
    cmd
}

#[track_caller]
fn ok(output: &std::process::Output) -> (String, String) {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "failed ({}):\nstdout: {stdout}\nstderr: {stderr}",
        output.status
    );
    (stdout, stderr)
}

#[track_caller]
fn fails(output: &std::process::Output, code: i32) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(code), "stderr: {stderr}");
    stderr
}

/// The line of `configs/presets.yaml` that starts `key:`.
fn presets_line(key: &str) -> usize {
    let text = include_str!("../../configs/presets.yaml");
    text.lines()
        .position(|l| l.trim_start().starts_with(&format!("{key}:")))
        .expect("key in presets.yaml")
        + 1
}

/// The mirror of the origin whose last path segment is `slug` (`torch`, `torch-fork`).
fn mirror(env: &TestEnv, slug: &str) -> PathBuf {
    let dir = env.path("rockbuild-cache/git");
    std::fs::read_dir(&dir)
        .expect("mirrors")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            name.strip_prefix(&format!("{slug}-"))
                .and_then(|rest| rest.strip_suffix(".git"))
                .is_some_and(|hash| hash.len() == 12 && hash.chars().all(|c| c.is_ascii_hexdigit()))
        })
        .unwrap_or_else(|| panic!("no mirror of {slug} in {}", dir.display()))
}

/// Distinct objects in a repository (a thin pack completed on arrival repeats a few bases,
/// so pack statistics overcount).
fn objects_in(repo: &Path) -> usize {
    git_in(
        repo,
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectname)",
        ],
    )
    .lines()
    .count()
}

/// A release branch no table names yet (the fork's next `release/X.Y`) takes the fork and its
/// required pins as every other does: the rule is the reference's (`pytorch_ref != "nightly"`
/// resolves on ROCm/pytorch), not a list of versions.
#[test]
fn a_release_branch_newer_than_every_table_takes_the_rocm_fork() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let fork_release = git_in(&world.fork, &["rev-parse", "release/2.9"]);
    git_in(&world.fork, &["branch", "release/2.99", &fork_release]);
    let output = checkout(
        &env,
        &world,
        "ws",
        &["--repo-hashtag", "release/2.99", "--no-hipify"],
    )
    .output()
    .expect("run");
    let (_, stderr) = ok(&output);
    assert!(
        stderr.contains("torch ref 'release/2.99' matches 'release/*' of preset 'rocm-release'"),
        "{stderr}"
    );
    let lock = read_json(&env.path("ws/rockbuild.lock.json"));
    assert_eq!(
        lock["projects"]["torch"]["origin"],
        world.fork_url().as_str()
    );
    assert_eq!(lock["projects"]["torch"]["commit"], fork_release.as_str());
    for (project, pin) in [
        ("audio", &world.audio_pin),
        ("vision", &world.vision_pin),
        ("apex", &world.apex_pin),
    ] {
        let entry = &lock["projects"][project];
        assert_eq!(entry["commit"], pin.as_str(), "{project}");
        assert_eq!(entry["pin"]["kind"], "related_commits", "{project}");
        assert_eq!(entry["preset"], "rocm-release", "{project}");
    }
}

#[test]
fn release_branches_take_the_rocm_fork_and_require_its_pins() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    // Upstream pytorch/pytorch's release branch has no related_commits; the fork's has.
    let fork_release = world.torch.git(&["rev-parse", "release/2.9"]);
    world.torch.git(&["checkout", "-q", "release/2.9"]);
    world.torch.git(&["rm", "-q", "related_commits"]);
    world.torch.commit("upstream 2.9: no related_commits");
    world.torch.git(&["checkout", "-q", "main"]);
    world.torch.publish();

    let output = checkout(
        &env,
        &world,
        "ws",
        &["--repo-hashtag", "release/2.9", "--no-hipify"],
    )
    .output()
    .expect("run");
    let (_, stderr) = ok(&output);
    let line = presets_line("rocm-release");
    assert!(
        stderr.contains(&format!(
            "preset: rocm-release — torch ref 'release/2.9' matches 'release/*' of preset 'rocm-release' (configs/presets.yaml (built in):{line})"
        )),
        "{stderr}"
    );
    let lock = read_json(&env.path("ws/rockbuild.lock.json"));
    let torch = &lock["projects"]["torch"];
    assert_eq!(torch["commit"], fork_release.as_str());
    assert_eq!(torch["origin"], world.fork_url().as_str());
    assert_eq!(torch["pin"]["flag"], "--repo-hashtag");
    for (project, pin, line) in [
        ("audio", &world.audio_pin, 3),
        ("vision", &world.vision_pin, 4),
        ("apex", &world.apex_pin, 5),
    ] {
        let entry = &lock["projects"][project];
        assert_eq!(entry["commit"], pin.as_str(), "{project}");
        assert_eq!(
            entry["pin"],
            serde_json::json!({"kind": "related_commits", "file": "pytorch/related_commits", "line": line}),
            "{project}"
        );
    }
    assert_eq!(
        lock["projects"]["triton"]["commit"],
        world.triton_pin.as_str()
    );
    assert_eq!(lock["projects"]["triton"]["pin"]["kind"], "commit_file");
    for project in ["torch", "audio", "vision", "triton", "apex"] {
        assert_eq!(
            lock["projects"][project]["preset"], "rocm-release",
            "{project}"
        );
    }

    // An explicit origin wins over the preset: upstream's branch then lacks the required pins.
    let upstream = world.torch.url();
    let output = checkout(
        &env,
        &world,
        "upstream",
        &[
            "--repo-hashtag",
            "release/2.9",
            "--gitrepo-origin",
            &upstream,
            "--no-hipify",
            "--quiet",
        ],
    )
    .output()
    .expect("run");
    let stderr = fails(&output, 2);
    insta::assert_snapshot!(
        "upstream_release_lacks_related_commits",
        scrub(&stderr, &env)
    );
    assert!(!env.path("upstream/rockbuild.lock.json").exists());

    // ...unless the pinned projects are named explicitly too: every flag is recorded as such.
    let output = checkout(
        &env,
        &world,
        "flags",
        &[
            "--repo-hashtag",
            "release/2.9",
            "--gitrepo-origin",
            &upstream,
            "--hashtag",
            "audio=main",
            "--hashtag",
            "vision=main",
            "--origin",
            &format!("apex={}", world.apex.url()),
            "--hashtag",
            "apex=main",
            "--no-hipify",
        ],
    )
    .output()
    .expect("run");
    ok(&output);
    let lock = read_json(&env.path("flags/rockbuild.lock.json"));
    assert_eq!(lock["projects"]["torch"]["origin"], upstream.as_str());
    assert_eq!(lock["projects"]["torch"]["origin_flag"], "--gitrepo-origin");
    assert_eq!(
        lock["projects"]["audio"]["commit"],
        world.audio.head().as_str()
    );
    assert_eq!(
        lock["projects"]["audio"]["pin"]["flag"],
        "--hashtag audio=main"
    );
    assert_eq!(
        lock["projects"]["apex"]["origin_flag"],
        format!("--origin apex={}", world.apex.url()).as_str()
    );
    assert_eq!(lock["projects"]["audio"]["preset"], "rocm-release");
}

#[test]
fn nightly_builds_upstream_nightly_branches() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    // Only upstream has `nightly` (the fork would fail the fetch), and audio's nightly is
    // newer than the row torch's related_commits names: the preset ignores the pins.
    world.torch.git(&["branch", "nightly", "main"]);
    world.torch.publish();
    for repo in [&world.audio, &world.vision] {
        repo.git(&["branch", "nightly", "main"]);
        repo.publish();
    }
    world.apex.git(&["branch", "master", "main"]);
    world.apex.publish();

    let output = checkout(
        &env,
        &world,
        "ws",
        &["--repo-hashtag", "nightly", "--no-hipify"],
    )
    .output()
    .expect("run");
    ok(&output);
    let lock = read_json(&env.path("ws/rockbuild.lock.json"));
    assert_eq!(
        lock["projects"]["torch"]["origin"],
        world.torch.url().as_str()
    );
    assert_eq!(
        lock["projects"]["torch"]["commit"],
        world.torch.head().as_str()
    );
    assert_eq!(
        lock["projects"]["audio"]["commit"],
        world.audio.head().as_str()
    );
    assert_ne!(world.audio.head(), world.audio_pin);
    assert_eq!(
        lock["projects"]["audio"]["pin"],
        serde_json::json!({"kind": "preset", "preset": "nightly"})
    );
    assert_eq!(lock["projects"]["apex"]["requested_ref"], "master");
    assert_eq!(
        lock["projects"]["triton"]["commit"],
        world.triton_pin.as_str()
    );
    for project in ["torch", "audio", "vision", "triton", "apex"] {
        assert_eq!(lock["projects"][project]["preset"], "nightly", "{project}");
    }
}

#[test]
fn a_release_branch_without_a_required_row_is_refused() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    // The fork's release/2.8 pins audio and apex but not vision.
    world
        .torch
        .git(&["checkout", "-q", "-b", "release/2.8", "v2.9.0^{commit}"]);
    let related = std::fs::read_to_string(world.torch.dir.join("related_commits")).expect("read");
    let without_vision: String = related
        .lines()
        .filter(|l| !l.contains("|torchvision|"))
        .map(|l| format!("{l}\n"))
        .collect();
    world.torch.write("related_commits", &without_vision);
    world.torch.commit("2.8 pins");
    world.torch.git(&["checkout", "-q", "main"]);
    world.torch.publish_to(&world.fork);

    let output = checkout(
        &env,
        &world,
        "ws",
        &["--repo-hashtag", "release/2.8", "--no-hipify", "--quiet"],
    )
    .output()
    .expect("run");
    let stderr = fails(&output, 2);
    insta::assert_snapshot!(scrub(&stderr, &env));
    assert!(!env.path("ws/rockbuild.lock.json").exists());
}

#[test]
fn dry_run_prints_the_plan_and_changes_nothing() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let plan = |root: &str| {
        let output = checkout(
            &env,
            &world,
            root,
            &["--repo-hashtag", "release/2.9", "--dry-run"],
        )
        .output()
        .expect("run");
        scrub(&ok(&output).0, &env)
    };
    let fresh = plan("ws");
    assert!(
        !env.path("ws/pytorch").exists(),
        "a dry run creates no tree"
    );
    assert!(!env.path("ws/rockbuild.lock.json").exists());

    ok(
        &checkout(&env, &world, "ws", &["--repo-hashtag", "release/2.9"])
            .output()
            .expect("run"),
    );
    let up_to_date = plan("ws");
    // A new root: everything comes from the cache, hipify included.
    let new_root = plan("other");
    insta::assert_snapshot!(format!(
        "# fresh\n{fresh}\n# after a checkout\n{up_to_date}\n# a new root\n{new_root}"
    ));
}

#[test]
fn a_second_checkout_fetches_only_new_objects_and_borrows_nothing() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    ok(&checkout(&env, &world, "one", &["--no-hipify"])
        .output()
        .expect("run"));
    let torch_mirror = mirror(&env, "torch");
    let before = objects_in(&torch_mirror);

    // One new commit upstream: a new file (blob), a new root tree, the commit.
    world.torch.write("NEWS", "something new\n");
    world.torch.commit("news");
    world.torch.publish();
    let report = env.path("two-report.json");
    let output = checkout(&env, &world, "two", &["--no-hipify", "--report"])
        .arg(&report)
        .output()
        .expect("run");
    ok(&output);
    assert_eq!(
        objects_in(&torch_mirror) - before,
        3,
        "only the new objects came over"
    );
    let rows = read_json(&report);
    let network: Vec<(String, bool)> = rows
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["project"].as_str().expect("project").to_string(),
                r["network"].as_bool().expect("network"),
            )
        })
        .collect();
    assert_eq!(
        network,
        [
            ("torch".to_string(), true),
            ("audio".to_string(), false),
            ("vision".to_string(), false),
            ("triton".to_string(), false),
            ("apex".to_string(), false),
        ],
        "pinned commits already in the cache need no network"
    );
    // The tree has its own links to the mirror's packs: it works without the cache.
    let packs = env.path("two/pytorch/.git/objects/pack");
    let linked = std::fs::read_dir(&packs)
        .expect("packs")
        .filter_map(Result::ok)
        .any(|e| std::os::unix::fs::MetadataExt::nlink(&e.metadata().expect("meta")) > 1);
    assert!(linked, "pack files are hard links of the mirror's");
    std::fs::remove_dir_all(env.path("rockbuild-cache")).expect("drop the cache");
    assert_eq!(
        git_in(&env.path("two/pytorch"), &["fsck", "--no-dangling"]),
        ""
    );
    assert_eq!(
        git_in(&env.path("two/pytorch"), &["rev-parse", "HEAD"]),
        world.torch.head()
    );
}

#[test]
fn a_lock_whose_commits_are_cached_needs_no_origin() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    ok(&checkout(&env, &world, "warm", &[]).output().expect("run"));
    // The origins disappear (a CI job that restored its cache, offline).
    std::fs::rename(env.path("origins"), env.path("origins-gone")).expect("rename");
    let report = env.path("report.json");
    let output = checkout(
        &env,
        &world,
        "offline",
        &["--from-lock", "warm/rockbuild.lock.json", "--report"],
    )
    .arg(&report)
    .output()
    .expect("run");
    ok(&output);
    let warm = read_json(&env.path("warm/rockbuild.lock.json"));
    let offline = read_json(&env.path("offline/rockbuild.lock.json"));
    for project in ["torch", "audio", "vision", "triton", "apex"] {
        for key in ["commit", "tree", "submodules", "hipify"] {
            assert_eq!(
                warm["projects"][project][key], offline["projects"][project][key],
                "{project}.{key}"
            );
        }
    }
    for row in read_json(&report).as_array().expect("rows") {
        assert_eq!(row["network"], false, "{row}");
    }
    let rows = read_json(&report);
    let torch = rows
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["project"] == "torch")
        .expect("torch row");
    assert_eq!(torch["hipify"], "from cache (4 files)");
    // The script never ran in the new root; the tree is the hipified one, committed.
    assert!(!env.path("offline/pytorch/.git/hipify-runs").exists());
    for dir in ["pytorch", "pytorch/third_party/kineto"] {
        assert_eq!(
            git_in(&env.path(&format!("warm/{dir}")), &["rev-parse", "HEAD"]),
            git_in(&env.path(&format!("offline/{dir}")), &["rev-parse", "HEAD"]),
            "{dir}"
        );
    }
    assert_eq!(
        git_in(&env.path("offline/pytorch"), &["status", "--porcelain"]),
        ""
    );
    // With no script beside, the gitlinks' skip-worktree is written by libgit2: the same
    // index entries as the cold tree's, where git wrote it.
    for root in ["warm", "offline"] {
        assert_eq!(
            git_in(
                &env.path(&format!("{root}/pytorch")),
                &["ls-files", "-v", "third_party"]
            ),
            "S third_party/kineto",
            "{root}"
        );
    }
}

#[test]
fn two_checkouts_share_one_cache_at_once() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let start = |root: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_rockbuild"))
            .env_clear()
            .envs(env.vars())
            .current_dir(env.root())
            .args(["checkout", "--config"])
            .arg(&world.config)
            .args(["--root-checkout-dir", root, "--quiet"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start rockbuild")
    };
    let (a, b) = (start("a"), start("b"));
    ok(&a.wait_with_output().expect("a"));
    ok(&b.wait_with_output().expect("b"));
    for dir in [
        "pytorch",
        "pytorch/third_party/kineto/third_party/fmt",
        "pytorch_audio",
        "triton",
    ] {
        assert_eq!(
            git_in(
                &env.path(&format!("a/{dir}")),
                &["rev-parse", "HEAD^{tree}"]
            ),
            git_in(
                &env.path(&format!("b/{dir}")),
                &["rev-parse", "HEAD^{tree}"]
            ),
            "{dir}"
        );
    }
    for slug in ["torch", "audio", "kineto", "fmt"] {
        let mirror = mirror(&env, slug);
        assert_eq!(git_in(&mirror, &["fsck", "--no-dangling"]), "", "{slug}");
    }
}

#[test]
fn a_damaged_mirror_is_recloned_with_a_warning() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    ok(
        &checkout(&env, &world, "one", &["--project", "torch", "--no-hipify"])
            .output()
            .expect("run"),
    );
    // A fetch cut short by a full disk: the pack is shorter than its index says.
    let torch_mirror = mirror(&env, "torch");
    let pack = std::fs::read_dir(torch_mirror.join("objects/pack"))
        .expect("packs")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "pack"))
        .expect("a pack");
    let bytes = std::fs::read(&pack).expect("read pack");
    std::fs::write(&pack, &bytes[..bytes.len() / 2]).expect("truncate");
    let output = checkout(&env, &world, "two", &["--project", "torch", "--no-hipify"])
        .output()
        .expect("run");
    let (_, stderr) = ok(&output);
    let name = pack
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(
        stderr.contains(&format!(
            "the git cache {} of {} is damaged ({name} does not match its index (truncated?)); re-cloning it",
            torch_mirror.display(),
            world.torch.url()
        )),
        "{stderr}"
    );
    assert_eq!(git_in(&torch_mirror, &["fsck", "--no-dangling"]), "");
    assert_eq!(
        git_in(&env.path("two/pytorch"), &["rev-parse", "HEAD"]),
        world.torch.head()
    );

    // A mirror without HEAD (a half-deleted directory) is re-created too.
    std::fs::remove_file(torch_mirror.join("HEAD")).expect("break");
    let output = checkout(
        &env,
        &world,
        "three",
        &["--project", "torch", "--no-hipify"],
    )
    .output()
    .expect("run");
    let (_, stderr) = ok(&output);
    assert!(
        stderr.contains("is damaged (no HEAD or objects); re-cloning it"),
        "{stderr}"
    );
}

/// The commits with a checkout pack in a mirror
/// (`rockbuild-checkout/objects/pack/pack-<commit>.pack`), sorted.
fn checkout_packs(mirror: &Path) -> Vec<String> {
    let dir = mirror.join("rockbuild-checkout/objects/pack");
    let mut packs: Vec<String> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    Some(
                        name.strip_prefix("pack-")?
                            .strip_suffix(".pack")?
                            .to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    packs.sort();
    packs
}

/// `commits`, sorted.
fn sorted(mut commits: Vec<String>) -> Vec<String> {
    commits.sort();
    commits
}

/// A checkout leaves, per repository, its commit's objects stored as-is beside the mirror (a
/// hipify commit: what its upstream commit's pack lacks); a new tree of that commit links them
/// as its newest packs (git reads objects from the newest pack first), so its files are copied,
/// not inflated. Four are kept per mirror; a damaged one is dropped with a warning.
#[test]
fn new_trees_read_their_files_from_uncompressed_checkout_packs() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    // Text deflate would shrink: found verbatim in a pack only if stored as-is.
    let probe = "a line of text that deflate would compress well\n".repeat(40);
    world.torch.write("PROBE.txt", &probe);
    world.torch.commit("probe");
    world.torch.publish();
    ok(&checkout(&env, &world, "one", &[]).output().expect("run"));
    let torch_mirror = mirror(&env, "torch");
    let one = env.path("one/pytorch");
    let (hipified, upstream) = (
        git_in(&one, &["rev-parse", "HEAD"]),
        git_in(&one, &["rev-parse", "THEROCK_UPSTREAM_DIFFBASE"]),
    );
    let kineto = env.path("one/pytorch/third_party/kineto");
    assert_eq!(
        checkout_packs(&torch_mirror),
        sorted(vec![hipified.clone(), upstream.clone()])
    );
    assert_eq!(
        checkout_packs(&mirror(&env, "kineto")),
        sorted(vec![
            git_in(&kineto, &["rev-parse", "HEAD"]),
            git_in(&kineto, &["rev-parse", "THEROCK_UPSTREAM_DIFFBASE"])
        ])
    );
    let pack_dir = torch_mirror.join("rockbuild-checkout/objects/pack");
    let pack_of = |commit: &str| pack_dir.join(format!("pack-{commit}.pack"));
    let bytes = std::fs::read(pack_of(&upstream)).expect("checkout pack");
    assert!(
        bytes.windows(probe.len()).any(|w| w == probe.as_bytes()),
        "stored uncompressed"
    );
    assert_eq!(
        std::fs::read_to_string(pack_dir.join(format!("pack-{hipified}.base"))).expect("base"),
        format!("{upstream}\n")
    );
    // The hipify commit's pack holds what hipify changed, not the probe hipify left alone.
    let delta = std::fs::read(pack_of(&hipified)).expect("checkout pack");
    assert!(
        delta.len() < bytes.len() / 2,
        "{} {}",
        delta.len(),
        bytes.len()
    );

    ok(&checkout(&env, &world, "two", &[]).output().expect("run"));
    let two_packs = env.path("two/pytorch/.git/objects/pack");
    let inode =
        |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).expect("stat"));
    let mtime = |p: &Path| {
        std::fs::metadata(p)
            .expect("stat")
            .modified()
            .expect("mtime")
    };
    let linked: Vec<PathBuf> = [&hipified, &upstream]
        .iter()
        .map(|c| two_packs.join(format!("pack-{c}.pack")))
        .collect();
    for (link, commit) in linked.iter().zip([&hipified, &upstream]) {
        assert_eq!(inode(link), inode(&pack_of(commit)), "a hard link");
    }
    let newest_other = std::fs::read_dir(&two_packs)
        .expect("packs")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "pack") && !linked.contains(p))
        .map(|p| mtime(&p))
        .max()
        .expect("the mirror's packs");
    for link in &linked {
        assert!(mtime(link) > newest_other, "the newest packs of the tree");
    }
    assert_eq!(
        git_in(&env.path("two/pytorch"), &["fsck", "--no-dangling"]),
        ""
    );
    assert_eq!(
        git_in(&env.path("two/pytorch"), &["rev-parse", "HEAD"]),
        hipified
    );

    // Three more torch commits: the mirror keeps the four most recently used packs, a base
    // no earlier than the pack based on it; the first tree keeps every object (its own links).
    let mut kept = Vec::new();
    for root in ["three", "four", "five"] {
        world.torch.write("NEWS", &format!("{root}\n"));
        world.torch.commit(root);
        world.torch.publish();
        ok(&checkout(&env, &world, root, &["--no-hipify"])
            .output()
            .expect("run"));
        kept.insert(
            0,
            git_in(
                &env.path(&format!("{root}/pytorch")),
                &["rev-parse", "HEAD"],
            ),
        );
    }
    let newest = kept[0].clone();
    kept.push(upstream.clone());
    assert_eq!(checkout_packs(&torch_mirror), sorted(kept));
    assert_eq!(git_in(&one, &["fsck", "--no-dangling"]), "");

    // A truncated checkout pack: removed with a warning; the checkout goes on without it.
    let bytes = std::fs::read(pack_of(&newest)).expect("read");
    std::fs::write(pack_of(&newest), &bytes[..bytes.len() / 2]).expect("truncate");
    let output = checkout(&env, &world, "six", &["--no-hipify"])
        .output()
        .expect("run");
    let (_, stderr) = ok(&output);
    assert!(
        stderr.contains(&format!(
            "the checkout packs of {} are damaged (pack-{}.pack does not match its index (truncated?)); removed them",
            torch_mirror.display(),
            newest
        )),
        "{stderr}"
    );
    assert_eq!(
        checkout_packs(&torch_mirror),
        std::slice::from_ref(&newest),
        "written again"
    );
    assert_eq!(
        git_in(&env.path("six/pytorch"), &["fsck", "--no-dangling"]),
        ""
    );
}

/// The lock resolves sources, SDK, targets and wheel names with no tree; checkout reproduces
/// it; build's plan names every wheel the same; any drift is refused naming both values.
#[test]
fn the_lock_is_the_plan_and_drift_is_refused() {
    const SDK_VERSION: &str = "7.10.0a20251124";
    let env = TestEnv::new();
    let origins = sample_origins(&env);
    let server = serve(&sdk_index(SDK_VERSION, &["gfx906", "gfx1030"]));
    let index_url = format!("{}simple/", server.url());
    let lock = env.path("ci.lock.json");
    let output = env
        .rockbuild()
        .args(["lock", "--config"])
        .arg(&origins.stack_yaml)
        .args(["--repo-hashtag", "release/2.9", "--index-url", &index_url])
        .args(["--pytorch-rocm-arch", "gfx906,gfx1030", "--lock"])
        .arg(&lock)
        .output()
        .expect("run lock");
    let (stdout, _) = ok(&output);
    assert!(!env.path("pytorch").exists(), "no working tree");
    let printed = scrub(&stdout, &env).replace(&server.port().to_string(), "[PORT]");
    insta::assert_snapshot!("lock_plan", printed);
    let locked = read_json(&lock);
    assert_eq!(locked["build"]["sdk_version"], SDK_VERSION);
    assert_eq!(
        locked["build"]["targets"],
        serde_json::json!(["gfx906", "gfx1030"])
    );
    assert_eq!(
        locked["build"]["stems"]["torch"],
        "torch-2.9.0+rocm7.10.0a20251124"
    );

    // checkout reproduces it exactly, and keeps the SDK, targets and names.
    let output = env
        .rockbuild()
        .args(["checkout", "--config"])
        .arg(&origins.stack_yaml)
        .args(["--root-checkout-dir", "ws", "--from-lock"])
        .arg(&lock)
        .output()
        .expect("run checkout");
    ok(&output);
    let checked = read_json(&env.path("ws/rockbuild.lock.json"));
    for project in ["torch", "audio", "vision", "triton", "apex"] {
        for key in ["commit", "tree", "submodules"] {
            assert_eq!(
                locked["projects"][project][key], checked["projects"][project][key],
                "{project}.{key}"
            );
        }
    }
    assert_eq!(locked["build"], checked["build"]);

    // build's own plan (from the trees) names every wheel as the lock does.
    let plan = |extra: &[&str]| {
        env.rockbuild()
            .args(["plan", "--json", "--config"])
            .arg(&origins.stack_yaml)
            .args([
                "--root-checkout-dir",
                "ws",
                "--output-dir",
                "out",
                "--lock",
                "ws/rockbuild.lock.json",
            ])
            .args(extra)
            .output()
            .expect("run plan")
    };
    let (stdout, _) = ok(&plan(&[]));
    let planned: Value = serde_json::from_str(&stdout).expect("plan JSON");
    for project in planned["projects"].as_array().expect("projects") {
        let name = project["name"].as_str().expect("name");
        assert_eq!(
            project["version"], locked["build"]["versions"][name],
            "{name}"
        );
    }

    // Drift: other targets, another SDK, another version suffix.
    let errors = [
        fails(&plan(&["--pytorch-rocm-arch", "gfx90a", "--quiet"]), 2),
        fails(&plan(&["--rocm-sdk-version", "==7.11.0", "--quiet"]), 2),
        fails(&plan(&["--version-suffix", "+rocm7.11.0", "--quiet"]), 2),
        fails(
            &env.rockbuild()
                .args([
                    "install-rocm",
                    "--output-dir",
                    "out",
                    "--index-url",
                    &index_url,
                ])
                .args(["--rocm-sdk-version", "==7.9.0", "--quiet", "--lock"])
                .arg(&lock)
                .output()
                .expect("run install-rocm"),
            2,
        ),
    ];
    insta::assert_snapshot!("drift", scrub(&errors.join("---\n"), &env));
}

#[test]
fn a_cache_on_another_file_system_is_copied_from() {
    let mut env = TestEnv::new();
    let world = StackWorld::new(&env);
    // /dev/shm is a tmpfs: hard links from the cache into the tree are impossible there.
    let shm = tempfile::Builder::new()
        .prefix("rockbuild-cache-")
        .tempdir_in("/dev/shm")
        .expect("a cache on tmpfs");
    env.set("ROCKBUILD_CACHE_DIR", shm.path().display().to_string());
    ok(&checkout(&env, &world, "ws", &["--project", "torch"])
        .output()
        .expect("run"));
    let device =
        |p: &Path| std::os::unix::fs::MetadataExt::dev(&std::fs::metadata(p).expect("stat"));
    let packs = env.path("ws/pytorch/.git/objects/pack");
    if device(shm.path()) != device(&packs) {
        let linked = std::fs::read_dir(&packs)
            .expect("packs")
            .filter_map(Result::ok)
            .any(|e| std::os::unix::fs::MetadataExt::nlink(&e.metadata().expect("meta")) > 1);
        assert!(!linked, "across file systems the objects are copied");
    }
    drop(shm);
    let torch = env.path("ws/pytorch");
    assert_eq!(git_in(&torch, &["fsck", "--no-dangling"]), "");
    assert_eq!(
        git_in(&torch, &["log", "-1", "--format=%s"]),
        "DO NOT SUBMIT: HIPIFY"
    );
    assert_eq!(
        git_in(
            &torch.join("third_party/kineto"),
            &["rev-parse", "THEROCK_UPSTREAM_DIFFBASE"]
        ),
        git_in(
            &torch,
            &["rev-parse", "THEROCK_UPSTREAM_DIFFBASE:third_party/kineto"]
        )
    );
}

/// A developer's global git config may ask for index formats libgit2 cannot read (the split
/// index, the sparse index) or for ones it rewrites differently (`feature.manyFiles`: index v4
/// and the untracked cache). rockbuild's trees are read through libgit2, so its git commands
/// keep those two off; the rest of the config is the user's.
#[test]
fn a_users_index_settings_do_not_break_checkouts() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    std::fs::write(
        env.path("home/.gitconfig"),
        "[core]\n\tsplitIndex = true\n[index]\n\tsparse = true\n[feature]\n\tmanyFiles = true\n",
    )
    .expect("gitconfig");
    // Cold (the script runs), warm (a new root from the cache: indexes rewritten by libgit2),
    // then the warm root again.
    ok(&checkout(&env, &world, "cold", &[]).output().expect("run"));
    ok(&checkout(&env, &world, "warm", &[]).output().expect("run"));
    let (_, again) = ok(&checkout(&env, &world, "warm", &[]).output().expect("run"));
    assert!(again.contains("torch: up to date"), "{again}");
    for root in ["cold", "warm"] {
        let torch = env.path(&format!("{root}/pytorch"));
        let split: Vec<_> = std::fs::read_dir(torch.join(".git"))
            .expect("git dir")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("sharedindex."))
            .collect();
        assert!(split.is_empty(), "{root}: a split index: {split:?}");
        assert_eq!(git_in(&torch, &["status", "--porcelain"]), "", "{root}");
        // The root's gitlink and the nested one (kineto's fmt): skip-worktree kept through
        // every index write, whichever writer.
        for (repo, gitlink) in [
            ("", "third_party/kineto"),
            ("third_party/kineto", "third_party/fmt"),
        ] {
            assert_eq!(
                git_in(&torch.join(repo), &["ls-files", "-v", "third_party"]),
                format!("S {gitlink}"),
                "{root}/{repo}"
            );
        }
    }
}
