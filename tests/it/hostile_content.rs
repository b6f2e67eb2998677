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

/// Makes a FIFO at `path` (nobody ever writes to it: a reader would wait forever).
fn fifo(env: &TestEnv, path: &std::path::Path) {
    crate::common::run_ok(env.command("mkfifo").arg(path));
}

/// A one-connection-at-a-time HTTP server answering every request with `answer` (status
/// line, headers and as much body as it gives), then holding the connection open for
/// `hold`: bodies that never end, answers that stop half-way.
fn raw_http(answer: impl Fn(&mut std::net::TcpStream) + Send + 'static) -> u16 {
    use std::io::Read as _;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            answer(&mut stream);
        }
    });
    port
}

/// `install-rocm` from an index at `port`: the preflight reads the `rocm` project page.
fn install_from(env: &TestEnv, port: u16) -> assert_cmd::Command {
    let mut command = env.rockbuild();
    command
        .args(["install-rocm", "--venv", "venv", "--index-url"])
        .arg(format!("http://127.0.0.1:{port}/simple/"))
        .args(["--index-timeout", "2", "--index-retries", "0"]);
    command
}

#[test]
fn input_files_are_regular_bounded_and_parsed_with_limits() {
    use std::io::Write as _;
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let config = world.config.display().to_string();
    let mut out = String::new();
    // Every case ends on its own: a read that never ends fails the test instead.
    let bounded = |command: &mut assert_cmd::Command| {
        command.timeout(std::time::Duration::from_secs(60));
    };

    let pipe = env.path("pipe");
    fifo(&env, &pipe);
    let mut cases: Vec<(&str, i32, assert_cmd::Command)> = Vec::new();
    let lock_from = |config: &std::path::Path| {
        let mut command = env.rockbuild();
        command
            .args([
                "lock",
                "--lock",
                "ws/l.json",
                "--project",
                "vision",
                "--config",
            ])
            .arg(config);
        command
    };
    cases.push(("--config is a FIFO", 2, lock_from(&pipe)));
    cases.push((
        "--config is a device",
        2,
        lock_from(std::path::Path::new("/dev/zero")),
    ));
    let large = env.path("large.yaml");
    let mut file = std::fs::File::create(&large).expect("create");
    let line = format!("# {}\n", "x".repeat(1021));
    for _ in 0..(17 << 10) {
        file.write_all(line.as_bytes()).expect("write");
    }
    drop(file);
    cases.push(("--config too large", 2, lock_from(&large)));
    let bomb = env.path("bomb.yaml");
    let mut text = std::fs::read_to_string(&world.config).expect("config");
    text.push_str("bomb0: &b0 [x, x, x, x, x, x, x, x, x, x]\n");
    for level in 1..9 {
        let list = vec![format!("*b{}", level - 1); 10].join(", ");
        text.push_str(&format!("bomb{level}: &b{level} [{list}]\n"));
    }
    std::fs::write(&bomb, text).expect("bomb");
    cases.push(("--config with an alias bomb", 2, lock_from(&bomb)));

    let from_lock = |lock: &std::path::Path| {
        let mut command = env.rockbuild();
        command
            .args(["checkout", "--config", &config, "--root-checkout-dir", "ws"])
            .arg("--from-lock")
            .arg(lock);
        command
    };
    cases.push(("--from-lock is a FIFO", 2, from_lock(&pipe)));
    cases.push((
        "--from-lock is a device",
        2,
        from_lock(std::path::Path::new("/dev/zero")),
    ));

    std::fs::create_dir_all(env.path("staged")).expect("mkdir");
    let mut promote = env.rockbuild();
    promote
        .args([
            "promote",
            "--from",
            "staged",
            "--to",
            "release",
            "--test-report",
        ])
        .arg(&pipe);
    cases.push(("--test-report is a FIFO", 2, promote));

    let fake = crate::common::sysfs::rdna3(&env.path("machine"));
    let properties = fake
        .root
        .join("sys/class/kfd/kfd/topology/nodes/1/properties");
    std::fs::remove_file(&properties).expect("remove");
    fifo(&env, &properties);
    let mut detect = env.rockbuild();
    detect.arg("detect").arg("--sysfs-root").arg(&fake.root);
    cases.push(("a sysfs properties file is a FIFO", 1, detect));

    // Index pages: compressed without being asked, larger than any index page, cut off.
    let gzip = raw_http(|stream| {
        let body = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03";
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(body);
    });
    cases.push((
        "an index page sent gzip-encoded",
        1,
        install_from(&env, gzip),
    ));
    let huge = raw_http(|stream| {
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n"
        );
        let chunk = "<a href=x>".repeat(100_000);
        for _ in 0..70 {
            if stream.write_all(chunk.as_bytes()).is_err() {
                return;
            }
        }
    });
    cases.push(("an index page of 70 MB", 1, install_from(&env, huge)));
    let stalled = raw_http(|stream| {
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n\r\n<html>"
        );
        std::thread::sleep(std::time::Duration::from_secs(30));
    });
    cases.push((
        "an index page that stops half-way",
        1,
        install_from(&env, stalled),
    ));

    for (title, code, mut command) in cases {
        bounded(&mut command);
        out.push_str(&refused_with(&env, title, code, &mut command));
    }
    assert!(!env.path("ws/l.json").exists());
    assert!(!env.path("venv").exists(), "nothing installed");
    snapshot::settings(&env).bind(|| insta::assert_snapshot!("hostile_unbounded_inputs", out));
}

#[test]
fn a_key_given_twice_is_refused_with_file_and_line() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let mut out = String::new();

    // A second `torch:` block, with another origin, at the end of the projects.
    let config = std::fs::read_to_string(&world.config).expect("config");
    let second = "  torch:\n    checkout-dir: pytorch\n    origin: file:///elsewhere/torch.git\n\
                  \x20   ref: main\n    wheel: torch\n    recipe: torch\n";
    let (head, tail) = config.split_once("\n  audio:\n").expect("the audio block");
    let twice = env.path("twice.yaml");
    std::fs::write(&twice, format!("{head}\n{second}  audio:\n{tail}")).expect("write");
    let mut lock = env.rockbuild();
    lock.args([
        "lock",
        "--lock",
        "ws/l.json",
        "--project",
        "torch",
        "--config",
    ])
    .arg(&twice);
    out.push_str(&refused_with(
        &env,
        "stack config: torch twice",
        2,
        &mut lock,
    ));

    // A lock naming vision twice, the second at another commit.
    lock_vision(&env, &world);
    let good = std::fs::read_to_string(env.path("ws/rockbuild.lock.json")).expect("lock");
    let value: serde_json::Value = serde_json::from_str(&good).expect("json");
    let vision = serde_json::to_string_pretty(&value["projects"]["vision"]).expect("json");
    let projects_at = good.find("\"projects\": {").expect("projects");
    let insert = projects_at + "\"projects\": {".len();
    let doubled = format!(
        "{}\n    \"vision\": {},{}",
        &good[..insert],
        vision.replace(&world.vision_pin, &"0".repeat(40)),
        &good[insert..]
    );
    std::fs::write(env.path("twice.lock.json"), doubled).expect("write");
    let mut checkout = env.rockbuild();
    checkout
        .args([
            "checkout",
            "--root-checkout-dir",
            "ws2",
            "--from-lock",
            "twice.lock.json",
        ])
        .arg("--config")
        .arg(&world.config);
    out.push_str(&refused_with(&env, "lock: vision twice", 2, &mut checkout));

    // A test report whose failed result is followed by a passed one.
    std::fs::write(
        env.path("twice-report.json"),
        "{\n  \"schema\": 1,\n  \"kind\": \"smoke\",\n  \"generated_by\": \"rockbuild\",\n  \
         \"index_url\": \"http://127.0.0.1:9/\",\n  \"started\": \"2026-01-01T00:00:00Z\",\n  \
         \"finished\": \"2026-01-01T00:01:00Z\",\n  \"result\": \"failed\",\n  \
         \"wheels\": [],\n  \"checks\": [],\n  \"result\": \"passed\"\n}\n",
    )
    .expect("write");
    std::fs::create_dir_all(env.path("staged")).expect("mkdir");
    let mut promote = env.rockbuild();
    promote.args([
        "promote",
        "--from",
        "staged",
        "--to",
        "release",
        "--test-report",
        "twice-report.json",
    ]);
    out.push_str(&refused_with(
        &env,
        "test report: result twice",
        2,
        &mut promote,
    ));
    snapshot::settings(&env).bind(|| insta::assert_snapshot!("hostile_duplicate_keys", out));
}

/// Locks vision alone into ws/rockbuild.lock.json.
fn lock_vision(env: &TestEnv, world: &StackWorld) {
    env.rockbuild()
        .args([
            "lock",
            "--lock",
            "ws/rockbuild.lock.json",
            "--project",
            "vision",
            "--config",
        ])
        .arg(&world.config)
        .assert()
        .success();
}

/// Fails when a file named `name` exists anywhere below `dir`.
fn assert_no_file_named(dir: &std::path::Path, name: &str) {
    for entry in walkdir::WalkDir::new(dir).into_iter().flatten() {
        assert!(
            entry.file_name() != name,
            "{} was written",
            entry.path().display()
        );
    }
}

#[test]
fn names_are_names_and_config_paths_stay_inside_their_roots() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let config = std::fs::read_to_string(&world.config).expect("config");
    let mut out = String::new();
    let mut variant = |title: &str, from: &str, to: &str, verb: &[&str]| {
        assert!(config.contains(from), "{title}: {from}");
        let path = env.path("variant.yaml");
        std::fs::write(&path, config.replacen(from, to, 1)).expect("write");
        let mut command = env.rockbuild();
        command.args(verb).arg("--config").arg(&path);
        out.push_str(&refused_with(&env, title, 2, &mut command));
    };
    let build = [
        "build",
        "--root-checkout-dir",
        "ws",
        "--output-dir",
        "out/deep",
        "--pytorch-rocm-arch",
        "gfx906",
        "--rocm-sdk-version",
        "==7.10.0",
    ];
    variant(
        "a project named ../../evilproj",
        "\n  apex:\n",
        "\n  ../../evilproj:\n",
        &build,
    );
    variant(
        "a wheel named ../wheel",
        "wheel: apex",
        "wheel: ../wheel",
        &build,
    );
    let checkout = [
        "checkout",
        "--root-checkout-dir",
        "ws",
        "--project",
        "torch",
    ];
    variant(
        "check-paths leaving the checkout",
        "check-paths: [csrc]",
        "check-paths: [csrc, ../outside]",
        &checkout,
    );
    variant(
        "an absolute hipify script",
        "script: tools/amd_build/build_amd.py",
        "script: /tmp/build_amd.py",
        &checkout,
    );
    variant(
        "a pin file above the pinning checkout",
        "related-commits: {file: related_commits, os: ubuntu, key: apex}",
        "related-commits: {file: ../../related_commits, os: ubuntu, key: apex}",
        &["lock", "--lock", "ws/l.json"],
    );
    assert_no_file_named(env.root(), "evilproj.log");
    assert!(!env.path("ws/l.json").exists());
    snapshot::settings(&env).bind(|| insta::assert_snapshot!("hostile_names_and_paths", out));

    // A check path committed as a link out of the tree is not scanned: the CUDA include
    // outside would otherwise fail the leftover check.
    std::fs::create_dir_all(env.path("outside")).expect("mkdir");
    std::fs::write(env.path("outside/host.cu"), "#include <cuda_runtime.h>\n").expect("write");
    std::os::unix::fs::symlink(env.path("outside"), world.torch.dir.join("linked")).expect("link");
    world.torch.commit("a link out of the tree");
    world.torch.publish();
    let linked = env.path("linked-stack.yaml");
    std::fs::write(
        &linked,
        config.replacen("check-paths: [csrc]", "check-paths: [csrc, linked]", 1),
    )
    .expect("write");
    env.rockbuild()
        .args([
            "checkout",
            "--root-checkout-dir",
            "ws",
            "--project",
            "torch",
            "--config",
        ])
        .arg(&linked)
        .assert()
        .success();
}
