//! Staging real GPU wheels: verified first, uploaded with their sidecars, rewritten to rc and
//! final on promotion.

use super::*;

#[test]
fn stage_then_rewrite_to_rc_then_final_and_install_each_with_pip_and_uv() {
    let world = gpu_world();
    let set = gpu_set(&world.env.path("dist"), "7.13.0a20260430");

    // --dry-run verifies and lists every upload and page; it writes nothing.
    let dry = stage(&world, "dist", "staged", &["--dry-run"]).success();
    snapshot::settings(&world.env).bind(|| insta::assert_snapshot!("stage_dry_run", stdout(&dry)));
    let json = stage(&world, "dist", "staged", &["--dry-run", "--json"]).success();
    snapshot::settings(&world.env)
        .bind(|| insta::assert_snapshot!("stage_dry_run_json", stdout(&json)));
    assert!(
        !world.env.path("staged").exists(),
        "a dry run writes nothing"
    );

    let staged_run = stage(&world, "dist", "staged", &[]).success();
    let text = stderr(&staged_run);
    assert!(
        text.contains("staged 3 wheels (6 objects uploaded,") && text.contains("0 already there"),
        "{text}"
    );
    let staged = world.env.path("staged");
    for wheel in &set {
        let file = wheel.file_name().and_then(|f| f.to_str()).expect("name");
        let project = file.split('-').next().expect("name");
        let stored = staged.join(project).join(file);
        assert_eq!(sha256_file(&stored), sha256_file(wheel), "{file}");
        assert_eq!(
            std::fs::read(staged.join(project).join(format!("{file}.metadata"))).expect("sidecar"),
            wheel_metadata(wheel),
            "the PEP 658 sidecar is the wheel's METADATA, byte for byte"
        );
    }
    let page = std::fs::read_to_string(staged.join("torch/index.html")).expect("page");
    assert!(
        page.contains(&format!(
            "torch-2.10.0a0%2Brocm7.13.0a20260430-cp311-cp311-linux_x86_64.whl#sha256={}",
            sha256_file(&set[0])
        )) && page.contains("data-dist-info-metadata=\"sha256="),
        "{page}"
    );

    // The same bytes again: nothing uploaded, the pages rewritten.
    let again = stage(&world, "dist", "staged", &[]).success();
    assert!(
        stderr(&again).contains("(0 objects uploaded, 0 B; 6 already there)"),
        "{}",
        stderr(&again)
    );

    let web = http::serve(&staged);
    assert_eq!(
        install_and_import(&world.env, &web.url(), &set, "staged"),
        vec!["2.10.0a0+rocm7.13.0a20260430 0.25.0a0+rocm7.13.0a20260430 3.5.0+git1a2b3c4d"; 2]
    );
    world.smoke(&web.url(), "nightly.json").success();

    // These wheels pin no ROCm SDK, so no label moves, and the reference's rule keeps a
    // labelled public version: nothing would change, and the refusal names the flag.
    let kept = world
        .promote(
            "staged",
            "rc",
            &["--test-report", "nightly.json", "--rewrite-version", "rc"],
        )
        .code(2);
    assert!(
        stderr(&kept).contains("nothing to rewrite: no wheel of the set changes version (torch 2.10.0a0+rocm7.13.0a20260430, torchvision 0.25.0a0+rocm7.13.0a20260430, triton 3.5.0+git1a2b3c4d)")
            && stderr(&kept).contains("--rewrite-public-version"),
        "{}",
        stderr(&kept)
    );
    // Nightly → rc1 on request (--rewrite-public-version): torch and torchvision are
    // rewritten (torchvision's pin follows torch), triton is final already and goes as it is.
    let dry = world
        .promote(
            "staged",
            "rc",
            &[
                "--test-report",
                "nightly.json",
                "--rewrite-version",
                "rc",
                "--rewrite-public-version",
                "--dry-run",
            ],
        )
        .success();
    snapshot::settings(&world.env)
        .bind(|| insta::assert_snapshot!("promote_rewrite_dry_run", stdout(&dry)));
    assert!(!world.env.path("rc").exists(), "a dry run writes nothing");
    let promoted = world
        .promote(
            "staged",
            "rc",
            &[
                "--test-report",
                "nightly.json",
                "--rewrite-version",
                "rc",
                "--rewrite-public-version",
            ],
        )
        .success();
    let text = stderr(&promoted);
    assert!(
        text.contains("rewrote 2 wheels to ") && !text.contains("would rewrite"),
        "{text}"
    );
    let rc = wheels_under(&world.env.path("rc"));
    let names: Vec<String> = rc
        .iter()
        .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "torch-2.10.0rc1+rocm7.13.0a20260430-cp311-cp311-linux_x86_64.whl",
            "torchvision-0.25.0rc1+rocm7.13.0a20260430-cp311-cp311-linux_x86_64.whl",
            "triton-3.5.0+git1a2b3c4d-cp311-cp311-linux_x86_64.whl",
        ]
    );
    assert_eq!(
        sha256_file(&rc[2]),
        sha256_file(&set[1]),
        "triton is copied as it is"
    );
    // The rewritten wheels pass `rockbuild verify` on their own.
    world
        .env
        .rockbuild()
        .args([
            "verify",
            "--config",
            "stack.yaml",
            "--targets",
            "gfx906,gfx1030",
        ])
        .args(&rc)
        .assert()
        .success();
    let web = http::serve(&world.env.path("rc"));
    assert_eq!(
        install_and_import(&world.env, &web.url(), &rc, "rc"),
        vec!["2.10.0rc1+rocm7.13.0a20260430 0.25.0rc1+rocm7.13.0a20260430 3.5.0+git1a2b3c4d"; 2]
    );
    // The rc set is tested in its turn, then goes final.
    world.smoke(&web.url(), "rc.json").success();
    world
        .promote(
            "rc",
            "release",
            &[
                "--test-report",
                "rc.json",
                "--rewrite-version",
                "final",
                "--rewrite-public-version",
            ],
        )
        .success();
    let release = wheels_under(&world.env.path("release"));
    let web = http::serve(&world.env.path("release"));
    assert_eq!(
        install_and_import(&world.env, &web.url(), &release, "final"),
        vec!["2.10.0+rocm7.13.0a20260430 0.25.0+rocm7.13.0a20260430 3.5.0+git1a2b3c4d"; 2]
    );

    // Final already: nothing to rewrite, a usage error that writes nothing.
    world.smoke(&web.url(), "final.json").success();
    let none = world
        .promote(
            "release",
            "again",
            &["--test-report", "final.json", "--rewrite-version", "rc"],
        )
        .code(2);
    assert!(
        stderr(&none).contains("nothing to rewrite: no wheel of the set changes version"),
        "{}",
        stderr(&none)
    );
    assert!(!world.env.path("again").exists());
}

#[test]
fn stage_refuses_bad_wheels_and_unknown_families_and_uploads_nothing() {
    use crate::common::wheels::{WheelBuilder, hip_library};
    let world = gpu_world();
    // A family's wheels go to <to>/<family>/, checked against the family's targets.
    let set = gpu_set(&world.env.path("dist"), "7.13.0a20260430");
    world
        .env
        .rockbuild()
        .args([
            "stage",
            "--config",
            "stack.yaml",
            "--input",
            "dist",
            "--to",
            "staged",
            "--family",
            "gfx906",
        ])
        .assert()
        .success();
    let staged = world.env.path("staged");
    assert!(staged.join("gfx906/torch/index.html").exists());
    assert!(staged.join("gfx906/index.json").exists());
    // Promoting from the root instead of the family's prefix: told where the set is; nothing
    // to promote is never a pass (5).
    let empty = world.promote("staged", "release", &[]).code(5);
    let before = tree(&staged);

    let unknown = world
        .env
        .rockbuild()
        .args([
            "stage",
            "--config",
            "stack.yaml",
            "--input",
            "dist",
            "--to",
            "staged",
            "--family",
            "gfx1030",
        ])
        .assert()
        .code(2);

    // A later build with one bad wheel among good ones: verification fails (exit 5), and
    // nothing at all is uploaded, the good wheels included.
    let next = world.env.path("next");
    let good = gpu_set(&next, "7.13.0a20260501");
    std::fs::remove_file(&good[2]).expect("replace torchvision");
    WheelBuilder::new("torchvision", "0.25.0a0+rocm7.13.0a20260501")
        .file_from("torchvision/_C.so", &hip_library(&["gfx906"]))
        .requires("torch==2.10.0a0+rocm7.13.0a20260501")
        .build(&next);
    let refused = world
        .env
        .rockbuild()
        .args([
            "stage",
            "--config",
            "stack.yaml",
            "--input",
            "next",
            "--to",
            "staged",
            "--family",
            "gfx103X-all",
        ])
        .assert()
        .code(5);
    let settings = snapshot::settings(&world.env);
    settings.bind(|| {
        insta::assert_snapshot!("promote_from_a_family_root", stderr(&empty));
        insta::assert_snapshot!("stage_unknown_family", stderr(&unknown));
        insta::assert_snapshot!("stage_refused_by_verification", stderr(&refused));
    });
    let refused = stage(&world, "next", "staged/gfx906", &[]).code(5);
    let text = stderr(&refused);
    assert!(
        text.contains(
            "GPU library 'torchvision/_C.so' has no code for requested target gfx1030 (its offload bundles carry: gfx906)"
        ) && text.contains("1 of 3 wheels in "),
        "{text}"
    );

    // Every wheel fine on its own, but the lock's build record lists torchvision and the set
    // has none: a problem of the set alone, counted as such.
    let partial = world.env.path("partial");
    let good = gpu_set(&partial, "7.13.0a20260502");
    std::fs::remove_file(&good[2]).expect("drop torchvision");
    let lock = serde_json::json!({
        "schema": 1,
        "generated_by": "rockbuild test",
        "stack": "stack.yaml",
        "projects": {},
        "build": {
            "sdk_version": "7.13.0a20260502",
            "targets": ["gfx906", "gfx1030"],
            "release_type": "nightly",
            "version_suffix": "+rocm7.13.0a20260502",
            "versions": {
                "torch": "2.10.0a0+rocm7.13.0a20260502",
                "triton": TRITON_V,
                "vision": "0.25.0a0+rocm7.13.0a20260502"
            }
        }
    });
    std::fs::write(
        world.env.path("partial.lock.json"),
        serde_json::to_string_pretty(&lock).expect("json"),
    )
    .expect("write lock");
    let refused = stage(
        &world,
        "partial",
        "staged/gfx906",
        &["--lock", "partial.lock.json"],
    )
    .code(5);
    let text = stderr(&refused);
    assert!(
        text.contains("the set has no torchvision wheel")
            && text.contains("the 2 wheels in ")
            && text.contains(
                "passed one by one, but the set has 1 problem (above); nothing was uploaded to "
            )
            && !text.contains("0 of 2"),
        "{text}"
    );
    assert_eq!(
        tree(&staged),
        before,
        "nothing was uploaded, the index is unchanged"
    );
    drop(set);
}
