//! The generated workflows, run end to end on the sample stack: exactly the `rockbuild` calls
//! their jobs make, read from `rockbuild ci generate --dry-run --json` (not a copied list), in
//! the order GitHub runs them, each job in a workspace of its own, artifacts handed over as
//! upload-artifact and download-artifact hand them over (a copy of the named paths, rooted at
//! their common directory). The stores are a real S3-compatible server, the staging index is
//! served over HTTP from it, pip and hipcc are real.
//!
//! What the harness stands in for, and nothing else: the runner's expression evaluation (the
//! few forms the workflows use; any other is an error), the build image's `/opt/python`
//! (this machine's Python 3.11), the OIDC credentials step (it hands the job the S3 server's
//! keys, as configure-aws-credentials exports the role's), a checkout cache that always misses,
//! the checkout of the repository's tables (this test's tables put in the job's `configs/`),
//! and no GPU (`ROCKBUILD_ALLOW_NO_GPU`: GPU checks are reported as skipped, never passed).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::common::http::{self, HttpServer};
use crate::common::s3::S3Server;
use crate::common::sample::sample_origins;
use crate::common::sdk::sdk_index;
use crate::common::{TestEnv, repo_root, wheelhouse};

const SDK_VERSION: &str = "7.10.0a20251124";
const RUN_ID: u64 = 4242;

/// The family table with a test runner for gfx906 (the real one has none, so gfx906 would
/// never be promoted): gfx906 compiles with this machine's hipcc; gfx94X-dcgpu's gfx942 is not
/// in the stand-in SDK, so its build fails as a real build for a target the SDK lacks fails.
fn families_table() -> String {
    let real = std::fs::read_to_string(repo_root().join("configs/families.yaml")).expect("read");
    let block = "  gfx906:\n    targets: [gfx906]\n    flash-attention: false\n    tier: nightly\n    linux:\n      build-runner: aws-linux-scale-rocm-prod\n";
    assert!(
        real.contains(block),
        "configs/families.yaml's gfx906 entry moved"
    );
    real.replace(
        block,
        &format!("{block}      test-runner: sample-gpu-gfx906\n"),
    )
}

/// The release table the generated workflows read: the real one's test configurations and
/// the tests its nightly runs (the gate under test, not a stand-in for it), for the sample's
/// torch ref, one Python and two families; `ci` only because the generator needs the
/// pull-request type. JSON, which is YAML.
fn releases_table() -> String {
    let text = std::fs::read_to_string(repo_root().join("configs/releases.yaml")).expect("read");
    let real: Value = yaml_serde::from_str(&text).expect("configs/releases.yaml");
    let nightly = &real["release-types"]["nightly"];
    assert!(
        nightly["tests"].as_object().is_some_and(|t| !t.is_empty()),
        "the real nightly runs no tests: {nightly}"
    );
    let table = json!({
        "schema": 1,
        "test-configs": real["test-configs"],
        "release-types": {
            "nightly": {
                "python": ["3.11"],
                "pytorch-refs": ["release/2.9"],
                "families": {"only": ["gfx94X-dcgpu", "gfx906"]},
                "tests": nightly["tests"],
                "publish": true,
                "cache": "nightly",
            },
            "ci": {
                "python": ["3.11"],
                "pytorch-refs": ["release/2.9"],
                "families": {"only": ["gfx906"]},
                "tests": {},
                "publish": false,
                "cache": "ci",
            },
        },
    });
    serde_json::to_string_pretty(&table).expect("JSON")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Success,
    Failure,
    Skipped,
}

/// One job's outcome in one chain: its status and outputs.
#[derive(Clone, Debug)]
struct JobResult {
    status: Status,
    outputs: Map<String, Value>,
}

/// Every `rockbuild` call the harness made, as (chain, job, attempt, argv).
type Calls = Vec<(String, String, u32, Vec<String>)>;

struct Harness {
    env: TestEnv,
    plan: Value,
    vars: BTreeMap<String, String>,
    artifacts: PathBuf,
    python_root: PathBuf,
    s3: S3Server,
    _index: HttpServer,
    _sdk: HttpServer,
    _python_index: HttpServer,
    calls: Calls,
    /// What each call printed (stdout, then stderr), by its index in `calls`.
    outputs: Vec<String>,
    workspaces: usize,
    /// Each chain's inputs as its caller passed them, by family (for re-runs).
    chain_inputs: BTreeMap<String, Map<String, Value>>,
}

/// Expression context of one job (or one matrix row of it).
#[derive(Clone, Default)]
struct Scope {
    inputs: Map<String, Value>,
    matrix: Value,
    needs: BTreeMap<String, JobResult>,
    env: BTreeMap<String, String>,
    steps: BTreeMap<String, Map<String, Value>>,
    attempt: u32,
}

impl Harness {
    fn new() -> Harness {
        let mut env = TestEnv::new();
        let origins = sample_origins(&env);
        let families = env.path("families.yaml");
        let releases = env.path("releases.yaml");
        std::fs::write(&families, families_table()).expect("write families");
        std::fs::write(&releases, releases_table()).expect("write releases");
        // The tables and the stack the build image's rockbuild would carry.
        env.set("ROCKBUILD_FAMILIES", families.to_str().expect("utf-8"));
        env.set("ROCKBUILD_RELEASES", releases.to_str().expect("utf-8"));
        env.set(
            "ROCKBUILD_CONFIG",
            origins.stack_yaml.to_str().expect("utf-8"),
        );
        // The images' network: the sample's build requirements and pytest from the wheelhouse.
        env.set("PIP_NO_INDEX", "1");
        env.set("PIP_FIND_LINKS", wheelhouse().to_str().expect("utf-8"));
        env.set(
            "ROCKBUILD_TEST_FIND_LINKS",
            wheelhouse().to_str().expect("utf-8"),
        );
        let requirements = env.path("requirements-test.txt");
        std::fs::write(&requirements, "pytest==9.0.3\npytest-timeout==2.4.0\n").expect("write");
        env.set(
            "ROCKBUILD_TEST_REQUIREMENTS",
            requirements.to_str().expect("utf-8"),
        );
        env.set("ROCKBUILD_ALLOW_NO_GPU", "true");
        // The test runners as `detect` reads them: no AMD GPU, whatever this host has.
        let runner = env.path("runner");
        crate::common::sysfs::no_gpu(&runner);
        env.set("ROCKBUILD_SYSFS_ROOT", runner.to_str().expect("utf-8"));
        // The release policy as CI has it: manylinux tags only.
        env.set("ROCKBUILD_ALLOW_LINUX_TAG", "false");
        // s3s serves path-style requests only, as many S3-compatible stores do.
        env.set("ROCKBUILD_S3_PATH_STYLE", "true");
        let python_root = env.path("opt-python");
        let bin = python_root.join("cp311-cp311/bin");
        std::fs::create_dir_all(&bin).expect("mkdir");
        std::os::unix::fs::symlink("/usr/bin/python3.11", bin.join("python")).expect("symlink");

        let s3 = S3Server::start(&env.path("s3"));
        let index = http::serve(&env.path("s3/wheels"));
        let sdk = http::serve(&sdk_index(SDK_VERSION, &["gfx906", "gfx1030"]));
        // The index of everything else (PyPI): the sample set needs nothing from it, and it
        // holds no SDK, so the staged and released prefixes must hold the SDK themselves.
        std::fs::create_dir_all(env.path("python-index/simple")).expect("mkdir");
        let python_index = http::serve(&env.path("python-index"));
        let generated = env
            .rockbuild()
            .args(["ci", "generate", "--dry-run", "--json"])
            .assert()
            .success();
        let plan: Value =
            serde_json::from_slice(&generated.get_output().stdout).expect("plan JSON");
        let vars: BTreeMap<String, String> = [
            ("ROCKBUILD_BUILD_IMAGE", "build-image".to_string()),
            ("ROCKBUILD_TEST_IMAGE", "test-image".to_string()),
            ("ROCKBUILD_ROCM_INDEX_URL", format!("{}simple/", sdk.url())),
            // pytest comes from the wheelhouse.
            (
                "ROCKBUILD_PYTHON_INDEX_URL",
                format!("{}simple/", python_index.url()),
            ),
            ("ROCKBUILD_STAGING_URL", s3.url("staging")),
            (
                "ROCKBUILD_STAGING_INDEX_URL",
                format!("{}staging", index.url()),
            ),
            ("ROCKBUILD_RELEASE_URL", s3.url("release")),
            (
                "ROCKBUILD_AWS_ROLE",
                "arn:aws:iam::123456789012:role/rockbuild".into(),
            ),
            ("ROCKBUILD_AWS_REGION", "us-east-1".into()),
            ("ROCKBUILD_S3_ENDPOINT", s3.endpoint.clone()),
            // No compiler cache bucket: the callers turn sccache off.
            ("ROCKBUILD_SCCACHE_BUCKET", String::new()),
            ("ROCKBUILD_SCCACHE_ENDPOINT", String::new()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        Harness {
            artifacts: env.path("artifacts"),
            env,
            plan,
            vars,
            python_root,
            s3,
            _index: index,
            _sdk: sdk,
            _python_index: python_index,
            calls: Vec::new(),
            outputs: Vec::new(),
            workspaces: 0,
            chain_inputs: BTreeMap::new(),
        }
    }

    fn workflow(&self, file: &str) -> &Value {
        self.plan["workflows"]
            .as_array()
            .expect("workflows")
            .iter()
            .find(|w| w["file"] == file)
            .unwrap_or_else(|| panic!("no {file} in the plan"))
    }

    /// Runs a caller's `matrix` job, then every chain its `chain` job calls; returns each
    /// chain's job results by the chain's family.
    fn run_caller(&mut self, file: &str) -> BTreeMap<String, BTreeMap<String, JobResult>> {
        let caller = self.workflow(file).clone();
        let jobs = caller["jobs"].as_array().expect("jobs").clone();
        let workflow_env = pairs(&caller["env"]);
        let matrix_job = &jobs[0];
        assert_eq!(matrix_job["id"], "matrix");
        // The caller runs on its schedule: a dispatch input it declares reads as empty.
        let mut inputs = Map::new();
        for (event, body) in caller["on"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| (&p[0], &p[1]))
        {
            if event == "workflow_dispatch" {
                for input in body[0][1].as_array().into_iter().flatten() {
                    let name = input[0].as_str().expect("input name");
                    inputs.insert(name.to_string(), Value::String(String::new()));
                }
            }
        }
        let scope = Scope {
            inputs,
            attempt: 1,
            ..Scope::default()
        };
        let matrix = self.run_steps_job("caller", matrix_job, &workflow_env, scope);
        assert_eq!(matrix.status, Status::Success, "the matrix job");
        let chain_job = &jobs[1];
        assert_eq!(chain_job["body"]["kind"], "call");
        let mut needs = BTreeMap::new();
        needs.insert("matrix".to_string(), matrix);
        let scope = Scope {
            needs,
            attempt: 1,
            ..Scope::default()
        };
        let rows = self.eval(chain_job["matrix"].as_str().expect("matrix"), &scope);
        let uses = chain_job["body"]["uses"].as_str().expect("uses");
        let chain_file = uses.rsplit('/').next().expect("file name").to_string();
        let mut chains = BTreeMap::new();
        for row in rows["include"].as_array().expect("include") {
            let row_scope = Scope {
                matrix: row.clone(),
                ..scope.clone()
            };
            let inputs: Map<String, Value> = chain_job["body"]["with"]
                .as_array()
                .expect("with")
                .iter()
                .map(|pair| {
                    let value = self.eval(pair[1].as_str().expect("value"), &row_scope);
                    (pair[0].as_str().expect("key").to_string(), value)
                })
                .collect();
            let family = inputs["family"].as_str().expect("family").to_string();
            let results = self.run_chain(&chain_file, &inputs, &BTreeMap::new(), &[], 1);
            self.chain_inputs.insert(family.clone(), inputs.clone());
            chains.insert(family, results);
        }
        chains
    }

    /// Runs a chain workflow. `previous` and `rerun`: GitHub's "re-run": the jobs named (and
    /// every job after them that needs them) run again as attempt `attempt`; the others keep
    /// their results and outputs from before.
    fn run_chain(
        &mut self,
        file: &str,
        inputs: &Map<String, Value>,
        previous: &BTreeMap<String, JobResult>,
        rerun: &[&str],
        attempt: u32,
    ) -> BTreeMap<String, JobResult> {
        let workflow = self.workflow(file).clone();
        let workflow_env = pairs(&workflow["env"]);
        let label = inputs["family"].as_str().expect("family").to_string();
        let mut results: BTreeMap<String, JobResult> = BTreeMap::new();
        let mut again: Vec<String> = rerun.iter().map(|s| s.to_string()).collect();
        for job in workflow["jobs"].as_array().expect("jobs") {
            let id = job["id"].as_str().expect("id").to_string();
            let needs: Vec<String> = job["needs"]
                .as_array()
                .expect("needs")
                .iter()
                .map(|n| n.as_str().expect("need").to_string())
                .collect();
            if !previous.is_empty() {
                if needs.iter().any(|n| again.contains(n)) && !again.contains(&id) {
                    again.push(id.clone());
                }
                if !again.contains(&id) {
                    results.insert(id.clone(), previous[&id].clone());
                    continue;
                }
            }
            let scope = Scope {
                inputs: inputs.clone(),
                needs: needs
                    .iter()
                    .map(|n| (n.clone(), results[n].clone()))
                    .collect(),
                attempt,
                ..Scope::default()
            };
            let blocked = scope.needs.values().any(|r| r.status != Status::Success);
            let wanted = match job["condition"].as_str() {
                Some(condition) => truthy(&self.eval(condition, &scope)),
                None => true,
            };
            let result = if blocked || !wanted {
                JobResult {
                    status: Status::Skipped,
                    outputs: Map::new(),
                }
            } else {
                self.run_matrix_job(&label, job, &workflow_env, scope)
            };
            results.insert(id, result);
        }
        results
    }

    /// A job over its matrix rows (`fail-fast: false`: every row runs); fails if one does.
    fn run_matrix_job(
        &mut self,
        chain: &str,
        job: &Value,
        workflow_env: &[(String, String)],
        scope: Scope,
    ) -> JobResult {
        let Some(matrix) = job["matrix"].as_str() else {
            return self.run_steps_job(chain, job, workflow_env, scope);
        };
        let rows = self.eval(matrix, &scope)["include"]
            .as_array()
            .expect("a matrix is an include list")
            .clone();
        assert!(
            !rows.is_empty(),
            "{chain}: an empty matrix for {}",
            job["id"]
        );
        let mut status = Status::Success;
        for row in rows {
            let row_scope = Scope {
                matrix: row,
                ..scope.clone()
            };
            if self
                .run_steps_job(chain, job, workflow_env, row_scope)
                .status
                != Status::Success
            {
                status = Status::Failure;
            }
        }
        JobResult {
            status,
            outputs: Map::new(),
        }
    }

    /// One job (one matrix row): its steps in a fresh workspace; its outputs after them.
    fn run_steps_job(
        &mut self,
        chain: &str,
        job: &Value,
        workflow_env: &[(String, String)],
        mut scope: Scope,
    ) -> JobResult {
        let body = &job["body"];
        assert_eq!(body["kind"], "steps");
        self.workspaces += 1;
        let workspace = self.env.path(&format!(
            "runs/{:03}-{chain}-{}",
            self.workspaces,
            job["id"].as_str().expect("id")
        ));
        std::fs::create_dir_all(&workspace).expect("workspace");
        for (key, value) in workflow_env {
            let value = self.eval_text(value, &scope);
            scope.env.insert(key.clone(), value);
        }
        for (key, value) in pairs(&body["env"]) {
            let value = self.eval_text(&value, &scope);
            scope.env.insert(key, value);
        }
        let mut failed = false;
        for step in body["steps"].as_array().expect("steps") {
            let condition = step["condition"].as_str();
            let runs = match condition {
                Some("always()") => true,
                Some(condition) => !failed && truthy(&self.eval(condition, &scope)),
                None => !failed,
            };
            if !runs {
                continue;
            }
            if !self.run_step(chain, job, step, &workspace, &mut scope) {
                failed = true;
            }
        }
        let outputs = pairs(&body["outputs"])
            .into_iter()
            .map(|(k, v)| (k, Value::String(self.eval_text(&v, &scope))))
            .collect();
        JobResult {
            status: if failed {
                Status::Failure
            } else {
                Status::Success
            },
            outputs,
        }
    }

    fn run_step(
        &mut self,
        chain: &str,
        job: &Value,
        step: &Value,
        workspace: &Path,
        scope: &mut Scope,
    ) -> bool {
        let mut env = scope.env.clone();
        for (key, value) in pairs(&step["env"]) {
            let value = self.eval_text(&value, scope);
            env.insert(key, value);
        }
        let run = &step["run"];
        match run["kind"].as_str().expect("kind") {
            "rockbuild" => {
                let args: Vec<String> = run["args"]
                    .as_array()
                    .expect("args")
                    .iter()
                    .map(|arg| match arg["kind"].as_str().expect("arg kind") {
                        "literal" => arg["value"].as_str().expect("word").to_string(),
                        "var" => {
                            let name = arg["value"].as_str().expect("name");
                            env.get(name)
                                .unwrap_or_else(|| panic!("${name} is not in the step's env"))
                                .clone()
                        }
                        other => panic!("unknown argument kind {other}"),
                    })
                    .collect();
                let outputs = workspace.join(".github_output");
                let _ = std::fs::remove_file(&outputs);
                let mut command = self.env.rockbuild();
                command
                    .current_dir(workspace)
                    .args(&args)
                    .envs(&env)
                    .env("GITHUB_ACTIONS", "true")
                    .env("GITHUB_OUTPUT", &outputs);
                let output = command.output().expect("run rockbuild");
                self.outputs.push(format!(
                    "{}{}",
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                ));
                self.calls.push((
                    chain.to_string(),
                    job["id"].as_str().expect("id").to_string(),
                    scope.attempt,
                    args.clone(),
                ));
                if let Some(id) = step["id"].as_str() {
                    let text = std::fs::read_to_string(&outputs).unwrap_or_default();
                    let values = text
                        .lines()
                        .filter_map(|l| l.split_once('='))
                        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
                        .collect();
                    scope.steps.insert(id.to_string(), values);
                }
                if !output.status.success() {
                    eprintln!(
                        "[{chain} {}] rockbuild {} failed ({}):\n{}",
                        job["id"],
                        args.join(" "),
                        output.status,
                        String::from_utf8_lossy(&output.stderr)
                    );
                }
                output.status.success()
            }
            // A cache that always misses: every job must work from nothing.
            "action" if run["action"]["repo"] == "actions/cache" => true,
            "action" => {
                let with: BTreeMap<String, String> = pairs(&run["with"])
                    .into_iter()
                    .map(|(k, v)| (k, self.eval_text(&v, scope)))
                    .collect();
                match run["action"]["repo"].as_str().expect("repo") {
                    "actions/upload-artifact" => self.upload(workspace, &with, scope.attempt),
                    "actions/download-artifact" => self.download(workspace, &with),
                    // The repository at the run's commit, as far as the job reads it: its
                    // tables, which are this test's.
                    "actions/checkout" => {
                        assert_eq!(with["sparse-checkout"], "configs", "{with:?}");
                        let configs = workspace.join("configs");
                        std::fs::create_dir_all(&configs).expect("mkdir");
                        for table in ["families.yaml", "releases.yaml"] {
                            std::fs::copy(self.env.path(table), configs.join(table)).expect("copy");
                        }
                        true
                    }
                    "aws-actions/configure-aws-credentials" => {
                        assert!(
                            with["role-to-assume"].starts_with("arn:aws:iam::"),
                            "{with:?}"
                        );
                        // What the action exports for the role: here, the S3 server's keys.
                        for (key, value) in self.s3.env() {
                            scope.env.insert(key.to_string(), value);
                        }
                        true
                    }
                    other => panic!("the harness does not know the action {other}"),
                }
            }
            other => panic!("unknown step kind {other}"),
        }
    }

    /// upload-artifact: the files the paths name, rooted at their common directory.
    fn upload(&self, workspace: &Path, with: &BTreeMap<String, String>, attempt: u32) -> bool {
        let name = &with["name"];
        let mut files: Vec<PathBuf> = Vec::new();
        let mut roots: Vec<PathBuf> = Vec::new();
        for line in with["path"].lines().filter(|l| !l.trim().is_empty()) {
            let path = workspace.join(line.trim_end_matches('/'));
            if let Some(pattern) = line.rsplit('/').next().filter(|p| p.contains('*')) {
                let dir = path.parent().expect("parent").to_path_buf();
                let suffix = pattern.trim_start_matches('*');
                if let Ok(entries) = std::fs::read_dir(&dir) {
                    for entry in entries {
                        let p = entry.expect("entry").path();
                        if p.to_string_lossy().ends_with(suffix) && p.is_file() {
                            files.push(p);
                        }
                    }
                }
                roots.push(dir);
            } else if path.is_dir() {
                for entry in walkdir::WalkDir::new(&path) {
                    let entry = entry.expect("walk");
                    if entry.file_type().is_file() {
                        files.push(entry.into_path());
                    }
                }
                roots.push(path);
            } else {
                if path.is_file() {
                    files.push(path.clone());
                }
                roots.push(path.parent().expect("parent").to_path_buf());
            }
        }
        if files.is_empty() {
            return with.get("if-no-files-found").map(String::as_str) != Some("error");
        }
        let root = common_ancestor(&roots);
        let dest = self.artifacts.join(name);
        if dest.exists() {
            // Names are unique within a run; a re-run's upload replaces its own artifact.
            assert!(attempt > 1, "artifact {name} uploaded twice in one attempt");
            std::fs::remove_dir_all(&dest).expect("replace artifact");
        }
        for file in files {
            let target = dest.join(file.strip_prefix(&root).expect("under the root"));
            std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
            std::fs::copy(&file, &target).expect("copy into the artifact");
        }
        true
    }

    /// download-artifact: one artifact by name (missing: the step fails), or every artifact
    /// a pattern matches, merged into `path`.
    fn download(&self, workspace: &Path, with: &BTreeMap<String, String>) -> bool {
        let dest = workspace.join(with.get("path").map_or(".", String::as_str));
        let names: Vec<String> = match (with.get("name"), with.get("pattern")) {
            (Some(name), None) => {
                if !self.artifacts.join(name).is_dir() {
                    eprintln!("download-artifact: no artifact {name}");
                    return false;
                }
                vec![name.clone()]
            }
            (None, Some(pattern)) => {
                assert_eq!(with.get("merge-multiple").map(String::as_str), Some("true"));
                let prefix = pattern.strip_suffix('*').expect("a trailing * pattern");
                let mut names: Vec<String> = std::fs::read_dir(&self.artifacts)
                    .map(|entries| {
                        entries
                            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                            .filter(|n| n.starts_with(prefix))
                            .collect()
                    })
                    .unwrap_or_default();
                names.sort();
                names
            }
            other => panic!("download-artifact needs a name or a pattern: {other:?}"),
        };
        for name in names {
            let source = self.artifacts.join(&name);
            for entry in walkdir::WalkDir::new(&source) {
                let entry = entry.expect("walk");
                if entry.file_type().is_file() {
                    let target = dest.join(
                        entry
                            .path()
                            .strip_prefix(&source)
                            .expect("under the artifact"),
                    );
                    std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
                    std::fs::copy(entry.path(), &target).expect("copy out of the artifact");
                }
            }
        }
        true
    }

    /// A string with every `${{ … }}` replaced; the build image's `/opt/python` is this
    /// machine's interpreter root.
    fn eval_text(&self, text: &str, scope: &Scope) -> String {
        let value = match self.eval_whole(text, scope) {
            Some(value) => text_of(&value),
            None => {
                let mut out = String::new();
                let mut rest = text;
                while let Some(start) = rest.find("${{") {
                    out.push_str(&rest[..start]);
                    let end = rest[start..].find("}}").expect("closing }}") + start;
                    out.push_str(&text_of(&self.eval(&rest[start + 3..end], scope)));
                    rest = &rest[end + 2..];
                }
                out.push_str(rest);
                out
            }
        };
        match value.strip_prefix("/opt/python/") {
            Some(rest) => format!("{}/{rest}", self.python_root.display()),
            None => value,
        }
    }

    /// `${{ expr }}` as the whole string keeps the expression's type (a matrix, a boolean).
    fn eval_whole(&self, text: &str, scope: &Scope) -> Option<Value> {
        let inner = text.strip_prefix("${{")?.strip_suffix("}}")?;
        (!inner.contains("}}")).then(|| self.eval(inner, scope))
    }

    /// The expression forms the generated workflows use; anything else is a test failure,
    /// so a new form cannot slip past this harness.
    fn eval(&self, expr: &str, scope: &Scope) -> Value {
        let expr = expr.trim();
        if let Some(whole) = self.eval_whole(expr, scope) {
            return whole;
        }
        match expr {
            "true" => return Value::Bool(true),
            "false" => return Value::Bool(false),
            _ => {}
        }
        if let Some(inner) = call(expr, "fromJSON") {
            let text = text_of(&self.eval(inner, scope));
            return serde_json::from_str(&text).unwrap_or_else(|e| panic!("fromJSON({text}): {e}"));
        }
        if let Some(inner) = call(expr, "toJSON") {
            return Value::String(self.eval(inner, scope).to_string());
        }
        for (op, equal) in [(" == ", true), (" != ", false)] {
            if let Some((left, right)) = expr.split_once(op) {
                let right = right.trim();
                let literal = match right {
                    "true" | "false" => right,
                    quoted => quoted
                        .strip_prefix('\'')
                        .and_then(|r| r.strip_suffix('\''))
                        .unwrap_or_else(|| panic!("{expr}: compare with a literal")),
                };
                return Value::Bool((text_of(&self.eval(left, scope)) == literal) == equal);
            }
        }
        let mut parts = expr.split('.');
        let root = parts.next().expect("a name");
        let rest: Vec<&str> = parts.collect();
        let field = |map: &Map<String, Value>, key: &str| {
            map.get(key)
                .cloned()
                .unwrap_or_else(|| panic!("{expr}: no {key}"))
        };
        match (root, rest.as_slice()) {
            ("inputs", [name]) => field(&scope.inputs, name),
            ("matrix", [name]) => scope
                .matrix
                .get(name)
                .cloned()
                .unwrap_or_else(|| panic!("{expr}: not in the matrix row")),
            ("needs", [job, "outputs", name]) => {
                field(&scope.needs.get(*job).expect("a needed job").outputs, name)
            }
            ("steps", [id, "outputs", name]) => {
                field(scope.steps.get(*id).expect("a step with an id"), name)
            }
            ("env", [name]) => Value::String(
                scope
                    .env
                    .get(*name)
                    .unwrap_or_else(|| panic!("{expr}: not set"))
                    .clone(),
            ),
            ("vars", [name]) => Value::String(
                self.vars
                    .get(*name)
                    .unwrap_or_else(|| panic!("{expr}: no such repository variable"))
                    .clone(),
            ),
            ("github", ["run_id"]) => json!(RUN_ID),
            ("github", ["run_attempt"]) => json!(scope.attempt),
            _ => panic!("the harness does not evaluate `{expr}`"),
        }
    }

    /// The staged or released wheel file names under a store prefix, sorted.
    fn wheels(&self, prefix: &str) -> Vec<String> {
        let mut names: Vec<String> = walkdir::WalkDir::new(self.s3.object_path(prefix))
            .into_iter()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".whl"))
            .collect();
        names.sort();
        names
    }
}

fn call<'a>(expr: &'a str, name: &str) -> Option<&'a str> {
    expr.strip_prefix(name)?
        .strip_prefix('(')?
        .strip_suffix(')')
}

fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn truthy(value: &Value) -> bool {
    match value {
        Value::Bool(b) => *b,
        Value::String(s) => !s.is_empty(),
        Value::Null => false,
        _ => true,
    }
}

/// `[[key, value], …]` as the plan serialises ordered pairs.
fn pairs(value: &Value) -> Vec<(String, String)> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|pair| {
                    (
                        pair[0].as_str().expect("key").to_string(),
                        pair[1].as_str().expect("value").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn common_ancestor(paths: &[PathBuf]) -> PathBuf {
    let mut root = paths[0].clone();
    while !paths.iter().all(|p| p.starts_with(&root)) {
        root = root.parent().expect("a common ancestor").to_path_buf();
    }
    root
}

fn statuses(results: &BTreeMap<String, JobResult>) -> Vec<(String, Status)> {
    [
        "lock", "build", "stage", "smoke", "test", "report", "promote",
    ]
    .iter()
    .map(|job| (job.to_string(), results[*job].status))
    .collect()
}

#[test]
fn nightly_chains_promote_one_family_while_the_other_fails_to_build() {
    let mut harness = Harness::new();
    let chains = harness.run_caller("rockbuild-nightly.yml");
    let ok = |jobs: &[&str]| -> Vec<(String, Status)> {
        [
            "lock", "build", "stage", "smoke", "test", "report", "promote",
        ]
        .iter()
        .map(|job| {
            let status = if jobs.contains(job) {
                Status::Success
            } else if *job == "build" {
                Status::Failure
            } else {
                Status::Skipped
            };
            (job.to_string(), status)
        })
        .collect()
    };
    assert_eq!(
        statuses(&chains["gfx906"]),
        ok(&[
            "lock", "build", "stage", "smoke", "test", "report", "promote"
        ])
    );
    assert_eq!(statuses(&chains["gfx94X-dcgpu"]), ok(&["lock"]));

    // The calls each chain's jobs made, in order: what the generated workflow runs.
    let calls: Vec<String> = harness
        .calls
        .iter()
        .map(|(chain, job, attempt, args)| {
            let words: Vec<String> = args
                .iter()
                .map(|a| {
                    a.replace(&harness.env.root().display().to_string(), "[TMP]")
                        .replace(&harness.s3.endpoint, "[S3]")
                })
                .collect();
            format!("{chain} {job} #{attempt}: rockbuild {}", words.join(" "))
        })
        .collect();
    insta::assert_snapshot!(mask_ports(&calls.join("\n")));

    // The gate passed on CPU, and says what it could not check there: every test the shards
    // skipped without a GPU, with the reason (the GPU smoke suite's GPU checks, the quick
    // subset's GPU tests), as gfx906's report job printed it.
    let report = harness
        .calls
        .iter()
        .zip(&harness.outputs)
        .find(|((chain, job, attempt, _), _)| chain == "gfx906" && job == "report" && *attempt == 1)
        .map(|(_, output)| output.clone())
        .expect("gfx906's report job");
    let mut settings = crate::common::snapshot::settings(&harness.env);
    settings.add_filter(r"\b\d+m\d\ds\b", "[TIME]");
    // The sample's commits depend on the temp path its pins carry.
    settings.add_filter(r"\+git[0-9a-f]{7,}", "+git[COMMIT]");
    settings.bind(|| {
        insta::assert_snapshot!("ci_chain_nightly_gate_on_cpu", loose_table(&report));
    });

    // gfx906: staged under this attempt's prefix, promoted to the family's release index.
    let staged = harness.wheels(&format!("staging/run-{RUN_ID}-1/release-2.9/gfx906"));
    assert!(!staged.is_empty(), "nothing staged");
    assert!(
        staged
            .iter()
            .all(|w| w.ends_with("manylinux_2_28_x86_64.whl")
                || w.ends_with("-none-any.whl")
                || w.starts_with("rocm")),
        "{staged:?}"
    );
    let released = harness.wheels("release/gfx906");
    // The products, and the ROCm SDK wheels torch pins (`rocm[libraries]`), carried.
    for project in [
        "torch-",
        "torchaudio-",
        "torchvision-",
        "triton-",
        "apex-",
        "rocm-",
        "rocm_sdk_core-",
        "rocm_sdk_libraries-",
    ] {
        assert!(
            released.iter().any(|w| w.starts_with(project)),
            "{project} not promoted: {released:?}"
        );
    }
    // gfx94X-dcgpu: nothing staged, nothing released.
    assert!(
        harness
            .wheels("staging/run-4242-1/release-2.9/gfx94X-dcgpu")
            .is_empty()
    );
    assert!(harness.wheels("release/gfx94X-dcgpu").is_empty());

    // Re-running gfx906's stage job (GitHub re-runs it and every job that needs it) is
    // attempt 2: it stages to a fresh prefix, and smoke, test, report and promote follow the
    // prefix it hands them. Attempt 1's prefix stays as it was; lock and build are not run
    // again (their artifacts are the run's); promoting the same wheels again changes nothing.
    let first = format!("staging/run-{RUN_ID}-1/release-2.9/gfx906");
    let second = format!("staging/run-{RUN_ID}-2/release-2.9/gfx906");
    let calls_before = harness.calls.len();
    let inputs = harness.chain_inputs["gfx906"].clone();
    let rerun = harness.run_chain(
        "rockbuild-chain.yml",
        &inputs,
        &chains["gfx906"],
        &["stage"],
        2,
    );
    assert_eq!(
        statuses(&rerun),
        ok(&[
            "lock", "build", "stage", "smoke", "test", "report", "promote"
        ])
    );
    assert_eq!(
        rerun["stage"].outputs["prefix"],
        format!("run-{RUN_ID}-2/release-2.9/gfx906")
    );
    assert_eq!(harness.wheels(&second), staged);
    assert_eq!(harness.wheels(&first), staged);
    assert_eq!(harness.wheels("release/gfx906"), released);
    let rerun_jobs: Vec<&str> = harness.calls[calls_before..]
        .iter()
        .map(|(_, job, attempt, _)| {
            assert_eq!(*attempt, 2);
            job.as_str()
        })
        .collect();
    assert_eq!(
        rerun_jobs,
        // The smoke suite's test job, then the quick subset's (its checkout, its run).
        [
            "stage", "smoke", "test", "test", "test", "report", "promote"
        ]
    );
}

/// A text table's padding and rules depend on the widths of cells that change from run to
/// run (times): runs of spaces and dashes are shortened.
fn loose_table(text: &str) -> String {
    text.lines()
        .map(|line| {
            let mut out = String::new();
            for word in line.split("  ").filter(|w| !w.is_empty()) {
                let word = word.trim();
                if !out.is_empty() {
                    out.push_str("  ");
                }
                if !word.is_empty() && word.chars().all(|c| c == '-') {
                    out.push_str("--");
                } else {
                    out.push_str(word);
                }
            }
            out
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Ports and versions that change from run to run.
fn mask_ports(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("127.0.0.1:") {
        out.push_str(&rest[..at + "127.0.0.1:".len()]);
        rest = &rest[at + "127.0.0.1:".len()..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        out.push_str("[PORT]");
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}
