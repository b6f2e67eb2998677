//! The S3 backend (aws-sdk-s3): AWS itself or any S3-compatible server (`--s3-endpoint`,
//! `--s3-path-style`). Credentials come from the standard AWS chain (environment, profiles,
//! SSO, web identity in GitHub Actions), never from rockbuild's flags.
//!
//! * Every object carries its SHA-256 as user metadata (`x-amz-meta-sha256`), so HEAD can
//!   answer "same bytes?" without a download; with `--s3-checksums when-supported` (the
//!   default) the server also verifies the SHA-256 of uploads and computes it for copies.
//! * Copies above `--multipart-threshold` use multipart UploadPartCopy: a single CopyObject
//!   fails above 5 GiB, and torch wheels get that big. Uploads above it use multipart upload
//!   (PutObject has the same limit).
//! * Keys are sent percent-encoded: `+` travels as `%2B` (TheRock#777), including in the
//!   `x-amz-copy-source` header, which the SDK passes through as given.
//!
//! The parts: this file holds the client, single-request transfers and the [`Storage`]
//! implementation; [`multipart`] splits big uploads and copies into parts; [`checksums`]
//! converts between the hex SHA-256 rockbuild keeps and S3's base64 checksums.

mod checksums;
mod multipart;
mod waits;

use std::any::Any;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use aws_sdk_s3::Client;
use aws_sdk_s3::config::{Region, RequestChecksumCalculation, ResponseChecksumValidation};
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::operation::get_object::GetObjectOutput;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{ChecksumAlgorithm, ChecksumMode, MetadataDirective};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use super::encode_path;
use super::{Body, ObjectInfo, PutOptions, PutResult, Storage, StoreError};

use checksums::{base64_to_hex, hex_to_base64, valid_sha256};

/// The region requests are signed for when none is given or configured.
const DEFAULT_REGION: &str = "us-east-1";

/// User metadata key holding the object's SHA-256 (hex).
const SHA256_METADATA: &str = "sha256";

/// When the S3 client computes and checks checksums (`--s3-checksums`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum S3ChecksumMode {
    /// SHA-256 on uploads (verified by the server), server-computed SHA-256 on copies.
    #[default]
    WhenSupported,
    /// Only where an operation requires one: for S3-compatible servers that reject the
    /// SDK's checksum trailers (garage answers "Invalid payload signature").
    WhenRequired,
}

#[derive(Clone, Debug)]
pub struct S3Settings {
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub path_style: bool,
    pub checksums: S3ChecksumMode,
    /// Copies and uploads above this many bytes go multipart.
    pub multipart_threshold: u64,
    /// How long a request waits to connect, and then for each read of its answer.
    pub timeout: std::time::Duration,
    /// Attempts per request, the first included.
    pub attempts: u32,
}

#[derive(Debug)]
pub struct S3Store {
    client: Client,
    runtime: Arc<tokio::runtime::Runtime>,
    bucket: String,
    prefix: String,
    settings: S3Settings,
    /// No region was given or configured, so requests are signed for us-east-1: worth saying
    /// when the server refuses them.
    region_defaulted: bool,
    /// The standard chain's credentials provider, asked once by [`S3Store::check_credentials`].
    credentials: Option<aws_sdk_s3::config::SharedCredentialsProvider>,
}

/// The facts of a failed S3 call.
pub(super) struct Failure {
    status: Option<u16>,
    code: Option<String>,
    message: String,
    transient: bool,
    /// No answer in time, or no connection: worded from the wait settings instead.
    unanswered: bool,
}

pub(super) fn failure<E>(error: &SdkError<E>) -> Failure
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let status = error.raw_response().map(|r| r.status().as_u16());
    let code = error.code().map(String::from);
    let transient = matches!(
        error,
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_)
    ) || status.is_some_and(|s| s >= 500 || s == 429)
        || matches!(
            code.as_deref(),
            Some("SlowDown" | "RequestTimeout" | "InternalError")
        );
    let unanswered = match error {
        SdkError::TimeoutError(_) => true,
        SdkError::DispatchFailure(dispatch) => dispatch.is_timeout() || dispatch.is_io(),
        _ => false,
    };
    Failure {
        status,
        code,
        message: crate::redact::redact_url(&in_words(error)),
        transient,
        unanswered,
    }
}

/// An SDK error as people read it: the server's code and message when it answered, else the
/// chain of causes, each in its own words (never the SDK's debug structures).
pub(super) fn in_words<E>(error: &SdkError<E>) -> String
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match (error.code(), error.message()) {
        (Some(code), Some(message)) => format!("{code}: {message}"),
        (Some(code), None) => code.to_string(),
        _ => causes(error),
    }
}

/// Each error of the chain by its Display, joined with `: `; a cause that only repeats what
/// the error before it said is left out.
pub(super) fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(error) = next {
        let text = error.to_string();
        if !text.is_empty() && !parts.last().is_some_and(|last| last.contains(&text)) {
            parts.push(text);
        }
        next = error.source();
    }
    parts.join(": ")
}

/// AWS's answers to a request signed for another region than the bucket's.
fn refuses_region(failure: &Failure) -> bool {
    failure.status == Some(301)
        || matches!(
            failure.code.as_deref(),
            Some(
                "PermanentRedirect"
                    | "AuthorizationHeaderMalformed"
                    | "IllegalLocationConstraintException"
                    | "InvalidRegion"
            )
        )
}

fn is_precondition_failure(failure: &Failure) -> bool {
    // 412 when the key exists; 409 ConditionalRequestConflict when a concurrent write of the
    // same key is in progress (the caller re-checks either way).
    failure.status == Some(412)
        || failure.code.as_deref() == Some("PreconditionFailed")
        || failure.code.as_deref() == Some("ConditionalRequestConflict")
}

impl S3Store {
    /// Builds a client from the standard AWS configuration chain plus rockbuild's settings.
    pub fn open(bucket: &str, prefix: &str, settings: &S3Settings) -> Result<S3Store, StoreError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("s3")
            .enable_all()
            .build()
            .map_err(StoreError::Runtime)?;
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
        if let Some(region) = &settings.region {
            loader = loader.region(Region::new(region.clone()));
        }
        if let Some(endpoint) = &settings.endpoint {
            loader = loader.endpoint_url(endpoint);
        }
        let sdk_config = runtime.block_on(loader.load());
        let mut builder =
            aws_sdk_s3::config::Builder::from(&sdk_config).force_path_style(settings.path_style);
        let region_defaulted = sdk_config.region().is_none();
        if region_defaulted {
            // S3-compatible servers rarely care; AWS needs one for signing.
            tracing::debug!("no S3 region given or configured: signing for {DEFAULT_REGION}");
            builder = builder.region(Region::new(DEFAULT_REGION));
        }
        builder = waits::configure(builder, settings);
        if settings.checksums == S3ChecksumMode::WhenRequired {
            builder = builder
                .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
                .response_checksum_validation(ResponseChecksumValidation::WhenRequired);
        }
        Ok(S3Store {
            client: Client::from_conf(builder.build()),
            runtime: Arc::new(runtime),
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
            settings: settings.clone(),
            region_defaulted,
            credentials: sdk_config.credentials_provider(),
        })
    }

    /// Asks the credentials chain once, before any request: without credentials every request
    /// would fail with the chain's last provider's complaint, which rarely names the fix.
    pub fn check_credentials(&self) -> Result<(), StoreError> {
        use aws_sdk_s3::config::ProvideCredentials as _;
        let no_credentials = |cause: String| StoreError::NoCredentials {
            store: self.url(),
            cause,
        };
        let provider = self.credentials.as_ref().ok_or_else(|| {
            no_credentials("the AWS configuration has no credentials provider".into())
        })?;
        self.runtime
            .block_on(provider.provide_credentials())
            .map(|_| ())
            .map_err(|error| no_credentials(crate::redact::redact_url(&causes(&error))))
    }

    fn full_key(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}/{key}", self.prefix)
        }
    }

    /// `x-amz-copy-source` for one of our objects: `bucket/key`, percent-encoded.
    fn copy_source(&self, key: &str) -> String {
        format!("{}/{}", self.bucket, encode_path(&self.full_key(key)))
    }

    fn checksums(&self) -> bool {
        self.settings.checksums == S3ChecksumMode::WhenSupported
    }

    fn error(&self, op: &'static str, key: &str, failure: Failure) -> StoreError {
        let message = if failure.unanswered {
            waits::describe_wait(self.settings.timeout, self.settings.attempts)
        } else if self.region_defaulted && refuses_region(&failure) {
            format!(
                "{}; no S3 region was given (--s3-region, AWS_REGION or the AWS profile), so the request was signed for {DEFAULT_REGION}",
                failure.message
            )
        } else {
            failure.message
        };
        StoreError::Backend {
            store: self.url(),
            op,
            key: key.to_string(),
            message,
            transient: failure.transient,
        }
    }

    /// A body that broke off while streaming: worth another attempt.
    fn stream_error(
        &self,
        op: &'static str,
        key: &str,
        error: impl std::fmt::Display,
    ) -> StoreError {
        StoreError::Backend {
            store: self.url(),
            op,
            key: key.to_string(),
            message: error.to_string(),
            transient: true,
        }
    }

    fn io_error(&self, op: &'static str, key: &str, error: impl std::fmt::Display) -> StoreError {
        StoreError::Backend {
            store: self.url(),
            op,
            key: key.to_string(),
            message: error.to_string(),
            transient: false,
        }
    }

    /// The object at `key`; `None` when it does not exist (a 404, or `NoSuchKey` from servers
    /// that answer a missing key with another status).
    async fn get_object(&self, key: &str) -> Result<Option<GetObjectOutput>, StoreError> {
        match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(self.full_key(key))
            .send()
            .await
        {
            Ok(output) => Ok(Some(output)),
            Err(error) => {
                let failure = failure(&error);
                if failure.status == Some(404) || failure.code.as_deref() == Some("NoSuchKey") {
                    return Ok(None);
                }
                Err(self.error("read", key, failure))
            }
        }
    }

    async fn read_all(&self, key: &str) -> Result<ByteStream, StoreError> {
        match self.get_object(key).await? {
            Some(output) => Ok(output.body),
            None => Err(StoreError::NotFound {
                store: self.url(),
                key: key.to_string(),
            }),
        }
    }

    async fn put_single(
        &self,
        key: &str,
        body: Body<'_>,
        options: &PutOptions,
    ) -> Result<PutResult, StoreError> {
        let stream = match body {
            Body::File(path) => ByteStream::from_path(path)
                .await
                .map_err(|e| self.io_error("upload", key, format!("{}: {e}", path.display())))?,
            Body::Bytes(bytes) => ByteStream::from(bytes.to_vec()),
        };
        let mut request = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(self.full_key(key))
            .body(stream)
            .set_content_type(options.content_type.map(String::from))
            .set_cache_control(options.cache_control.map(String::from));
        if let Some(sha) = &options.sha256 {
            request = request.metadata(SHA256_METADATA, sha);
            if self.checksums() {
                request = request.set_checksum_sha256(hex_to_base64(sha));
            }
        }
        if options.if_absent {
            request = request.if_none_match("*");
        }
        let sent = request.send().await.map(drop).map_err(|e| failure(&e));
        self.conditional_outcome(sent, options.if_absent, "upload", key)
    }

    /// The outcome of a write that may carry `If-None-Match: *`: a refused precondition means
    /// the object is already there (another writer won the race), not a failure.
    fn conditional_outcome(
        &self,
        sent: Result<(), Failure>,
        if_absent: bool,
        op: &'static str,
        key: &str,
    ) -> Result<PutResult, StoreError> {
        match sent {
            Ok(()) => Ok(PutResult::Written {
                verified_sha256: None,
            }),
            Err(failure) if if_absent && is_precondition_failure(&failure) => Ok(PutResult::Exists),
            Err(failure) => Err(self.error(op, key, failure)),
        }
    }

    /// Starts a multipart upload carrying the object's metadata; returns its id.
    async fn copy_single(
        &self,
        source: &S3Store,
        from_key: &str,
        to_key: &str,
        options: &PutOptions,
    ) -> Result<PutResult, StoreError> {
        let mut request = self
            .client
            .copy_object()
            .bucket(&self.bucket)
            .key(self.full_key(to_key))
            .copy_source(source.copy_source(from_key))
            .metadata_directive(MetadataDirective::Replace)
            .set_content_type(options.content_type.map(String::from))
            .set_cache_control(options.cache_control.map(String::from));
        if let Some(sha) = &options.sha256 {
            request = request.metadata(SHA256_METADATA, sha);
        }
        if self.checksums() {
            // The server computes the SHA-256 of the bytes it copied: the copy's verification.
            request = request.checksum_algorithm(ChecksumAlgorithm::Sha256);
        }
        if options.if_absent {
            request = request.if_none_match("*");
        }
        match request.send().await {
            Ok(output) => Ok(PutResult::Written {
                verified_sha256: output
                    .copy_object_result()
                    .and_then(|r| r.checksum_sha256())
                    .and_then(base64_to_hex),
            }),
            Err(error) => {
                let failure = failure(&error);
                if options.if_absent && is_precondition_failure(&failure) {
                    return Ok(PutResult::Exists);
                }
                if failure.status == Some(404) {
                    return Err(StoreError::NotFound {
                        store: source.url(),
                        key: from_key.to_string(),
                    });
                }
                Err(self.error("copy", to_key, failure))
            }
        }
    }

    /// True when both stores talk to the same server, so a copy can stay server-side.
    fn same_service(&self, other: &S3Store) -> bool {
        self.settings.endpoint == other.settings.endpoint
    }

    /// A small object's bytes and ETag; `None` when it does not exist (the lease object).
    pub(in crate::store) fn get_tagged(
        &self,
        key: &str,
    ) -> Result<Option<(Vec<u8>, String)>, StoreError> {
        self.runtime.block_on(async {
            let Some(output) = self.get_object(key).await? else {
                return Ok(None);
            };
            let etag = output.e_tag().unwrap_or_default().to_string();
            let bytes = output
                .body
                .collect()
                .await
                .map_err(|e| self.stream_error("read", key, e))?;
            Ok(Some((bytes.into_bytes().to_vec(), etag)))
        })
    }

    /// Writes a small object only where it does not exist (`if_match: None`, sent as
    /// `If-None-Match: *`) or only while its ETag is still `if_match`; `false` when the
    /// server refused the condition (someone else wrote first).
    pub(in crate::store) fn put_conditional(
        &self,
        key: &str,
        bytes: &[u8],
        if_match: Option<&str>,
    ) -> Result<bool, StoreError> {
        self.runtime.block_on(async {
            let request = self
                .client
                .put_object()
                .bucket(&self.bucket)
                .key(self.full_key(key))
                .body(ByteStream::from(bytes.to_vec()))
                .content_type("application/json")
                .cache_control("no-store");
            let request = match if_match {
                None => request.if_none_match("*"),
                Some(etag) => request.if_match(etag),
            };
            match request.send().await {
                Ok(_) => Ok(true),
                Err(error) => {
                    let failure = failure(&error);
                    if is_precondition_failure(&failure) {
                        return Ok(false);
                    }
                    Err(self.error("write", key, failure))
                }
            }
        })
    }
}

impl Storage for S3Store {
    fn url(&self) -> String {
        let location = if self.prefix.is_empty() {
            format!("s3://{}", self.bucket)
        } else {
            format!("s3://{}/{}", self.bucket, self.prefix)
        };
        match &self.settings.endpoint {
            Some(endpoint) => format!("{location} (at {})", crate::redact::redact_url(endpoint)),
            None => location,
        }
    }

    fn list(&self) -> Result<Vec<ObjectInfo>, StoreError> {
        let list_prefix = (!self.prefix.is_empty()).then(|| format!("{}/", self.prefix));
        self.runtime.block_on(async {
            let mut pages = self
                .client
                .list_objects_v2()
                .bucket(&self.bucket)
                .set_prefix(list_prefix.clone())
                .into_paginator()
                .send();
            let mut out = Vec::new();
            while let Some(page) = pages.next().await {
                let page = page.map_err(|e| self.error("list", "", failure(&e)))?;
                for object in page.contents() {
                    let Some(full) = object.key() else { continue };
                    let key = match &list_prefix {
                        Some(prefix) => full.strip_prefix(prefix.as_str()).unwrap_or(full),
                        None => full,
                    };
                    if key.is_empty() || key.ends_with('/') {
                        continue; // "directory" markers some tools create
                    }
                    let size = object
                        .size()
                        .and_then(|s| u64::try_from(s).ok())
                        .unwrap_or(0);
                    out.push(ObjectInfo {
                        key: key.to_string(),
                        size,
                        sha256: None,
                    });
                }
            }
            out.sort_by(|a, b| a.key.cmp(&b.key));
            Ok(out)
        })
    }

    fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StoreError> {
        self.runtime.block_on(async {
            let mut request = self
                .client
                .head_object()
                .bucket(&self.bucket)
                .key(self.full_key(key));
            if self.checksums() {
                request = request.checksum_mode(ChecksumMode::Enabled);
            }
            match request.send().await {
                Ok(output) => {
                    let recorded = output
                        .metadata()
                        .and_then(|m: &HashMap<String, String>| m.get(SHA256_METADATA))
                        .and_then(|sha| valid_sha256(sha));
                    let sha256 =
                        recorded.or_else(|| output.checksum_sha256().and_then(base64_to_hex));
                    let size = output
                        .content_length()
                        .and_then(|s| u64::try_from(s).ok())
                        .unwrap_or(0);
                    Ok(Some(ObjectInfo {
                        key: key.to_string(),
                        size,
                        sha256,
                    }))
                }
                Err(error) => {
                    let failure = failure(&error);
                    if failure.status == Some(404) {
                        return Ok(None);
                    }
                    Err(self.error("read", key, failure))
                }
            }
        })
    }

    fn content_sha256(&self, key: &str) -> Result<String, StoreError> {
        self.runtime.block_on(async {
            let mut body = self.read_all(key).await?;
            let mut hasher = Sha256::new();
            while let Some(chunk) = body
                .try_next()
                .await
                .map_err(|e| self.stream_error("read", key, e))?
            {
                hasher.update(&chunk);
            }
            Ok(hex::encode(hasher.finalize()))
        })
    }

    fn get(&self, key: &str) -> Result<Vec<u8>, StoreError> {
        self.runtime.block_on(async {
            let body = self.read_all(key).await?;
            let bytes = body
                .collect()
                .await
                .map_err(|e| self.stream_error("read", key, e))?;
            Ok(bytes.into_bytes().to_vec())
        })
    }

    fn get_tail(&self, key: &str, size: u64, len: u64) -> Result<Vec<u8>, StoreError> {
        if size == 0 || len == 0 {
            return Ok(Vec::new());
        }
        let start = size.saturating_sub(len);
        self.runtime.block_on(async {
            let output = self
                .client
                .get_object()
                .bucket(&self.bucket)
                .key(self.full_key(key))
                .range(format!("bytes={start}-{}", size - 1))
                .send()
                .await
                .map_err(|e| self.error("read", key, failure(&e)))?;
            let bytes = output
                .body
                .collect()
                .await
                .map_err(|e| self.stream_error("read", key, e))?;
            Ok(bytes.into_bytes().to_vec())
        })
    }

    fn download(&self, key: &str, to: &Path) -> Result<(), StoreError> {
        self.runtime.block_on(async {
            let mut body = self.read_all(key).await?;
            let mut file = tokio::fs::File::create(to)
                .await
                .map_err(|e| self.io_error("download", key, format!("{}: {e}", to.display())))?;
            loop {
                let chunk = body
                    .try_next()
                    .await
                    .map_err(|e| self.stream_error("download", key, e))?;
                let Some(chunk) = chunk else { break };
                file.write_all(&chunk).await.map_err(|e| {
                    self.io_error("download", key, format!("{}: {e}", to.display()))
                })?;
            }
            file.sync_all()
                .await
                .map_err(|e| self.io_error("download", key, format!("{}: {e}", to.display())))
        })
    }

    fn put(
        &self,
        key: &str,
        body: Body<'_>,
        options: &PutOptions,
    ) -> Result<PutResult, StoreError> {
        super::check_key(key).map_err(|reason| StoreError::BadKey {
            store: self.url(),
            key: key.to_string(),
            reason,
        })?;
        let size = body.len().map_err(|e| self.io_error("upload", key, e))?;
        self.runtime.block_on(async {
            match body {
                Body::File(path) if size > self.settings.multipart_threshold => {
                    self.put_multipart(key, path, size, options).await
                }
                _ => self.put_single(key, body, options).await,
            }
        })
    }

    fn copy_from(
        &self,
        source: &dyn Storage,
        from_key: &str,
        to_key: &str,
        size: u64,
        options: &PutOptions,
    ) -> Result<PutResult, StoreError> {
        super::check_key(to_key).map_err(|reason| StoreError::BadKey {
            store: self.url(),
            key: to_key.to_string(),
            reason,
        })?;
        if let Some(source) = source.as_any().downcast_ref::<S3Store>()
            && self.same_service(source)
        {
            return self.runtime.block_on(async {
                if size > self.settings.multipart_threshold {
                    self.copy_multipart(source, from_key, to_key, size, options)
                        .await
                } else {
                    self.copy_single(source, from_key, to_key, options).await
                }
            });
        }
        if let Some(path) = source.local_path(from_key) {
            return self.put(to_key, Body::File(&path), options);
        }
        let temp = tempfile::NamedTempFile::new().map_err(|e| self.io_error("copy", to_key, e))?;
        source.download(from_key, temp.path())?;
        self.put(to_key, Body::File(temp.path()), options)
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.runtime.block_on(async {
            self.client
                .delete_object()
                .bucket(&self.bucket)
                .key(self.full_key(key))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| self.error("delete", key, failure(&e)))
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, dead_code)] // shared with the integration tests, which use std::fs and all of it
#[path = "../../../tests/common/s3.rs"]
mod test_server;

#[cfg(test)]
mod tests {
    use super::test_server::{S3Server, WriteRule};
    use super::*;

    const OCTET: &str = "application/octet-stream";
    use crate::store::{LocalDir, Outcome, copy_immutable, put_immutable};

    const WHEEL: &str = "torch/torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl";

    fn settings(server: &S3Server, checksums: S3ChecksumMode, threshold: u64) -> S3Settings {
        S3Settings {
            endpoint: Some(server.endpoint.clone()),
            region: Some("us-east-1".into()),
            path_style: true,
            checksums,
            multipart_threshold: threshold,
            timeout: std::time::Duration::from_secs(20),
            attempts: 2,
        }
    }

    /// The server's credentials reach the SDK through its standard chain; tests cannot set
    /// process variables (house rule), so they hand the client static credentials instead.
    fn open(server: &S3Server, prefix: &str, checksums: S3ChecksumMode, threshold: u64) -> S3Store {
        let mut store = S3Store::open(
            test_server::BUCKET,
            prefix,
            &settings(server, checksums, threshold),
        )
        .expect("open");
        let config = store
            .client
            .config()
            .to_builder()
            .credentials_provider(aws_sdk_s3::config::Credentials::new(
                test_server::ACCESS_KEY,
                test_server::SECRET_KEY,
                None,
                None,
                "test",
            ))
            .build();
        store.client = Client::from_conf(config);
        store
    }

    /// Bytes that do not repeat with a short period (so a misplaced part would show).
    fn payload(len: usize) -> Vec<u8> {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            })
            .collect()
    }

    #[test]
    fn plus_keys_round_trip_and_never_overwrite() {
        let dir = tempfile::tempdir().expect("tempdir");
        let server = S3Server::start(&dir.path().join("s3"));
        for mode in [S3ChecksumMode::WhenSupported, S3ChecksumMode::WhenRequired] {
            let prefix = format!("staging-{mode:?}");
            let store = open(&server, &prefix, mode, 64 << 20);
            let sha = crate::fsutil::sha256_hex(b"wheel bytes");
            assert_eq!(
                put_immutable(&store, WHEEL, Body::Bytes(b"wheel bytes"), &sha, OCTET)
                    .expect("put"),
                Outcome::Created
            );
            // The key keeps its `+`: the request path carried it as %2B, not as a space.
            let on_disk = server.object_path(&format!("{prefix}/{WHEEL}"));
            assert_eq!(fs_err::read(&on_disk).expect("object file"), b"wheel bytes");
            let head = store.head(WHEEL).expect("head").expect("exists");
            assert_eq!(
                head,
                ObjectInfo {
                    key: WHEEL.into(),
                    size: 11,
                    sha256: Some(sha.clone())
                }
            );
            assert_eq!(
                store.list().expect("list"),
                vec![ObjectInfo {
                    key: WHEEL.into(),
                    size: 11,
                    sha256: None
                }]
            );
            assert_eq!(store.get(WHEEL).expect("get"), b"wheel bytes");
            assert_eq!(store.content_sha256(WHEEL).expect("hash"), sha);

            assert_eq!(
                put_immutable(&store, WHEEL, Body::Bytes(b"wheel bytes"), &sha, OCTET)
                    .expect("again"),
                Outcome::Unchanged
            );
            let other = crate::fsutil::sha256_hex(b"other bytes");
            let error = put_immutable(&store, WHEEL, Body::Bytes(b"other bytes"), &other, OCTET)
                .expect_err("conflict");
            assert!(matches!(error, StoreError::Conflict { .. }), "{error}");
            // The backend's conditional write is the backstop when a HEAD raced another writer.
            let options = PutOptions {
                if_absent: true,
                ..PutOptions::default()
            };
            assert_eq!(
                store
                    .put(WHEEL, Body::Bytes(b"other bytes"), &options)
                    .expect("put"),
                PutResult::Exists
            );
            assert_eq!(fs_err::read(&on_disk).expect("object file"), b"wheel bytes");
            assert!(store.head("torch/absent.whl").expect("head").is_none());
            assert!(matches!(
                store.get("torch/absent.whl"),
                Err(StoreError::NotFound { .. })
            ));
        }
    }

    #[test]
    fn foreign_objects_without_metadata_are_compared_by_content() {
        let dir = tempfile::tempdir().expect("tempdir");
        let server = S3Server::start(&dir.path().join("s3"));
        server.plant(&format!("release/{WHEEL}"), b"uploaded by someone else");
        let store = open(&server, "release", S3ChecksumMode::WhenSupported, 64 << 20);
        assert_eq!(
            store.head(WHEEL).expect("head").expect("exists").sha256,
            None
        );
        let same = crate::fsutil::sha256_hex(b"uploaded by someone else");
        assert_eq!(
            put_immutable(
                &store,
                WHEEL,
                Body::Bytes(b"uploaded by someone else"),
                &same,
                OCTET
            )
            .expect("same"),
            Outcome::Unchanged
        );
        let error = put_immutable(
            &store,
            WHEEL,
            Body::Bytes(b"new"),
            &crate::fsutil::sha256_hex(b"new"),
            OCTET,
        )
        .expect_err("differs");
        assert!(
            error.to_string().contains(&format!("stored sha256 {same}")),
            "{error}"
        );
    }

    #[test]
    fn copies_single_and_multipart_and_across_backends() {
        let dir = tempfile::tempdir().expect("tempdir");
        let server = S3Server::start(&dir.path().join("s3"));
        let big = payload(12 << 20);
        let big_sha = crate::fsutil::sha256_hex(&big);
        let big_file = dir.path().join("big.whl");
        fs_err::write(&big_file, &big).expect("write");
        let big_key = "torch/torch-2.10.0+rocm7.1.0-cp311-cp311-linux_x86_64.whl";
        for mode in [S3ChecksumMode::WhenSupported, S3ChecksumMode::WhenRequired] {
            let (from, to) = (format!("staging-{mode:?}"), format!("release-{mode:?}"));
            // A 1 MiB threshold sends the 12 MiB wheel through multipart upload and copy
            // (5 MiB parts, the S3 minimum).
            let staging = open(&server, &from, mode, 1 << 20);
            let release = open(&server, &to, mode, 1 << 20);
            assert_eq!(
                put_immutable(&staging, big_key, Body::File(&big_file), &big_sha, OCTET)
                    .expect("multipart put"),
                Outcome::Created
            );
            assert_eq!(
                staging
                    .head(big_key)
                    .expect("head")
                    .expect("exists")
                    .sha256
                    .as_deref(),
                Some(big_sha.as_str())
            );
            let small_sha = crate::fsutil::sha256_hex(b"small");
            put_immutable(&staging, WHEEL, Body::Bytes(b"small"), &small_sha, OCTET).expect("put");

            for (key, sha) in [(big_key, &big_sha), (WHEEL, &small_sha)] {
                let info = staging.head(key).expect("head").expect("exists");
                assert_eq!(
                    copy_immutable(&release, &staging, key, key, &info, sha, OCTET).expect("copy"),
                    Outcome::Created
                );
                assert_eq!(
                    copy_immutable(&release, &staging, key, key, &info, sha, OCTET).expect("again"),
                    Outcome::Unchanged
                );
                assert_eq!(
                    release
                        .head(key)
                        .expect("head")
                        .expect("exists")
                        .sha256
                        .as_deref(),
                    Some(sha.as_str())
                );
            }
            assert_eq!(
                fs_err::read(server.object_path(&format!("{to}/{big_key}"))).expect("copied"),
                big
            );

            // S3 -> local directory and local directory -> S3.
            let local = LocalDir::new(dir.path().join(format!("local-{mode:?}")));
            let info = release.head(big_key).expect("head").expect("exists");
            assert_eq!(
                copy_immutable(&local, &release, big_key, big_key, &info, &big_sha, OCTET)
                    .expect("to local"),
                Outcome::Created
            );
            assert_eq!(local.content_sha256(big_key).expect("hash"), big_sha);
            let back = open(&server, &format!("back-{mode:?}"), mode, 1 << 20);
            let info = local.head(big_key).expect("head").expect("exists");
            assert_eq!(
                copy_immutable(&back, &local, big_key, big_key, &info, &big_sha, OCTET)
                    .expect("to s3"),
                Outcome::Created
            );
            assert_eq!(back.content_sha256(big_key).expect("hash"), big_sha);
        }
    }

    #[test]
    fn refused_writes_are_reported_with_the_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let server = S3Server::start(&dir.path().join("s3"));
        let store = open(&server, "release", S3ChecksumMode::WhenSupported, 64 << 20);
        server.set_write_rule("index.html", WriteRule::Deny);
        let error =
            crate::store::put_page(&store, "index.html", "<html/>", "text/html; charset=utf-8")
                .expect_err("denied");
        let text = error.to_string();
        assert!(
            text.starts_with(&format!(
                "s3://wheels/release (at {}): cannot upload 'index.html'",
                server.endpoint
            )),
            "{text}"
        );
        assert!(text.contains("AccessDenied"), "{text}");
        assert!(!error.is_transient());
    }
}
