//! Index pages a store prefix gets, and store URLs and waivers that cannot be used.

use super::*;

#[test]
fn generated_index_installs_with_pip_and_uv_with_hashes() {
    let world = World::new();
    let set = world.build_set("rocm7.0.0", 0);
    let staged = world.env.path("staged");
    world.stage_by_hand(&staged, &set);
    // What a rewrite of the pages would write, and that a dry run writes nothing.
    let page = staged.join("rock-torch/index.html");
    std::fs::remove_file(&page).expect("remove a page");
    for (name, extra) in [
        ("index_dry_run", None),
        ("index_dry_run_json", Some("--json")),
    ] {
        let dry = world
            .env
            .rockbuild()
            .args(["index", "staged", "--dry-run"])
            .args(extra)
            .assert()
            .success();
        snapshot::settings(&world.env).bind(|| insta::assert_snapshot!(name, stdout(&dry)));
    }
    assert!(!page.exists(), "a dry run writes nothing");
    world
        .env
        .rockbuild()
        .args(["index", "staged"])
        .assert()
        .success();

    let page = std::fs::read_to_string(staged.join("rock-torch/index.html")).expect("page");
    let sha = sha256_file(&set[0]);
    assert!(
        page.contains(&format!(
            "<a href=\"rock_torch-1.0%2Brocm7.0.0-py3-none-any.whl#sha256={sha}\" data-requires-python=\"&gt;=3.8\" data-dist-info-metadata=\"sha256="
        )),
        "{page}"
    );
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(staged.join("rock-torch/index.json")).expect("json"),
    )
    .expect("parse");
    assert_eq!(json["files"][0]["hashes"]["sha256"], sha);
    assert_eq!(json["meta"]["api-version"], "1.1");
    let root = std::fs::read_to_string(staged.join("index.html")).expect("root");
    assert!(
        root.contains("<a href=\"rock-torch/\">rock-torch</a>")
            && root.contains("<a href=\"rock-vision/\">"),
        "{root}"
    );

    let server = http::serve(&staged);
    let requirements = hashed_requirements(&[
        ("rock-torch", "1.0+rocm7.0.0", &set[0]),
        ("rock-vision", "0.1+rocm7.0.0", &set[1]),
    ]);
    let (pip, uv) = install_with_pip_and_uv(&world.env, &server.url(), &requirements, "staged");
    for python_bin in [pip, uv] {
        assert_eq!(
            python(
                &world.env,
                &python_bin,
                "import rock_torch, rock_vision; print(rock_torch.__version__, rock_vision.__version__)"
            ),
            "1.0+rocm7.0.0 0.1+rocm7.0.0"
        );
    }
}

#[test]
fn bad_store_urls_and_waivers_are_usage_errors() {
    let world = World::new();
    let url = world
        .env
        .rockbuild()
        .args(["index", "https://example.com/simple/"])
        .assert()
        .code(2);
    std::fs::write(
        world.env.path("w.yaml"),
        "waivers:\n  - wheel: x\n    owner: me\n    reason: r\n    expires: soon\n",
    )
    .expect("waiver");
    let waiver = world.promote("a", "b", &["--waiver", "w.yaml"]).code(2);
    let same = world.promote("a", "a", &[]).code(2);
    let text = [url, waiver, same].iter().map(stderr).collect::<Vec<_>>();
    snapshot::settings(&world.env)
        .bind(|| insta::assert_snapshot!("usage_errors", text.join("\n")));
}
