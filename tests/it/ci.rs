//! `rockbuild matrix` as a workflow step runs it: JSON on stdout, the same values as step
//! outputs in `$GITHUB_OUTPUT`, notes as annotations; bad tables refused with `file:line`.

use crate::common::TestEnv;

#[test]
fn matrix_writes_step_outputs_that_match_stdout() {
    let mut env = TestEnv::new();
    let outputs = env.path("github_output");
    std::fs::write(&outputs, "earlier=step\n").expect("seed");
    env.set("GITHUB_ACTIONS", "true");
    env.set("GITHUB_OUTPUT", outputs.to_str().expect("utf-8"));
    // An optional workflow input that was left empty arrives as "": the table's default.
    env.set("ROCKBUILD_PYTORCH_REF", "");
    let run = env
        .rockbuild()
        .args(["matrix", "--json", "--release-type", "nightly"])
        .args([
            "--amdgpu-families",
            "gfx110X-all;gfx900",
            "--python-version",
            "3.12",
        ])
        .assert()
        .success();
    let stdout: serde_json::Value =
        serde_json::from_slice(&run.get_output().stdout).expect("stdout is JSON");
    let written = std::fs::read_to_string(&outputs).expect("outputs");
    let mut lines = written.lines();
    assert_eq!(lines.next(), Some("earlier=step"), "appended, not replaced");
    let values: std::collections::BTreeMap<&str, &str> = lines
        .map(|line| line.split_once('=').expect("name=value"))
        .collect();
    let matrix: serde_json::Value = serde_json::from_str(values["matrix"]).expect("matrix");
    assert_eq!(matrix, stdout);
    let refs: serde_json::Value = serde_json::from_str(values["refs"]).expect("refs");
    assert_eq!(refs, stdout["refs"]);
    assert_eq!(values["release_type"], "nightly");
    assert_eq!(values["publish"], "true");
    assert_eq!(values["sccache_prefix"], "nightly/linux/");
    // The release type's `windows:` column: both families have a windows entry, so the
    // Windows chain workflow is called once per ref and family.
    assert_eq!(values["windows"], "true");
    assert_eq!(values["windows_sccache_prefix"], "nightly/windows/");
    let windows: serde_json::Value =
        serde_json::from_str(values["windows_chains"]).expect("windows chains");
    let rows: Vec<(&str, &str, &str)> = windows["include"]
        .as_array()
        .expect("include")
        .iter()
        .map(|row| {
            (
                row["pytorch_ref"].as_str().expect("ref"),
                row["family"].as_str().expect("family"),
                row["build_runs_on"].as_str().expect("runner"),
            )
        })
        .filter(|(r, _, _)| *r == "nightly")
        .collect();
    assert_eq!(
        rows,
        [
            ("nightly", "gfx110X-all", "azure-windows-scale-rocm"),
            ("nightly", "gfx900", "azure-windows-scale-rocm")
        ]
    );
    let stderr = String::from_utf8_lossy(&run.get_output().stderr);
    let notices: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("::notice::"))
        .collect();
    insta::assert_snapshot!(notices.join("\n"), @r"
    ::notice::gfx900: no linux test-runner in the family table: built and staged, never tested, so never promoted
    ::notice::gfx900: no windows test-runner in the family table: built and staged, never tested, so never promoted
    ");
}

#[test]
fn matrix_refuses_bad_input_with_its_location() {
    let env = TestEnv::new();
    let table = env.path("releases.yaml");
    std::fs::write(
        &table,
        "schema: 1\nrelease-types:\n  nightly:\n    python: [\"3.12\"]\n    pytorch-refs: [nightly]\n    families: {only: [gfx942]}\n    publish: false\n    cache: nightly\n",
    )
    .expect("write");
    let cases = [
        vec!["--releases", "releases.yaml"],
        vec!["--amdgpu-families", "gfx94"],
        vec!["--amdgpu-families", "gfx1100"],
        vec!["--pytorch-ref", "release/2.12;rm -rf"],
        vec!["--python-version", "3.9"],
    ];
    let mut errors = Vec::new();
    for args in cases {
        let run = env
            .rockbuild()
            .args(["matrix", "--release-type", "nightly"])
            .args(&args)
            .assert()
            .code(2);
        assert!(run.get_output().stdout.is_empty(), "nothing on stdout");
        errors.push(format!(
            "$ rockbuild matrix --release-type nightly {}\n{}",
            args.join(" "),
            String::from_utf8_lossy(&run.get_output().stderr).trim_end()
        ));
    }
    let root = env.root().to_str().expect("utf-8");
    insta::assert_snapshot!(errors.join("\n\n").replace(root, "[TMP]"));
}

/// `ci generate` writes the four workflows, `--check` names every file that differs (exit 5)
/// and writes nothing (a directory that does not exist is a usage error, exit 2), and a rewrite removes generated files the plan no longer has while
/// leaving the repository's own workflows alone.
#[test]
fn ci_generate_writes_checks_and_names_stale_files() {
    let env = TestEnv::new();
    let dir = env.path("wf");
    let generate = |extra: &[&str]| {
        let mut command = env.rockbuild();
        command
            .args(["ci", "generate", "--output-dir"])
            .arg(&dir)
            .args(extra);
        command.assert()
    };
    let stderr = |run: &assert_cmd::assert::Assert| {
        String::from_utf8_lossy(&run.get_output().stderr)
            .replace(&env.root().display().to_string(), "[TMP]")
    };
    // No directory: nothing to check here (a usage error), not "every workflow differs".
    let absent = stderr(&generate(&["--check"]).code(2));
    std::fs::create_dir(&dir).expect("mkdir");
    let missing = stderr(&generate(&["--check"]).code(5));
    generate(&[]).success();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "rockbuild-chain.yml",
            "rockbuild-nightly.yml",
            "rockbuild-pr.yml",
            "rockbuild-release.yml",
            "rockbuild-windows-chain.yml"
        ]
    );
    generate(&["--check"]).success();
    // An edited file, an obsolete generated one, and a workflow of the repository's own.
    let chain = dir.join("rockbuild-chain.yml");
    let text = std::fs::read_to_string(&chain).expect("read");
    std::fs::write(
        &chain,
        text.replace("timeout-minutes: 360", "timeout-minutes: 5"),
    )
    .expect("edit");
    std::fs::write(dir.join("rockbuild-old.yml"), &text).expect("obsolete");
    std::fs::write(dir.join("lint.yml"), "name: lint\n").expect("own");
    let stale = stderr(&generate(&["--check"]).code(5));
    insta::assert_snapshot!(format!("{absent}---\n{missing}---\n{stale}"));
    generate(&[]).success();
    generate(&["--check"]).success();
    assert!(
        !dir.join("rockbuild-old.yml").exists(),
        "obsolete file kept"
    );
    assert!(
        dir.join("lint.yml").exists(),
        "the repository's own workflow removed"
    );
}

/// The nightly and release workflows take a `full-tests` dispatch input that reaches `rockbuild
/// matrix` as `ROCKBUILD_FULL_TESTS` (`--full-tests`): as GitHub passes it, `true` adds the
/// release table's full suite, `false` (a dispatch left unchecked) and `` (a scheduled run,
/// which has no inputs) do not.
#[test]
fn a_full_tests_dispatch_input_adds_the_full_suite() {
    let root = crate::common::repo_root();
    for file in ["rockbuild-nightly.yml", "rockbuild-release.yml"] {
        let text = std::fs::read_to_string(root.join("workflows").join(file)).expect("read");
        let workflow: yaml_serde::Value = yaml_serde::from_str(&text).expect("yaml");
        let input = &workflow["on"]["workflow_dispatch"]["inputs"]["full-tests"];
        assert_eq!(input["type"].as_str(), Some("boolean"), "{file}");
        assert_eq!(input["default"].as_bool(), Some(false), "{file}");
        let step = &workflow["jobs"]["matrix"]["steps"][1];
        assert_eq!(
            step["env"]["ROCKBUILD_FULL_TESTS"].as_str(),
            Some("${{ inputs.full-tests }}"),
            "{file}"
        );
    }
    let mut env = TestEnv::new();
    let mut configs = Vec::new();
    for value in ["true", "false", ""] {
        env.set("ROCKBUILD_FULL_TESTS", value);
        let run = env
            .rockbuild()
            .args(["matrix", "--json", "--release-type", "nightly"])
            .args(["--pytorch-ref", "nightly"])
            .args([
                "--amdgpu-families",
                "gfx94X-dcgpu",
                "--python-version",
                "3.12",
            ])
            .assert()
            .success();
        let matrix: serde_json::Value =
            serde_json::from_slice(&run.get_output().stdout).expect("stdout is JSON");
        configs.push(format!(
            "{value:?}: {}",
            matrix["refs"]["include"][0]["families"]["include"][0]["reports"]["include"][0]
                ["expect"]
        ));
    }
    insta::assert_snapshot!(configs.join("\n"), @r#"
    "true": "gpu-smoke=1,quick=1,default=6,distributed=3,inductor=2"
    "false": "gpu-smoke=1,quick=1"
    "": "gpu-smoke=1,quick=1"
    "#);
}

/// Without `--json`, `matrix` prints the summary for people on stdout; the step outputs still
/// get the JSON, which is what the workflows read.
#[test]
fn matrix_prints_a_summary_without_json() {
    let mut env = TestEnv::new();
    let outputs = env.path("github_output");
    env.set("GITHUB_OUTPUT", outputs.to_str().expect("utf-8"));
    let run = env
        .rockbuild()
        .args(["matrix", "--release-type", "ci"])
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&run.get_output().stdout).into_owned();
    insta::assert_snapshot!(stdout, @r"
    ref           platform  family        targets                          python  build runner               test jobs (config×shards on runner)  promote
    ------------  --------  ------------  -------------------------------  ------  -------------------------  -----------------------------------  -------
    release/2.12  linux     gfx94X-dcgpu  gfx942                           3.12    aws-linux-scale-rocm-prod  -                                    no
    release/2.12  linux     gfx110X-all   gfx1100,gfx1101,gfx1102,gfx1103  3.12    aws-linux-scale-rocm-prod  -                                    no
    release/2.12  linux     gfx1151       gfx1151                          3.12    aws-linux-scale-rocm-prod  -                                    no
    release/2.12  linux     gfx120X-all   gfx1200,gfx1201                  3.12    aws-linux-scale-rocm-prod  -                                    no
    release/2.13  linux     gfx94X-dcgpu  gfx942                           3.12    aws-linux-scale-rocm-prod  -                                    no
    release/2.13  linux     gfx110X-all   gfx1100,gfx1101,gfx1102,gfx1103  3.12    aws-linux-scale-rocm-prod  -                                    no
    release/2.13  linux     gfx1151       gfx1151                          3.12    aws-linux-scale-rocm-prod  -                                    no
    release/2.13  linux     gfx120X-all   gfx1200,gfx1201                  3.12    aws-linux-scale-rocm-prod  -                                    no
    release/2.12  windows   gfx110X-all   gfx1100,gfx1101,gfx1102,gfx1103  3.12    azure-windows-scale-rocm   -                                    no
    release/2.12  windows   gfx1151       gfx1151                          3.12    azure-windows-scale-rocm   -                                    no
    release/2.12  windows   gfx120X-all   gfx1200,gfx1201                  3.12    azure-windows-scale-rocm   -                                    no

    builds: 8 per-family, 2 multi-arch (one per ref and Python); on Windows 3 per-family, 1 multi-arch; this matrix is per-family
    ");
    let written = std::fs::read_to_string(&outputs).expect("outputs");
    let matrix = written
        .lines()
        .find_map(|l| l.strip_prefix("matrix="))
        .expect("a matrix output");
    let matrix: serde_json::Value = serde_json::from_str(matrix).expect("JSON");
    assert_eq!(matrix["release_type"], "ci");
}

/// docs/ci.md's flow in a repository of its own: `ci generate` reads the repository's
/// configs/, the generated matrix step reads them too (a runner label changed in the table is
/// what the next run uses, with nothing to regenerate), and an edit that changes the workflows
/// (a family dropped from the table, which the release workflow lists) is what `--check`
/// names.
#[test]
fn the_repositorys_tables_are_what_ci_generate_and_the_matrix_step_read() {
    let env = TestEnv::new();
    let repo = env.path("repo");
    std::fs::create_dir_all(repo.join("configs")).expect("mkdir");
    for table in ["families.yaml", "releases.yaml"] {
        std::fs::copy(
            crate::common::repo_root().join("configs").join(table),
            repo.join("configs").join(table),
        )
        .expect("copy");
    }
    let generate = |extra: &[&str]| {
        let mut command = env.rockbuild();
        command
            .current_dir(&repo)
            .args(["ci", "generate"])
            .args(extra);
        command.assert()
    };
    let run = generate(&[]).success();
    assert!(
        String::from_utf8_lossy(&run.get_output().stderr)
            .contains("tables: configs/families.yaml, configs/releases.yaml\n"),
        "{:?}",
        run.get_output()
    );
    let families = repo.join("configs/families.yaml");
    let text = std::fs::read_to_string(&families).expect("read");
    let relabelled = text.replace(
        "test-runner: linux-gfx1151-gpu-rocm",
        "test-runner: lab-strix-halo",
    );
    assert_ne!(relabelled, text);
    std::fs::write(&families, &relabelled).expect("edit");
    generate(&["--check"]).success();
    // The nightly workflow's matrix step, as it runs in the checked-out repository.
    let nightly: yaml_serde::Value = yaml_serde::from_str(
        &std::fs::read_to_string(repo.join("workflows/rockbuild-nightly.yml")).expect("read"),
    )
    .expect("yaml");
    let steps = nightly["jobs"]["matrix"]["steps"]
        .as_sequence()
        .expect("steps");
    assert_eq!(
        steps[0]["with"]["sparse-checkout"].as_str(),
        Some("configs"),
        "the matrix job checks out the tables"
    );
    let line = steps[1]["run"].as_str().expect("a run line");
    let args: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(args[0], "rockbuild", "{line}");
    let outputs = env.path("github_output");
    env.rockbuild()
        .current_dir(&repo)
        .env("GITHUB_OUTPUT", &outputs)
        .args(&args[1..])
        .assert()
        .success();
    let written = std::fs::read_to_string(&outputs).expect("outputs");
    assert!(written.contains("\"runs_on\":\"lab-strix-halo\""), "{line}");
    // Dropping a family changes the release workflow's list of families.
    let cut = relabelled
        .find("\n  gfx125X-dcgpu:")
        .expect("the last family");
    std::fs::write(&families, &relabelled[..cut]).expect("edit");
    let stale = generate(&["--check"]).code(5);
    let stderr = String::from_utf8_lossy(&stale.get_output().stderr);
    assert!(
        stderr.contains(
            "the committed workflows differ from `rockbuild ci generate`: rockbuild-release.yml;"
        ),
        "{stderr}"
    );
}
