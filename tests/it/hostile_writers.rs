//! Hostile writers: two runs into one prefix or one checkout root, a run killed (SIGKILL) at
//! every index page write or mid-upload, prefixes nested in other indexes, a `.whl` that is
//! not a wheel, an S3 endpoint that never answers. Every state a reader can see is checked
//! with real pip resolving from the index served over HTTP (docs/reliability.md lists the
//! promises these tests prove).
//!
//! Runs are stopped or held at exact points with the `ROCKBUILD_FAULT` test hook
//! (`src/fault.rs`): `page:<n>` kills the process before its (n+1)-th page write,
//! `confirm:0:wait=<file>` holds a run that owns the lease until the test creates `<file>`.

use std::net::TcpListener;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::TestEnv;
use crate::common::git::StackWorld;
use crate::common::http;
use crate::common::pyindex::{copy_tree, sha256_file, wheel_metadata};
use crate::common::s3::S3Server;
use crate::common::sample::Venv;
use crate::common::snapshot;
use crate::common::wheels::{WheelBuilder, cpu_library, hip_library};
use crate::publish::{World, gpu_world};

const TARGETS: &str = "gfx906,gfx1030";
/// Pages a stage of the three-project set writes: two per project, two for the root.
const PAGES: usize = 8;

/// Release `n` of a three-project set: torch pins triton, torchvision pins torch, so only
/// the matching three install together. Release 1 sorts above release 0 everywhere.
fn release(dir: &Path, n: u32) -> Vec<PathBuf> {
    let (torch, triton, vision) = versions(n);
    vec![
        WheelBuilder::new("torch", &torch)
            .file_from(
                "torch/lib/libtorch_hip.so",
                &hip_library(&["gfx906", "gfx1030"]),
            )
            .requires(&format!("triton=={triton}"))
            .build(dir),
        WheelBuilder::new("triton", &triton)
            .file_from(
                "triton/_C/libtriton.so",
                &cpu_library(Some("$ORIGIN/../lib")),
            )
            .build(dir),
        WheelBuilder::new("torchvision", &vision)
            .file_from("torchvision/_C.so", &hip_library(&["gfx906", "gfx1030"]))
            .requires(&format!("torch=={torch}"))
            .build(dir),
    ]
}

/// (torch, triton, torchvision) versions of release `n`.
fn versions(n: u32) -> (String, String, String) {
    (
        format!("2.10.{n}+rocm7.13.0"),
        format!("3.5.{n}"),
        format!("0.25.{n}+rocm7.13.0"),
    )
}

/// What pip installs for release `n`, sorted by name.
fn resolved(n: u32) -> Vec<(String, String)> {
    let (torch, triton, vision) = versions(n);
    vec![
        ("torch".into(), torch),
        ("torchvision".into(), vision),
        ("triton".into(), triton),
    ]
}

/// `rockbuild <args>` with the test's environment, as a plain process (to spawn or kill).
fn rockbuild(env: &TestEnv, args: &[&str]) -> Command {
    let mut command = env.command(env!("CARGO_BIN_EXE_rockbuild"));
    command.args(args);
    command
}

fn stage_args<'a>(input: &'a str, to: &'a str) -> Vec<&'a str> {
    vec![
        "stage",
        "--config",
        "stack.yaml",
        "--input",
        input,
        "--to",
        to,
        "--targets",
        TARGETS,
    ]
}

fn output(command: &mut Command) -> Output {
    command.output().expect("run rockbuild")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[track_caller]
fn succeeded(output: &Output) {
    assert!(
        output.status.success(),
        "{:?}\n{}",
        output.status,
        text(&output.stderr)
    );
}

/// Starts a run held at `point` (its lease taken) until [`Held::release`]; returns once it
/// is there.
struct Held {
    child: Child,
    go: PathBuf,
}

impl Held {
    fn start(env: &TestEnv, args: &[&str], point: &str, name: &str) -> Held {
        let go = env.path(name);
        let child = rockbuild(env, args)
            .env("ROCKBUILD_FAULT", format!("{point}:wait={}", go.display()))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn rockbuild");
        let mut held = Held { child, go };
        let reached = PathBuf::from(format!("{}.reached", held.go.display()));
        let start = Instant::now();
        while !reached.exists() {
            if let Ok(Some(status)) = held.child.try_wait() {
                let mut stderr = String::new();
                if let Some(mut pipe) = held.child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
                }
                panic!("the held run ended early ({status}):\n{stderr}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(300),
                "the run never reached {point}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        held
    }

    fn release(self) -> Output {
        std::fs::write(&self.go, b"").expect("release");
        self.child.wait_with_output().expect("wait")
    }
}

/// Snapshot settings: the temp dir, ports and digests as usual, plus the holder's pid, host
/// and times, which change on every run.
fn settings(env: &TestEnv) -> insta::Settings {
    let mut settings = snapshot::settings(env);
    settings.add_filter(
        r"pid \d+ on [^,\s]+, since [0-9T:\-]+Z",
        "pid [PID] on [HOST], since [TIME]",
    );
    settings.add_filter(r"expires at [0-9T:\-]+Z", "expires at [TIME]");
    settings
}

/// pip (in `venv`, isolated from the machine's pip configuration) resolves `torchvision`
/// from the index at `url` without installing it; returns what it would install.
fn pip_resolves(env: &TestEnv, venv: &Venv, url: &str, tag: &str) -> Vec<(String, String)> {
    let report = env.path(&format!("pip-{tag}.json"));
    let out = env
        .command(venv.python())
        .args([
            "-m",
            "pip",
            "install",
            "--isolated",
            "--dry-run",
            "--quiet",
            "--no-cache-dir",
            "--only-binary",
            ":all:",
            "--ignore-installed",
            "--report",
        ])
        .arg(&report)
        .args(["--index-url", url, "torchvision"])
        .output()
        .expect("pip");
    assert!(
        out.status.success(),
        "{tag}: pip could not resolve torchvision from {url}:\n{}",
        text(&out.stderr)
    );
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
    let mut set: Vec<(String, String)> = report["install"]
        .as_array()
        .expect("install list")
        .iter()
        .map(|item| {
            (
                item["metadata"]["name"].as_str().expect("name").to_string(),
                item["metadata"]["version"]
                    .as_str()
                    .expect("version")
                    .to_string(),
            )
        })
        .collect();
    set.sort();
    set
}

/// Every wheel of `wheels` is listed by its project's HTML and JSON pages with its own
/// SHA-256, next to its own METADATA as sidecar; the pages list nothing else.
#[track_caller]
fn pages_list_exactly(root: &Path, wheels: &[PathBuf]) {
    let mut expected: Vec<(String, String)> = wheels
        .iter()
        .map(|w| {
            let file = w.file_name().and_then(|f| f.to_str()).expect("name");
            let project = file.split('-').next().expect("name").to_string();
            let sidecar = root.join(&project).join(format!("{file}.metadata"));
            assert_eq!(
                std::fs::read(&sidecar).expect("sidecar"),
                wheel_metadata(w),
                "{file}: its sidecar is its own METADATA"
            );
            assert_eq!(sha256_file(&root.join(&project).join(file)), sha256_file(w));
            (file.to_string(), sha256_file(w))
        })
        .collect();
    expected.sort();
    let mut listed = Vec::new();
    let projects: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("index.json")).expect("root page"))
            .expect("json");
    for project in projects["projects"].as_array().expect("projects") {
        let name = project["name"].as_str().expect("name");
        let page: Value = serde_json::from_str(
            &std::fs::read_to_string(root.join(name).join("index.json")).expect("page"),
        )
        .expect("json");
        let html = std::fs::read_to_string(root.join(name).join("index.html")).expect("html");
        for file in page["files"].as_array().expect("files") {
            let filename = file["filename"].as_str().expect("filename").to_string();
            let sha = file["hashes"]["sha256"].as_str().expect("sha").to_string();
            assert!(
                html.contains(&format!("#sha256={sha}")),
                "{name}: the HTML and JSON pages come from one listing"
            );
            listed.push((filename, sha));
        }
    }
    listed.sort();
    assert_eq!(listed, expected);
}

fn temporaries(root: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name().to_string_lossy();
            name.starts_with(".rockbuild-") && name.ends_with(".tmp")
        })
        .map(|e| e.path().to_path_buf())
        .collect()
}

/// Starts the embedded S3 server and points every later rockbuild run of `world` at it.
fn with_s3(world: &mut World) -> S3Server {
    let server = S3Server::start(&world.env.path("s3"));
    for (key, value) in server.env() {
        world.env.set(key, value);
    }
    world
        .env
        .set("ROCKBUILD_S3_ENDPOINT", server.endpoint.clone());
    world.env.set("ROCKBUILD_S3_PATH_STYLE", "true");
    server
}

/// Stages `input` to `to`; the run must succeed.
#[track_caller]
fn stage_ok(env: &TestEnv, input: &str, to: &str) {
    succeeded(&output(&mut rockbuild(env, &stage_args(input, to))));
}

fn world_with_releases() -> (World, Vec<PathBuf>, Vec<PathBuf>) {
    let world = gpu_world();
    let old = release(&world.env.path("dist/old"), 0);
    let new = release(&world.env.path("dist/new"), 1);
    (world, old, new)
}

#[test]
fn two_stages_into_one_prefix_take_turns_and_lose_nothing() {
    let (world, old, new) = world_with_releases();
    let env = &world.env;
    let first = Held::start(
        env,
        &stage_args("dist/old", "staged"),
        "confirm:0",
        "go-first",
    );
    let refused = output(&mut rockbuild(env, &stage_args("dist/new", "staged")));
    assert_eq!(refused.status.code(), Some(7), "{}", text(&refused.stderr));
    settings(env).bind(|| {
        insta::assert_snapshot!("stage_refused_lease_held_local", text(&refused.stderr));
    });
    let mut waiting = stage_args("dist/new", "staged");
    waiting.extend(["--lease-wait", "1"]);
    let gave_up = output(&mut rockbuild(env, &waiting));
    assert_eq!(gave_up.status.code(), Some(7), "{}", text(&gave_up.stderr));
    let stderr = text(&gave_up.stderr);
    assert!(
        stderr.contains("waiting up to 1 s for its lease")
            && stderr.contains(" s for it: --lease-wait)\n"),
        "{stderr}"
    );
    succeeded(&first.release());
    let second = output(&mut rockbuild(env, &stage_args("dist/new", "staged")));
    succeeded(&second);
    pages_list_exactly(&env.path("staged"), &[old, new].concat());
    assert!(
        !env.path("staged/.rockbuild-lease").exists(),
        "a finished run releases its lease"
    );
}

#[test]
fn two_promotes_into_one_prefix_take_turns_and_nested_destinations_are_refused() {
    let (world, old, _) = world_with_releases();
    let env = &world.env;
    stage_ok(env, "dist/old", "staged");
    let web = http::serve(&env.path("staged"));
    world.smoke(&web.url(), "smoke.json").success();
    let promote = |to: &'static str| -> Vec<&'static str> {
        vec![
            "promote",
            "--from",
            "staged",
            "--to",
            to,
            "--test-report",
            "smoke.json",
        ]
    };
    let first = Held::start(env, &promote("release"), "confirm:0", "go-first");
    let refused = output(&mut rockbuild(env, &promote("release")));
    assert_eq!(refused.status.code(), Some(7), "{}", text(&refused.stderr));
    // With --lease-wait the second run queues behind the first instead (several refs of one
    // family promote into one index at night), then finds the wheels already there.
    let waiter_log = env.path("waiter.stderr");
    let mut waiter = rockbuild(env, &promote("release"))
        .args(["--lease-wait", "300"])
        .stderr(std::fs::File::create(&waiter_log).expect("log"))
        .spawn()
        .expect("spawn the waiting promote");
    let start = Instant::now();
    while !std::fs::read_to_string(&waiter_log)
        .unwrap_or_default()
        .contains("waiting up to 300 s for its lease")
    {
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "the second promote never waited"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    succeeded(&first.release());
    let waited = waiter.wait().expect("wait");
    let waited_log = std::fs::read_to_string(&waiter_log).expect("log");
    assert!(waited.success(), "{waited}\n{waited_log}");
    assert!(
        waited_log.contains("(0 objects copied, 0 B; 6 already there)"),
        "{waited_log}"
    );
    pages_list_exactly(&env.path("release"), &old);

    // `release/torch` is a project directory of the index at `release`.
    let nested = output(&mut rockbuild(env, &promote("release/torch")));
    assert_eq!(nested.status.code(), Some(2), "{}", text(&nested.stderr));
    settings(env)
        .bind(|| insta::assert_snapshot!("promote_into_a_nested_prefix", text(&nested.stderr)));
    assert!(
        !env.path("release/torch/index.json").exists() || {
            let page: Value = serde_json::from_str(
                &std::fs::read_to_string(env.path("release/torch/index.json")).expect("page"),
            )
            .expect("json");
            page.get("projects").is_none()
        }
    );
}

#[test]
fn nested_and_enclosing_prefixes_are_refused_naming_both() {
    let (world, _, new) = world_with_releases();
    let env = &world.env;
    stage_ok(env, "dist/old", "staged");
    let before = std::fs::read(env.path("staged/torch/index.html")).expect("page");
    let inside = output(&mut rockbuild(env, &stage_args("dist/new", "staged/torch")));
    assert_eq!(inside.status.code(), Some(2), "{}", text(&inside.stderr));
    assert_eq!(
        std::fs::read(env.path("staged/torch/index.html")).expect("page"),
        before,
        "the enclosing index's page is untouched"
    );
    // An index one level down, then its parent as a destination: the parent holds it.
    stage_ok(env, "dist/new", "outer/inner");
    let holding = output(&mut rockbuild(env, &stage_args("dist/new", "outer")));
    assert_eq!(holding.status.code(), Some(2), "{}", text(&holding.stderr));
    let index = output(&mut rockbuild(env, &["index", "staged/torch"]));
    assert_eq!(index.status.code(), Some(2), "{}", text(&index.stderr));
    settings(env).bind(|| {
        insta::assert_snapshot!(
            "nested_prefixes_refused",
            format!(
                "stage --to staged/torch:\n{}\nstage --to outer:\n{}\nindex staged/torch:\n{}",
                text(&inside.stderr),
                text(&holding.stderr),
                text(&index.stderr)
            )
        );
    });
    pages_list_exactly(&env.path("outer/inner"), &new);
}

/// The old release staged into `to`, then the new one staged with a SIGKILL before each
/// page write in turn: at every point pip resolves all-old or all-new (new exactly once
/// torchvision's page is written: everything it pins is listed before it), and a re-run
/// completes the index.
fn kill_at_every_page_write(world: &World, copy_base_to: &dyn Fn(usize) -> (String, PathBuf)) {
    let env = &world.env;
    let venv = Venv::create(env, &env.path("pip-venv"));
    for n in 0..PAGES {
        let (to, served) = copy_base_to(n);
        let killed = rockbuild(env, &stage_args("dist/new", &to))
            .env("ROCKBUILD_FAULT", format!("page:{n}"))
            .output()
            .expect("run");
        assert_eq!(
            killed.status.signal(),
            Some(9),
            "page {n}: {:?}\n{}",
            killed.status,
            text(&killed.stderr)
        );
        let web = http::serve(&served);
        // triton's two pages, torch's two, then torchvision's HTML (what pip reads here).
        let expected = if n >= 5 { resolved(1) } else { resolved(0) };
        assert_eq!(
            pip_resolves(env, &venv, &web.url(), &format!("kill-{n}")),
            expected,
            "killed before page write {n}"
        );
        let rerun = output(&mut rockbuild(env, &stage_args("dist/new", &to)));
        succeeded(&rerun);
        assert!(
            text(&rerun.stderr).contains("(0 objects uploaded, 0 B; 6 already there)"),
            "page {n}: every object was stored before the first page\n{}",
            text(&rerun.stderr)
        );
        if n == 3 {
            assert_eq!(
                pip_resolves(env, &venv, &web.url(), "repaired"),
                resolved(1)
            );
        }
    }
}

#[test]
fn kill_at_every_page_write_local() {
    let (world, old, new) = world_with_releases();
    let env = &world.env;
    stage_ok(env, "dist/old", "base");
    kill_at_every_page_write(&world, &|n| {
        let dir = env.path(&format!("killed-{n}"));
        copy_tree(&env.path("base"), &dir);
        (dir.display().to_string(), dir)
    });
    pages_list_exactly(&env.path("killed-7"), &[old, new].concat());
}

#[test]
fn kill_at_every_page_write_s3() {
    let (mut world, old, new) = world_with_releases();
    let server = with_s3(&mut world);
    let env = &world.env;
    stage_ok(env, "dist/old", &server.url("base"));
    kill_at_every_page_write(&world, &|n| {
        // The bucket's objects as plain files (s3s-fs): served over HTTP, they are what a
        // static website on the bucket serves.
        let prefix = format!("killed-{n}");
        copy_tree(&server.object_path("base"), &server.object_path(&prefix));
        (server.url(&prefix), server.object_path(&prefix))
    });
    pages_list_exactly(&server.object_path("killed-7"), &[old, new].concat());
}

#[test]
fn s3_lease_refuses_a_second_writer_and_a_broken_lease_stops_its_run() {
    let (mut world, old, new) = world_with_releases();
    let server = with_s3(&mut world);
    let env = &world.env;
    let staging = server.url("staging");
    let first = Held::start(
        env,
        &stage_args("dist/old", &staging),
        "confirm:0",
        "go-first",
    );
    let refused = output(&mut rockbuild(env, &stage_args("dist/new", &staging)));
    assert_eq!(refused.status.code(), Some(7), "{}", text(&refused.stderr));

    // The holder is alive (held), so only --break-lease takes its lease.
    let mut breaking = stage_args("dist/new", &staging);
    breaking.push("--break-lease");
    let broke = output(&mut rockbuild(env, &breaking));
    succeeded(&broke);
    let lost = first.release();
    assert_eq!(lost.status.code(), Some(7), "{}", text(&lost.stderr));
    settings(env).bind(|| {
        insta::assert_snapshot!(
            "s3_lease_refusals",
            format!(
                "second writer:\n{}\nthe run whose lease was broken:\n{}",
                text(&refused.stderr),
                text(&lost.stderr)
            )
        );
    });
    // The breaking run's pages list both sets: the first run's objects were stored before
    // it was held, and it wrote no page after losing its lease.
    pages_list_exactly(&server.object_path("staging"), &[old, new].concat());
    assert!(
        !server.object_path("staging/.rockbuild-lease").exists(),
        "the lease is released"
    );

    let nested = output(&mut rockbuild(
        env,
        &stage_args("dist/new", &server.url("staging/torch")),
    ));
    assert_eq!(nested.status.code(), Some(2), "{}", text(&nested.stderr));
}

#[test]
fn a_kill_mid_upload_leaves_temporaries_no_reader_sees_and_the_next_run_removes() {
    let (world, old, new) = world_with_releases();
    let env = &world.env;
    stage_ok(env, "dist/old", "staged");
    // One transfer at a time: killed with exactly one object's temporary file written.
    let mut one_at_a_time = stage_args("dist/new", "staged");
    one_at_a_time.extend(["--transfer-jobs", "1"]);
    let killed = rockbuild(env, &one_at_a_time)
        .env("ROCKBUILD_FAULT", "upload:1")
        .output()
        .expect("run");
    assert_eq!(killed.status.signal(), Some(9), "{}", text(&killed.stderr));
    let left = temporaries(&env.path("staged"));
    assert_eq!(left.len(), 1, "{left:?}");
    let name = left[0]
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    for page in walkdir::WalkDir::new(env.path("staged"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("index."))
    {
        let body = std::fs::read_to_string(page.path()).expect("page");
        assert!(
            !body.contains(&name),
            "{} lists {name}",
            page.path().display()
        );
    }
    let venv = Venv::create(env, &env.path("pip-venv"));
    let web = http::serve(&env.path("staged"));
    assert_eq!(
        pip_resolves(env, &venv, &web.url(), "after-kill"),
        resolved(0)
    );

    let rerun = output(&mut rockbuild(env, &stage_args("dist/new", "staged")));
    succeeded(&rerun);
    assert!(
        text(&rerun.stderr).contains("removed 1 temporary file an interrupted run left in"),
        "{}",
        text(&rerun.stderr)
    );
    assert_eq!(temporaries(&env.path("staged")), Vec::<PathBuf>::new());
    pages_list_exactly(&env.path("staged"), &[old, new].concat());
    assert_eq!(
        pip_resolves(env, &venv, &web.url(), "after-rerun"),
        resolved(1)
    );
}

#[test]
fn a_whl_that_is_not_a_wheel_is_never_indexed() {
    let (world, old, _) = world_with_releases();
    let env = &world.env;
    stage_ok(env, "dist/old", "staged");
    let before = std::fs::read(env.path("staged/torch/index.html")).expect("page");
    // What a failed download or a proxy's error page saved under a wheel's name looks like.
    std::fs::write(
        env.path("staged/torch/torch-9.9.9-cp311-cp311-linux_x86_64.whl"),
        b"<html><body>502 Bad Gateway</body></html>\n",
    )
    .expect("plant");
    let index = output(&mut rockbuild(env, &["index", "staged"]));
    assert_eq!(index.status.code(), Some(5), "{}", text(&index.stderr));
    settings(env)
        .bind(|| insta::assert_snapshot!("index_refuses_a_non_wheel", text(&index.stderr)));
    assert_eq!(
        std::fs::read(env.path("staged/torch/index.html")).expect("page"),
        before,
        "no page changed"
    );
    std::fs::remove_file(env.path("staged/torch/torch-9.9.9-cp311-cp311-linux_x86_64.whl"))
        .expect("remove");
    succeeded(&output(&mut rockbuild(env, &["index", "staged"])));
    pages_list_exactly(&env.path("staged"), &old);
}

#[test]
fn an_s3_endpoint_that_never_answers_ends_bounded_and_in_words() {
    let env = TestEnv::new();
    // Accepts connections and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let mut command = rockbuild(
        &env,
        &[
            "index",
            "s3://wheels/staging",
            "--s3-endpoint",
            &format!("http://127.0.0.1:{port}"),
            "--s3-path-style",
            "--s3-timeout",
            "1",
            "--s3-attempts",
            "2",
        ],
    );
    command.envs([
        ("AWS_ACCESS_KEY_ID", "AKNEVERANSWERS"),
        ("AWS_SECRET_ACCESS_KEY", "never-answers"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ]);
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // Bounded: 2 attempts of 1 s plus backoff; a hang fails the test instead of the suite.
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("rockbuild did not give up on an endpoint that never answers");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().expect("output");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr).replace(&port.to_string(), "[PORT]");
    settings(&env).bind(|| insta::assert_snapshot!("s3_never_answers", stderr));
}

#[test]
fn two_checkouts_into_one_root_never_write_a_wrong_lock() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let config = world.config.display().to_string();
    let args = ["checkout", "--config", &config, "--root-checkout-dir", "ws"];
    let first = Held::start(&env, &args, "checkout:0", "go-first");
    let refused = output(&mut rockbuild(&env, &args));
    assert_eq!(refused.status.code(), Some(7), "{}", text(&refused.stderr));
    settings(&env).bind(|| insta::assert_snapshot!("checkout_root_busy", text(&refused.stderr)));
    assert!(
        !env.path("ws/rockbuild.lock").exists(),
        "the refused checkout wrote no lock"
    );
    succeeded(&first.release());
    let again = output(&mut rockbuild(&env, &args));
    succeeded(&again);
    assert!(!env.path("ws/.rockbuild-checkout.lock").exists());
}

/// A link planted where rockbuild writes: the write is refused and the link's target is left
/// as it was. `victim` is a file, `elsewhere` a directory outside every root.
struct Planted {
    victim: PathBuf,
    elsewhere: PathBuf,
}

impl Planted {
    fn new(env: &TestEnv) -> Planted {
        let victim = env.path("victim");
        let elsewhere = env.path("elsewhere");
        std::fs::write(&victim, "precious\n").expect("victim");
        std::fs::create_dir_all(&elsewhere).expect("elsewhere");
        Planted { victim, elsewhere }
    }

    /// Replaces `at` (a file, a directory or nothing) by a link to `target`.
    fn link(&self, at: &Path, target: &Path) {
        if at.is_dir() && !at.is_symlink() {
            std::fs::remove_dir_all(at).expect("remove dir");
        } else if at.symlink_metadata().is_ok() {
            std::fs::remove_file(at).expect("remove");
        }
        std::fs::create_dir_all(at.parent().expect("parent")).expect("mkdir");
        std::os::unix::fs::symlink(target, at).expect("symlink");
    }

    /// The run failed naming `at` as a link, and nothing was written through it.
    #[track_caller]
    fn refused(&self, output: &Output, at: &Path, env: &TestEnv) -> String {
        let stderr = text(&output.stderr);
        assert!(!output.status.success(), "{}: {stderr}", at.display());
        assert!(
            stderr.contains(&format!("{} is a symbolic link", at.display())),
            "{stderr}"
        );
        assert_eq!(
            std::fs::read_to_string(&self.victim).expect("victim"),
            "precious\n"
        );
        assert_eq!(
            std::fs::read_dir(&self.elsewhere)
                .expect("elsewhere")
                .count(),
            0,
            "nothing was written through {}",
            at.display()
        );
        let error: Vec<&str> = stderr
            .lines()
            .filter(|l| {
                l.starts_with("error") || l.starts_with("  caused by") || l.starts_with('[')
            })
            .collect();
        crate::common::scrub_short_ids(&error.join("\n"), env)
    }
}

#[test]
fn no_write_in_a_store_an_output_directory_or_a_cache_follows_a_link() {
    let (world, old, _) = world_with_releases();
    let env = &world.env;
    let planted = Planted::new(env);
    let mut out = String::new();
    stage_ok(env, "dist/old", "staged");

    // The lease of a local store.
    let lease = env.path("staged/.rockbuild-lease");
    planted.link(&lease, &planted.victim);
    let run = output(&mut rockbuild(env, &stage_args("dist/new", "staged")));
    out.push_str(&format!(
        "## store lease\n{}\n",
        planted.refused(&run, &lease, env)
    ));
    std::fs::remove_file(&lease).expect("remove");

    // A project directory of the store.
    let project = env.path("staged/torch");
    planted.link(&project, &planted.elsewhere);
    let run = output(&mut rockbuild(env, &stage_args("dist/new", "staged")));
    // The objects of the project are refused in parallel: how many is not fixed.
    let refused = planted.refused(&run, &project, env);
    let count = refused
        .split_once(" transfer(s) failed")
        .and_then(|(head, _)| head.rsplit(' ').next())
        .expect("a transfer error");
    out.push_str(&format!(
        "## store directory\n{}\n",
        refused.replacen(&format!("{count} transfer(s)"), "[N] transfer(s)", 1)
    ));
    std::fs::remove_file(&project).expect("remove");

    // The lock of a checkout root, and a lock file of the mirror cache.
    let stack = StackWorld::new(env);
    let checkout = |root: &str| {
        let mut command = rockbuild(
            env,
            &[
                "checkout",
                "--root-checkout-dir",
                root,
                "--project",
                "vision",
                "--no-hipify",
            ],
        );
        command.arg("--config").arg(&stack.config);
        command
    };
    let root_lock = env.path("ws/.rockbuild-checkout.lock");
    planted.link(&root_lock, &planted.victim);
    out.push_str(&format!(
        "## checkout root lock\n{}\n",
        planted.refused(&output(&mut checkout("ws")), &root_lock, env)
    ));
    succeeded(&output(&mut checkout("first")));
    let cache_lock = walkdir::WalkDir::new(env.path("rockbuild-cache"))
        .into_iter()
        .filter_map(Result::ok)
        .find(|e| e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "lock"))
        .expect("a lock file in the mirror cache")
        .into_path();
    planted.link(&cache_lock, &planted.victim);
    out.push_str(&format!(
        "## mirror cache lock\n{}\n",
        planted.refused(&output(&mut checkout("second")), &cache_lock, env)
    ));

    // The log directory of an output directory.
    let logs = env.path("out/logs");
    planted.link(&logs, &planted.elsewhere);
    let server = http::serve(&crate::common::sdk::sdk_index(
        "7.10.0a20251124",
        &["gfx906", "gfx1030"],
    ));
    let index = format!("{}simple/", server.url());
    let run = output(&mut rockbuild(
        env,
        &["install-rocm", "--output-dir", "out", "--index-url", &index],
    ));
    out.push_str(&format!(
        "## output directory logs\n{}\n",
        planted.refused(&run, &logs, env)
    ));
    drop(old);
    settings(env).bind(|| insta::assert_snapshot!("no_write_follows_a_link", out));
}

#[test]
fn published_files_are_world_readable_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let (world, old, _) = world_with_releases();
    let env = &world.env;
    // A CI job's restrictive umask.
    let mut command = env.command("sh");
    command
        .args(["-c", "umask 077 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_rockbuild"))
        .args(stage_args("dist/old", "staged"));
    succeeded(&output(&mut command));
    let mut checked = 0;
    for entry in walkdir::WalkDir::new(env.path("staged")) {
        let entry = entry.expect("entry");
        let mode = entry.metadata().expect("metadata").permissions().mode() & 0o777;
        let wanted = if entry.file_type().is_dir() {
            0o755
        } else {
            0o644
        };
        assert_eq!(mode, wanted, "{}: {mode:o}", entry.path().display());
        checked += 1;
    }
    // The root, the root pages, and per project a directory, two pages, a wheel, a sidecar.
    assert_eq!(checked, 3 + 5 * old.len());
}

/// torch's METADATA as an attacker would edit it in a store: a dependency added, the triton
/// pin dropped.
fn tampered_metadata(original: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(original);
    let mut edited: String = text
        .lines()
        .filter(|line| !line.starts_with("Requires-Dist: triton"))
        .map(|line| format!("{line}\n"))
        .collect();
    edited.insert_str(
        edited.find("Requires-Python").unwrap_or(0),
        "Requires-Dist: evil-pkg>=0\n",
    );
    edited.into_bytes()
}

#[test]
fn a_sidecar_is_its_wheels_metadata_never_the_stores() {
    let (mut world, old, _) = world_with_releases();
    let env = &world.env;
    let venv = Venv::create(env, &env.path("pip-venv"));
    stage_ok(env, "dist/old", "staged");
    let torch = &old[0];
    let torch_name = torch.file_name().and_then(|f| f.to_str()).expect("name");
    let sidecar = env.path(&format!("staged/torch/{torch_name}.metadata"));
    let tamper = || {
        std::fs::write(&sidecar, tampered_metadata(&wheel_metadata(torch))).expect("tamper");
    };

    // `index` of the staging prefix: the sidecar is put back, with a warning naming it.
    tamper();
    let index = output(&mut rockbuild(env, &["index", "staged"]));
    succeeded(&index);
    assert!(
        text(&index.stderr).contains(&format!(
            "torch/{torch_name}.metadata: the stored sidecar is not the METADATA of its wheel"
        )),
        "{}",
        text(&index.stderr)
    );
    pages_list_exactly(&env.path("staged"), &old);

    // promote from a staging prefix whose sidecar was edited after its last index: the
    // release gets the wheel's METADATA, and pip resolves the set without evil-pkg.
    tamper();
    std::fs::write(
        env.path("waivers.yaml"),
        "waivers:\n  - wheel: \"*\"\n    owner: ci@example.com\n    reason: no tests here\n    \
         expires: 2099-12-31\n",
    )
    .expect("waivers");
    succeeded(&output(&mut rockbuild(
        env,
        &[
            "promote",
            "--from",
            "staged",
            "--to",
            "release",
            "--waiver",
            "waivers.yaml",
        ],
    )));
    pages_list_exactly(&env.path("release"), &old);
    let server = http::serve(&env.path("release"));
    assert_eq!(
        pip_resolves(env, &venv, &server.url(), "release"),
        resolved(0)
    );

    // The same through S3 (ranged reads of the stored wheel): a staging tree with the edited
    // sidecar, as a bucket holds it; `index` puts the sidecar back.
    tamper();
    let s3 = with_s3(&mut world);
    let env = &world.env;
    copy_tree(&env.path("staged"), &s3.object_path("staging"));
    let mut index = rockbuild(env, &["index", &s3.url("staging")]);
    index.args(s3.store_args());
    let index = output(&mut index);
    succeeded(&index);
    assert!(text(&index.stderr).contains("is not the METADATA of its wheel"));
    pages_list_exactly(&s3.object_path("staging"), &old);
}

#[test]
fn the_bytes_uploaded_are_the_bytes_verified() {
    let (mut world, old, _) = world_with_releases();
    // A failing wheel of the same name: torch without its GPU code.
    let failing = WheelBuilder::new("torch", &versions(0).0)
        .file_from("torch/lib/libtorch_hip.so", &cpu_library(None))
        .requires(&format!("triton=={}", versions(0).1))
        .build(&world.env.path("dist/failing"));
    let swap = |env: &TestEnv| {
        // Replaced as a build script or another job would: a new file renamed over the name.
        let target = env
            .path("dist/old")
            .join(failing.file_name().expect("name"));
        let temp = env.path("dist/old/.swap");
        std::fs::copy(&failing, &temp).expect("copy");
        std::fs::rename(&temp, &target).expect("rename");
    };
    let verified = std::fs::read(&old[0]).expect("the verified wheel");
    let s3 = with_s3(&mut world);
    let env = &world.env;
    for (title, to, stored) in [
        ("local", "staged".to_string(), env.path("staged/torch")),
        ("s3", s3.url("staging"), s3.object_path("staging/torch")),
    ] {
        let mut args = stage_args("dist/old", &to);
        let store_args = s3.store_args();
        if title == "s3" {
            args.extend(store_args.iter().map(String::as_str));
        }
        let held = Held::start(env, &args, "transfer:0", &format!("go-{title}"));
        swap(env);
        let output = held.release();
        assert_eq!(
            output.status.code(),
            Some(5),
            "{title}: {}",
            text(&output.stderr)
        );
        assert!(
            text(&output.stderr).contains("the file changed since it was verified"),
            "{title}: {}",
            text(&output.stderr)
        );
        let torch_name = old[0].file_name().expect("name");
        assert!(
            !stored.join(torch_name).exists(),
            "{title}: the failing wheel was never stored"
        );
        // Put the verified wheel back for the next store.
        std::fs::write(&old[0], &verified).expect("restore");
    }
}

#[test]
fn a_published_distribution_is_never_shadowed_by_another_spelling() {
    let (world, old, _) = world_with_releases();
    let env = &world.env;
    stage_ok(env, "dist/old", "staged");
    let (torch, triton, _) = versions(0);
    let mut out = String::new();
    for (title, name, version) in [
        (
            "a zero-padded version",
            "torch",
            "02.10.00+rocm7.13.0".to_string(),
        ),
        ("a `v` before the version", "torch", format!("v{torch}")),
        ("another spelling of the name", "Torch", torch.clone()),
    ] {
        let dir = env.path(&format!("dist/{}", title.replace(' ', "-")));
        let shadow = WheelBuilder::new(name, &torch)
            .file_name_version(&version)
            .file_from(
                "torch/lib/libtorch_hip.so",
                &hip_library(&["gfx906", "gfx1030"]),
            )
            .file("torch/shadow.py", "shadow = True\n")
            .requires(&format!("triton=={triton}"))
            .build(&dir);
        // The rest of the set, as staged already.
        for other in &old[1..] {
            std::fs::copy(other, dir.join(other.file_name().expect("name"))).expect("copy");
        }
        let input = dir.display().to_string();
        let run = output(&mut rockbuild(env, &stage_args(&input, "staged")));
        assert_eq!(run.status.code(), Some(6), "{title}: {}", text(&run.stderr));
        let file = shadow.file_name().expect("name");
        assert!(
            !env.path("staged/torch").join(file).exists(),
            "{title}: nothing stored"
        );
        let stderr = text(&run.stderr);
        let error: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("error") || l.starts_with("  - "))
            .collect();
        out.push_str(&format!("## {title}\n{}\n", error.join("\n")));
    }
    pages_list_exactly(&env.path("staged"), &old);

    // One set holding both spellings is refused by verify.
    let both = env.path("dist/both");
    copy_tree(&env.path("dist/old"), &both);
    std::fs::copy(
        &old[0],
        both.join(
            old[0]
                .file_name()
                .and_then(|f| f.to_str())
                .expect("name")
                .replace("2.10.0+", "2.10.00+"),
        ),
    )
    .expect("copy");
    let run = output(&mut rockbuild(
        env,
        &["verify", "--targets", TARGETS, &both.display().to_string()],
    ));
    assert_eq!(run.status.code(), Some(5), "{}", text(&run.stderr));
    assert!(
        text(&run.stderr).contains("appears more than once"),
        "{}",
        text(&run.stderr)
    );
    settings(env).bind(|| insta::assert_snapshot!("shadowing_spellings_refused", out));
}
