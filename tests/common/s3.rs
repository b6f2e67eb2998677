//! A real S3-compatible server inside the test process: s3s + s3s-fs on 127.0.0.1:<random>,
//! objects stored as plain files under a temp directory (`<root>/<bucket>/<key>`).
//!
//! A write policy can deny or hold writes to chosen keys, the way a bucket policy or an
//! IAM role would refuse them: the refusal happens before the server reads the body, so
//! nothing is written. "Hold" parks the request until the test lets go, which lets a test
//! kill a client at an exact point of its run.
//!
//! Used by the integration tests (`tests/common`) and, through `#[path]`, by the S3 store's
//! unit tests.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::access::{S3Access, S3AccessContext};
use s3s::path::S3Path;

pub const ACCESS_KEY: &str = "AKROCKBUILDTEST";
pub const SECRET_KEY: &str = "sk-rockbuild-test";
pub const BUCKET: &str = "wheels";

/// What happens to a write whose key contains the rule's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteRule {
    Deny,
    /// Park the request until [`S3Server::release`], then deny it.
    Hold,
}

#[derive(Default)]
struct PolicyState {
    rule: Option<(String, WriteRule)>,
    held: Vec<String>,
    released: bool,
}

#[derive(Default)]
struct Policy {
    state: Mutex<PolicyState>,
    changed: Condvar,
}

struct Access(Arc<Policy>);

const WRITES: &[&str] = &[
    "PutObject",
    "CopyObject",
    "CreateMultipartUpload",
    "UploadPart",
    "UploadPartCopy",
    "CompleteMultipartUpload",
];

#[async_trait::async_trait]
impl S3Access for Access {
    async fn check(&self, cx: &mut S3AccessContext<'_>) -> s3s::S3Result<()> {
        if cx.credentials().is_none() {
            return Err(s3s::s3_error!(AccessDenied, "signed requests only"));
        }
        let S3Path::Object { key, .. } = cx.s3_path() else {
            return Ok(());
        };
        if !WRITES.contains(&cx.s3_op().name()) {
            return Ok(());
        }
        let key = key.to_string();
        let rule = {
            let state = self.0.state.lock().expect("policy lock");
            state
                .rule
                .clone()
                .filter(|(text, _)| key.contains(text.as_str()))
        };
        match rule {
            None => Ok(()),
            Some((_, WriteRule::Deny)) => Err(s3s::s3_error!(
                AccessDenied,
                "denied by the test's write policy"
            )),
            Some((_, WriteRule::Hold)) => {
                let policy = Arc::clone(&self.0);
                // Wait on a blocking thread so the server's runtime keeps serving others.
                tokio::task::spawn_blocking(move || {
                    let mut state = policy.state.lock().expect("policy lock");
                    state.held.push(key);
                    policy.changed.notify_all();
                    while !state.released {
                        state = policy.changed.wait(state).expect("policy wait");
                    }
                })
                .await
                .map_err(|e| s3s::s3_error!(InternalError, "hold: {e}"))?;
                Err(s3s::s3_error!(
                    AccessDenied,
                    "denied by the test's write policy after a hold"
                ))
            }
        }
    }
}

pub struct S3Server {
    pub endpoint: String,
    root: PathBuf,
    policy: Arc<Policy>,
    // Kept alive for the server's lifetime; dropping it stops the server.
    _runtime: tokio::runtime::Runtime,
}

impl S3Server {
    /// Starts a server storing objects under `root`, with the bucket [`BUCKET`] created.
    pub fn start(root: &Path) -> S3Server {
        std::fs::create_dir_all(root.join(BUCKET)).expect("create bucket directory");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("server runtime");
        let policy = Arc::new(Policy::default());
        let fs = s3s_fs::FileSystem::new(root).expect("s3s-fs");
        let mut builder = s3s::service::S3ServiceBuilder::new(fs);
        builder.set_auth(s3s::auth::SimpleAuth::from_single(ACCESS_KEY, SECRET_KEY));
        builder.set_access(Access(Arc::clone(&policy)));
        let service = builder.build();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind 127.0.0.1:0");
        let address = listener.local_addr().expect("local address");
        runtime.spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    continue;
                };
                let service = service.clone();
                tokio::spawn(async move {
                    let _ = ConnBuilder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(socket), service)
                        .await;
                });
            }
        });
        S3Server {
            endpoint: format!("http://{address}"),
            root: root.to_path_buf(),
            policy,
            _runtime: runtime,
        }
    }

    /// `s3://wheels/<prefix>`.
    pub fn url(&self, prefix: &str) -> String {
        format!("s3://{BUCKET}/{prefix}")
    }

    /// The environment a client needs (the standard AWS variables; no instance metadata).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_string()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_string()),
            ("AWS_REGION", "us-east-1".to_string()),
            ("AWS_EC2_METADATA_DISABLED", "true".to_string()),
        ]
    }

    /// rockbuild's flags for this server.
    pub fn store_args(&self) -> Vec<String> {
        vec![
            "--s3-endpoint".into(),
            self.endpoint.clone(),
            "--s3-path-style".into(),
        ]
    }

    /// Where s3s-fs keeps an object's bytes.
    pub fn object_path(&self, key: &str) -> PathBuf {
        self.root.join(BUCKET).join(key)
    }

    /// Writes an object behind the server's back (as a file), e.g. a foreign upload that
    /// carries no checksum metadata.
    pub fn plant(&self, key: &str, bytes: &[u8]) {
        let path = self.object_path(key);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, bytes).expect("plant object");
    }

    /// Applies `rule` to every write whose key contains `text` (one rule at a time).
    pub fn set_write_rule(&self, text: &str, rule: WriteRule) {
        let mut state = self.policy.state.lock().expect("policy lock");
        state.rule = Some((text.to_string(), rule));
        state.released = false;
        state.held.clear();
    }

    pub fn clear_write_rule(&self) {
        self.release();
        self.policy.state.lock().expect("policy lock").rule = None;
    }

    /// Waits until a held write arrives; returns its key.
    pub fn wait_for_held_write(&self, limit: Duration) -> Option<String> {
        let state = self.policy.state.lock().expect("policy lock");
        let (state, _) = self
            .policy
            .changed
            .wait_timeout_while(state, limit, |s| s.held.is_empty())
            .expect("policy wait");
        state.held.first().cloned()
    }

    /// Lets held writes go on (to be denied).
    pub fn release(&self) {
        let mut state = self.policy.state.lock().expect("policy lock");
        state.released = true;
        self.policy.changed.notify_all();
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.release();
    }
}
