//! Hostile content: what a repository may contain and what an input file may be. A committed
//! symlink is refused and never followed out of the tree; input files are regular files of
//! bounded size, parsed with bounded alias expansion and without silent duplicate keys; names
//! are names and config paths stay inside their roots (docs/reliability.md lists the
//! promises these tests prove).

use crate::common::git::StackWorld;
use crate::common::{TestEnv, scrub, snapshot};

/// A value no output may ever show: it is only in rockbuild's environment.
const SECRET: &str = "hunter2-only-in-the-environment";

/// Runs `command` with [`SECRET`] in its environment; the run must exit `code` and print
/// nothing of the host. Returns the titled error lines for the snapshot.
fn refused_with(
    env: &TestEnv,
    title: &str,
    code: i32,
    command: &mut assert_cmd::Command,
) -> String {
    let output = command
        .env("ROCKBUILD_TEST_SECRET", SECRET)
        .output()
        .expect("run rockbuild");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "{title}: {stderr}");
    for shown in [&stdout, &stderr] {
        assert!(
            !shown.contains(SECRET),
            "{title}: the environment was read:\n{shown}"
        );
    }
    let hostname = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    let hostname = hostname.trim();
    if !hostname.is_empty() {
        assert!(
            !stderr.contains(&format!("`{hostname}")),
            "{title}: /etc/hostname was read:\n{stderr}"
        );
    }
    let shown: Vec<&str> = stderr
        .lines()
        .filter(|line| {
            line.starts_with("error") || line.starts_with("  caused by") || line.starts_with('[')
        })
        .collect();
    format!("## {title}\n{}\n", scrub(&shown.join("\n"), env))
}

/// Replaces `path` in torch by a symlink to `target`, commits and publishes it.
fn commit_symlink(world: &StackWorld, path: &str, target: &str, message: &str) {
    let full = world.torch.dir.join(path);
    std::fs::remove_file(&full).expect("remove");
    std::os::unix::fs::symlink(target, &full).expect("symlink");
    world.torch.commit(message);
    world.torch.publish();
}

#[test]
fn a_committed_symlink_is_refused_never_followed() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let config = world.config.display().to_string();
    let mut out = String::new();

    commit_symlink(
        &world,
        "version.txt",
        "/proc/self/environ",
        "version.txt links to the environment",
    );
    // lock reads the committed files from git objects, never a tree.
    out.push_str(&refused_with(
        &env,
        "lock: version.txt links to /proc/self/environ",
        2,
        env.rockbuild().args([
            "lock",
            "--config",
            &config,
            "--lock",
            "ws/rockbuild.lock.json",
            "--project",
            "torch",
            "--pytorch-rocm-arch",
            "gfx906",
            "--version-suffix",
            "+rocm7.10.0",
        ]),
    ));
    assert!(!env.path("ws/rockbuild.lock.json").exists());

    // A tree checked out by other means: plan reads its files from the working tree.
    crate::common::run_ok(
        env.command("git")
            .args(["clone", "-q", &world.torch.url()])
            .arg(env.path("ws/pytorch")),
    );
    let plan = |env: &TestEnv| {
        let mut command = env.rockbuild();
        command.args([
            "plan",
            "--config",
            &config,
            "--root-checkout-dir",
            "ws",
            "--output-dir",
            "out",
            "--build",
            "torch",
            "--pytorch-rocm-arch",
            "gfx906",
            "--rocm-sdk-version",
            "==7.10.0",
        ]);
        command
    };
    out.push_str(&refused_with(
        &env,
        "plan: version.txt links to /proc/self/environ",
        2,
        &mut plan(&env),
    ));
    let linked = env.path("ws/pytorch/version.txt");
    std::fs::remove_file(&linked).expect("remove");
    std::os::unix::fs::symlink("/etc/hostname", &linked).expect("symlink");
    out.push_str(&refused_with(
        &env,
        "plan: version.txt links to /etc/hostname",
        2,
        &mut plan(&env),
    ));
    // A directory on the way that is a link: the pin files under `.ci/` lead out of the tree.
    std::fs::create_dir_all(env.path("elsewhere/docker/ci_commit_pins")).expect("mkdir");
    std::fs::write(
        env.path("elsewhere/docker/ci_commit_pins/triton.txt"),
        format!("{}\n", world.triton_pin),
    )
    .expect("write");
    let repo = &world.torch;
    repo.git(&["rm", "-q", "-r", "--cached", ".ci"]);
    std::fs::remove_dir_all(repo.dir.join(".ci")).expect("remove .ci");
    std::os::unix::fs::symlink(env.path("elsewhere"), repo.dir.join(".ci")).expect("symlink");
    repo.commit(".ci links out of the tree");
    repo.publish();
    out.push_str(&refused_with(
        &env,
        "lock: .ci/ links out of the tree",
        2,
        env.rockbuild().args([
            "lock",
            "--config",
            &config,
            "--lock",
            "ws/l.json",
            "--project",
            "torch",
            "--project",
            "triton",
        ]),
    ));
    repo.git(&["revert", "--no-edit", "HEAD"]);
    repo.publish();

    // A pin file read from the pinning project's commit.
    commit_symlink(
        &world,
        "related_commits",
        "/proc/self/environ",
        "related_commits links to the environment",
    );
    out.push_str(&refused_with(
        &env,
        "lock: related_commits links to /proc/self/environ",
        2,
        env.rockbuild().args([
            "lock",
            "--config",
            &config,
            "--lock",
            "ws/l.json",
            "--project",
            "torch",
            "--project",
            "vision",
        ]),
    ));
    snapshot::settings(&env).bind(|| insta::assert_snapshot!("hostile_committed_symlinks", out));
}
