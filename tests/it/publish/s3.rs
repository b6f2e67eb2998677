//! Stage and promote on the embedded S3 server: multipart copies, refused writes, interrupted
//! promotions.

use super::*;

/// Copies a staged tree's objects (not its pages) into an S3 prefix behind the server's back,
/// as another upload tool would (no checksum metadata).
fn plant_tree(server: &S3Server, local: &Path, prefix: &str) {
    for entry in walkdir::WalkDir::new(local) {
        let entry = entry.expect("walk");
        let relative = entry
            .path()
            .strip_prefix(local)
            .expect("prefix")
            .to_str()
            .expect("utf-8")
            .to_string();
        if entry.file_type().is_file()
            && !relative.ends_with("index.html")
            && !relative.ends_with("index.json")
        {
            server.plant(
                &format!("{prefix}/{relative}"),
                &std::fs::read(entry.path()).expect("read"),
            );
        }
    }
}

fn s3_env(world: &mut World, server: &S3Server) {
    for (key, value) in server.env() {
        world.env.set(key, value);
    }
}

#[test]
fn s3_index_promotion_with_multipart_copies_and_no_overwrite() {
    let mut world = World::new();
    let server = S3Server::start(&world.env.path("s3"));
    s3_env(&mut world, &server);
    let s3 = server.store_args();
    // A 12 MiB torch wheel: above the 1 MiB threshold, so promotion copies it with
    // UploadPartCopy in 5 MiB parts.
    let set = world.build_set("rocm7.0.0", 12 << 20);

    // Smoke the set from a local copy: the report names the bytes, wherever they are stored.
    let local = world.env.path("local-staged");
    world.stage_by_hand(&local, &set);
    let web = http::serve(&local);
    world.smoke(&web.url(), "smoke.json").success();

    // The same objects in an S3 staging prefix, uploaded by another tool (no checksum
    // metadata): `rockbuild index` reads their bytes for the hashes.
    plant_tree(&server, &local, "staging");
    world
        .env
        .rockbuild()
        .args(["index", &server.url("staging")])
        .args(&s3)
        .assert()
        .success();
    let staged_page =
        std::fs::read_to_string(server.object_path("staging/rock-torch/index.html")).expect("page");
    assert!(staged_page.contains(&sha256_file(&set[0])), "{staged_page}");

    let mut extra: Vec<&str> = vec![
        "--test-report",
        "smoke.json",
        "--multipart-threshold",
        "1048576",
    ];
    extra.extend(s3.iter().map(String::as_str));
    world
        .promote(&server.url("staging"), &server.url("release"), &extra)
        .success();
    let torch_key = format!("release/rock-torch/{TORCH}");
    assert_eq!(
        sha256_file(&server.object_path(&torch_key)),
        sha256_file(&set[0]),
        "the multipart copy is byte-identical"
    );
    assert!(
        server
            .object_path(&format!("{torch_key}.metadata"))
            .exists()
    );

    // pip and uv install from the release prefix: its objects, served as files.
    let mirror = world.env.path("release-mirror");
    copy_tree(&server.object_path("release"), &mirror);
    let web = http::serve(&mirror);
    let requirements = hashed_requirements(&[
        ("rock-torch", "1.0+rocm7.0.0", &set[0]),
        ("rock-vision", "0.1+rocm7.0.0", &set[1]),
    ]);
    install_with_pip_and_uv(&world.env, &web.url(), &requirements, "s3-release");

    // A released object with other bytes is never replaced.
    let vision_key = format!("release2/rock-vision/{VISION}");
    server.plant(&vision_key, b"not the staged wheel");
    let conflict = world
        .promote(&server.url("staging"), &server.url("release2"), &extra)
        .code(6);
    assert!(
        stderr(&conflict).contains(&format!(
            "'rock-vision/{VISION}' is already published with sha256"
        )),
        "{}",
        stderr(&conflict)
    );
    assert_eq!(
        std::fs::read(server.object_path(&vision_key)).expect("object"),
        b"not the staged wheel"
    );
    assert!(
        !server
            .object_path(&format!("release2/rock-torch/{TORCH}"))
            .exists()
    );
}

#[test]
fn a_promotion_killed_between_copies_and_index_leaves_the_index_and_a_rerun_completes() {
    let mut world = World::new();
    let server = S3Server::start(&world.env.path("s3"));
    s3_env(&mut world, &server);
    let s3 = server.store_args();

    // Release 1 is published normally.
    let first = world.build_set("rocm7.0.0", 0);
    let second = world.build_set("rocm7.1.0", 0);
    for (name, set) in [("one", &first), ("two", &second)] {
        let local = world.env.path(&format!("{name}-local"));
        world.stage_by_hand(&local, set);
        let web = http::serve(&local);
        world.smoke(&web.url(), &format!("{name}.json")).success();
        plant_tree(&server, &local, &format!("staging-{name}"));
        world
            .env
            .rockbuild()
            .args(["index", &server.url(&format!("staging-{name}"))])
            .args(&s3)
            .assert()
            .success();
    }
    let release = server.url("release");
    let with_s3 = |report: &'static str| -> Vec<&str> {
        let mut extra = vec!["--test-report", report];
        extra.extend(s3.iter().map(String::as_str));
        extra
    };
    world
        .promote(&server.url("staging-one"), &release, &with_s3("one.json"))
        .success();
    let pages = [
        "release/index.html",
        "release/index.json",
        "release/rock-torch/index.html",
        "release/rock-vision/index.json",
    ];
    let before: Vec<Vec<u8>> = pages
        .iter()
        .map(|p| std::fs::read(server.object_path(p)).expect("page"))
        .collect();

    // Release 2: the server holds the first index page write; the run is killed right there,
    // after every wheel was copied.
    server.set_write_rule("release/rock-torch/index.html", WriteRule::Hold);
    let mut command = world.env.command(env!("CARGO_BIN_EXE_rockbuild"));
    command
        .args([
            "promote",
            "--from",
            &server.url("staging-two"),
            "--to",
            &release,
            "--test-report",
            "two.json",
        ])
        .args(&s3)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = command.spawn().expect("start promote");
    let held = server.wait_for_held_write(Duration::from_secs(120));
    child.kill().expect("kill");
    let status = child.wait().expect("wait");
    server.clear_write_rule();
    assert_eq!(held.as_deref(), Some("release/rock-torch/index.html"));
    assert!(!status.success());
    let torch2 = "release/rock-torch/rock_torch-1.0+rocm7.1.0-py3-none-any.whl";
    assert_eq!(
        sha256_file(&server.object_path(torch2)),
        sha256_file(&second[0]),
        "the copies were done"
    );
    let after: Vec<Vec<u8>> = pages
        .iter()
        .map(|p| std::fs::read(server.object_path(p)).expect("page"))
        .collect();
    assert_eq!(before, after, "the published index is unchanged");
    let page = String::from_utf8(after[2].clone()).expect("utf-8");
    assert!(!page.contains("rocm7.1.0"), "{page}");

    // The re-run skips the copies and writes the index.
    let rerun = world
        .promote(&server.url("staging-two"), &release, &with_s3("two.json"))
        .success();
    assert!(
        stderr(&rerun).contains("(0 objects copied, 0 B; 4 already there)"),
        "{}",
        stderr(&rerun)
    );
    let page =
        std::fs::read_to_string(server.object_path("release/rock-torch/index.html")).expect("page");
    assert!(
        page.contains("rock_torch-1.0%2Brocm7.0.0") && page.contains("rock_torch-1.0%2Brocm7.1.0"),
        "{page}"
    );
}

#[test]
fn s3_stage_survives_a_refused_put_then_promotes_as_rc_from_s3_to_s3() {
    let mut world = gpu_world();
    let server = S3Server::start(&world.env.path("s3"));
    s3_env(&mut world, &server);
    let s3 = server.store_args();
    let s3_args: Vec<&str> = s3.iter().map(String::as_str).collect();
    let first = gpu_set(&world.env.path("one"), "7.13.0a20260430");
    let second = gpu_set(&world.env.path("two"), "7.13.0a20260501");
    let staging = server.url("staging");

    stage(&world, "one", &staging, &s3_args).success();
    let mirror = world.env.path("mirror-one");
    copy_tree(&server.object_path("staging"), &mirror);
    let web = http::serve(&mirror);
    assert_eq!(
        install_and_import(&world.env, &web.url(), &first, "s3-one"),
        vec!["2.10.0a0+rocm7.13.0a20260430 0.25.0a0+rocm7.13.0a20260430 3.5.0+git1a2b3c4d"; 2]
    );
    let pages = [
        "staging/index.html",
        "staging/index.json",
        "staging/torch/index.html",
        "staging/torchvision/index.json",
    ];
    let read_pages = || -> Vec<Vec<u8>> {
        pages
            .iter()
            .map(|p| std::fs::read(server.object_path(p)).expect("page"))
            .collect()
    };
    let before = read_pages();

    // The server refuses the upload of one wheel: the stage fails (exit 1) after the other
    // uploads, and the published pages are the old ones.
    let vision = "torchvision-0.25.0a0+rocm7.13.0a20260501-cp311-cp311-linux_x86_64.whl";
    server.set_write_rule(&format!("staging/torchvision/{vision}"), WriteRule::Deny);
    let failed = stage(&world, "two", &staging, &s3_args).code(1);
    server.clear_write_rule();
    let text = stderr(&failed);
    assert!(
        text.contains(vision) && text.contains("the index pages were not changed"),
        "{text}"
    );
    assert_eq!(read_pages(), before, "the published index is unchanged");
    assert!(
        !String::from_utf8_lossy(&read_pages()[2]).contains("rocm7.13.0a20260501"),
        "the new torch is not listed"
    );

    // The re-run uploads what is missing and writes the index.
    let rerun = stage(&world, "two", &staging, &s3_args).success();
    assert!(
        stderr(&rerun).contains("already there)"),
        "{}",
        stderr(&rerun)
    );
    let page =
        std::fs::read_to_string(server.object_path("staging/torch/index.html")).expect("page");
    assert!(
        page.contains("rocm7.13.0a20260430") && page.contains("rocm7.13.0a20260501"),
        "{page}"
    );
    let mirror = world.env.path("mirror-two");
    copy_tree(&server.object_path("staging"), &mirror);
    let web = http::serve(&mirror);
    assert_eq!(
        install_and_import(&world.env, &web.url(), &second, "s3-two"),
        vec!["2.10.0a0+rocm7.13.0a20260501 0.25.0a0+rocm7.13.0a20260501 3.5.0+git1a2b3c4d"; 2]
    );

    // A candidate prefix holding one build, smoke-tested, promoted S3 to S3 as rc1 (its
    // wheels pin no SDK, so their public versions move on request): the tested wheels are
    // downloaded (and checked against the report), rewritten, uploaded.
    let candidates = server.url("candidates");
    stage(&world, "two", &candidates, &s3_args).success();
    let mirror = world.env.path("mirror-candidates");
    copy_tree(&server.object_path("candidates"), &mirror);
    let web = http::serve(&mirror);
    world.smoke(&web.url(), "candidates.json").success();
    let mut extra = vec![
        "--test-report",
        "candidates.json",
        "--rewrite-version",
        "rc",
        "--rewrite-public-version",
    ];
    extra.extend(&s3_args);
    let promoted = world
        .promote(&candidates, &server.url("rc"), &extra)
        .success();
    assert!(
        stderr(&promoted).contains("promoted 3 wheels as rc1 (2 rewritten, 1 as they were;"),
        "{}",
        stderr(&promoted)
    );
    let mirror = world.env.path("mirror-rc");
    copy_tree(&server.object_path("rc"), &mirror);
    let rc = wheels_under(&mirror);
    let web = http::serve(&mirror);
    assert_eq!(
        install_and_import(&world.env, &web.url(), &rc, "s3-rc"),
        vec!["2.10.0rc1+rocm7.13.0a20260501 0.25.0rc1+rocm7.13.0a20260501 3.5.0+git1a2b3c4d"; 2]
    );
}

/// Staging to S3 with no region anywhere (no flag, no AWS_REGION, no profile; instance
/// metadata unreachable): rockbuild signs for us-east-1 and prints none of the SDK's
/// warnings and debug structures. Without credentials, the error says so in words.
#[test]
fn s3_stage_without_a_region_prints_errors_only_in_words() {
    let mut world = gpu_world();
    let server = S3Server::start(&world.env.path("s3"));
    for (key, value) in server.env() {
        if !matches!(key, "AWS_REGION" | "AWS_EC2_METADATA_DISABLED") {
            world.env.set(key, value);
        }
    }
    // Instance metadata where nothing listens: the chains end there, quickly and always alike.
    world
        .env
        .set("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1");
    let s3 = server.store_args();
    let s3_args: Vec<&str> = s3.iter().map(String::as_str).collect();
    gpu_set(&world.env.path("one"), "7.13.0a20260430");
    let staged = stage(&world, "one", &server.url("staging"), &s3_args).success();
    let text = stderr(&staged);
    for noise in ["WARN", "IMDS", "{", "Error("] {
        assert!(!text.contains(noise), "`{noise}` in:\n{text}");
    }
    assert!(server.object_path("staging/torch/index.html").is_file());

    world.env.set("AWS_ACCESS_KEY_ID", "");
    world.env.set("AWS_SECRET_ACCESS_KEY", "");
    let refused = stage(&world, "one", &server.url("staging"), &s3_args).code(2);
    let text = stderr(&refused);
    let error = &text[text.find("error: ").expect("an error")..];
    let error = error.replace(&server.endpoint, "http://[S3]");
    insta::assert_snapshot!("s3_stage_without_credentials", error);
}
