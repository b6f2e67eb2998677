//! Plans for Windows, made on this Linux machine, held against the reference's Windows build
//! as data (tests/fixtures/reference/therock_windows_build.yaml, transcribed from TheRock's
//! build_prod_wheels.py): for the sample stack's main branches and for its release/2.9, with
//! no compiler cache, ccache and sccache. The whole plans are snapshots besides.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::build::{SDK_VERSION, World, plan, windows_plan_args};
use crate::common::scrub;

/// One part of the reference's Windows build (see the data file for each field).
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Part {
    set: BTreeMap<String, String>,
    unset: Vec<String>,
    path: Vec<String>,
    requires: Vec<String>,
    copies: Vec<BTreeMap<String, String>>,
    uninstall: Vec<String>,
    build: Vec<String>,
    preloads: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Reference {
    common: Part,
    torch: Part,
    audio: Part,
    vision: Part,
    ccache: Part,
    sccache: Part,
}

fn reference() -> Reference {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/reference/therock_windows_build.yaml"
    );
    yaml_serde::from_str(&fs_err::read_to_string(path).expect("read")).expect("parse")
}

/// The Windows plan of `world` as JSON, for gfx1100 (aotriton has kernels for it).
fn windows_plan(world: &World, extra: &[&str]) -> Value {
    let owned = windows_plan_args();
    let mut args: Vec<&str> = owned.iter().map(String::as_str).collect();
    args.extend(extra);
    let (code, stdout, stderr) = plan(world, &args);
    assert_eq!(code, Some(0), "{stderr}");
    if extra.contains(&"--json") {
        serde_json::from_str(&stdout).expect("JSON plan")
    } else {
        Value::String(stdout)
    }
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// Holds one plan against the reference; `cache` is the compiler cache's part.
fn hold(reference: &Reference, plan: &Value, cache: Option<&Part>) {
    let root = text(&plan["sdk"]["root"]).to_string();
    let names: Vec<&str> = plan["projects"]
        .as_array()
        .expect("projects")
        .iter()
        .map(|p| text(&p["name"]))
        .collect();
    assert_eq!(
        names,
        ["torch", "audio", "vision"],
        "as the reference's Windows builds"
    );
    for project in plan["projects"].as_array().expect("projects") {
        let name = text(&project["name"]);
        let dir = text(&project["dir"]).to_string();
        let place = |value: &str| {
            value
                .replace("<root>", &root)
                .replace("<bin>", &format!("{root}/bin"))
                .replace("<cmake>", &format!("{root}/lib/cmake"))
                .replace("<dir>", &dir)
                .replace("<inherited>", "%PATH%")
        };
        let own = match name {
            "torch" => &reference.torch,
            "audio" => &reference.audio,
            _ => &reference.vision,
        };
        let parts = [Some(&reference.common), Some(own), cache];
        let env = &project["env"];
        for part in parts.iter().flatten() {
            for (key, value) in &part.set {
                assert_eq!(text(&env[key]), place(value), "{name}: {key}");
            }
            for key in &part.unset {
                assert!(env.get(key).is_none(), "{name}: {key} is set: {}", env[key]);
            }
        }
        let path: Vec<&str> = text(&env["PATH"]).split(';').collect();
        let expected: Vec<String> = reference.common.path.iter().map(|p| place(p)).collect();
        assert_eq!(
            path.first().copied(),
            Some(expected[0].as_str()),
            "{name}: PATH"
        );
        assert_eq!(
            path.last().copied(),
            expected.last().map(String::as_str),
            "{name}: PATH"
        );

        let steps = project["steps"].as_array().expect("steps");
        let first = &steps[0];
        assert_eq!(
            text(&first["kind"]),
            "require-env",
            "{name}: the MSVC check first"
        );
        for var in &reference.common.requires {
            assert!(
                first["vars"]
                    .as_array()
                    .expect("vars")
                    .contains(&Value::from(var.as_str())),
                "{name}: {var}"
            );
        }
        let copies: Vec<BTreeMap<String, String>> = steps
            .iter()
            .filter(|s| s["kind"] == "copy")
            .map(|s| {
                let copy = &s["copy"];
                let (how, file) = match (&copy["file"]["at"], &copy["file"]["find"]) {
                    (Value::String(at), _) => ("file", at),
                    (_, Value::String(find)) => ("find", find),
                    _ => panic!("{name}: copy of what? {copy}"),
                };
                BTreeMap::from([
                    ("var".to_string(), text(&copy["var"]).to_string()),
                    (how.to_string(), file.clone()),
                    ("into".to_string(), text(&copy["into"]).to_string()),
                ])
            })
            .collect();
        let expected: Vec<BTreeMap<String, String>> = own
            .copies
            .iter()
            .map(|c| c.iter().map(|(k, v)| (k.clone(), place(v))).collect())
            .collect();
        assert_eq!(copies, expected, "{name}: copies");

        let build = steps
            .iter()
            .position(|s| s["label"] == "build wheel")
            .expect("a build step");
        for dist in &own.uninstall {
            let uninstall = steps[..build]
                .iter()
                .find(|s| s["label"] == format!("uninstall {dist}").as_str())
                .unwrap_or_else(|| panic!("{name}: uninstall {dist} before the build"));
            assert_eq!(
                uninstall["argv"].as_array().and_then(|a| a.last()),
                Some(&Value::from(dist.as_str()))
            );
        }
        if !own.build.is_empty() {
            let argv: Vec<&str> = steps[build]["argv"]
                .as_array()
                .expect("argv")
                .iter()
                .skip(1)
                .map(text)
                .collect();
            assert_eq!(argv, own.build, "{name}: the build's arguments");
        }
    }
}

#[test]
fn windows_plans_hold_the_reference_windows_build() {
    let reference = reference();
    let nightly = World::new().with_checkouts();
    let release = World::new().with_checkouts_of(&["--repo-hashtag", "release/2.9"]);
    for (world, branch) in [(&nightly, "main"), (&release, "release/2.9")] {
        hold(&reference, &windows_plan(world, &["--json"]), None);
        for (flag, part) in [
            ("--use-ccache", &reference.ccache),
            ("--use-sccache", &reference.sccache),
        ] {
            let plan = windows_plan(world, &["--json", flag]);
            hold(&reference, &plan, Some(part));
            assert!(!world.out().exists(), "{branch}: a plan writes nothing");
        }
    }
    insta::assert_snapshot!(
        "windows_plan_release",
        scrub(text(&windows_plan(&release, &[])), &release.env)
    );
    let ccache = windows_plan(&nightly, &["--use-ccache"]);
    insta::assert_snapshot!("windows_plan_ccache", scrub(text(&ccache), &nightly.env));
}

/// Asking for a project the reference does not build on Windows is refused, naming why.
#[test]
fn windows_builds_refuse_what_the_reference_leaves_out() {
    let world = World::new().with_checkouts();
    let pin = format!("=={SDK_VERSION}");
    let (code, _, stderr) = plan(
        &world,
        &[
            "--platform",
            "windows",
            "--rocm-sdk-version",
            &pin,
            "--pytorch-rocm-arch",
            "gfx1100",
            "--build-triton",
        ],
    );
    assert_eq!(code, Some(2), "{stderr}");
    insta::assert_snapshot!("windows_plan_refuses_triton", stderr);
}
