//! The sample stack config (examples/stack.yaml.in, written out with its origins filled in by
//! examples/make_origins.py) must stay loadable by this rockbuild and keep the shipped
//! stack's projects, pins and CUDA header list; only origins, default refs and the hipify
//! check paths differ.

use super::*;

const TEMPLATE: &str = include_str!("../../examples/stack.yaml.in");

#[test]
fn sample_stack_config_loads_and_mirrors_the_shipped_stack() {
    let text = TEMPLATE.replace("@ORIGINS@", "file:///tmp/sample/origins");
    let sample = Stack::parse(&ConfigSource {
        name: "examples/stack.yaml.in".into(),
        text,
    })
    .expect("the sample stack config loads");
    let shipped = Stack::load(None).expect("the shipped stack loads");

    assert_eq!(sample.cuda_only_headers, shipped.cuda_only_headers);
    assert_eq!(
        sample.projects.keys().collect::<Vec<_>>(),
        shipped.projects.keys().collect::<Vec<_>>()
    );
    for (name, project) in &sample.projects {
        let real = &shipped.projects[name];
        assert_eq!(
            (
                &project.checkout_dir,
                &project.wheel,
                &project.recipe,
                project.submodules,
                &project.pin
            ),
            (
                &real.checkout_dir,
                &real.wheel,
                &real.recipe,
                real.submodules,
                &real.pin
            ),
            "{name}"
        );
        assert!(
            project.origin.starts_with("file:///tmp/sample/origins/")
                && project.origin.ends_with(".git"),
            "{name}: {}",
            project.origin
        );
    }
    let HipifyPolicy::Script {
        script,
        check_paths,
        ..
    } = &sample.projects["torch"].hipify
    else {
        panic!("torch hipifies with its script");
    };
    assert_eq!(script, "tools/amd_build/build_amd.py");
    assert!(check_paths.contains(&"aten/src/ATen/native/hip".to_string()));
    assert_eq!(sample.projects["apex"].hipify, HipifyPolicy::Off);
    assert_eq!(sample.projects["triton"].hipify, HipifyPolicy::RecipeFiles);
}
