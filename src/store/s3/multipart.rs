//! Multipart transfers: uploads and copies above the threshold go in parts (S3 refuses single
//! requests above 5 GiB), several at once; a transfer that fails part way is aborted so no
//! orphaned parts stay behind.

use std::path::Path;

use aws_sdk_s3::primitives::{ByteStream, Length};
use aws_sdk_s3::types::{ChecksumAlgorithm, CompletedMultipartUpload, CompletedPart};

use super::{Failure, PutOptions, PutResult, S3Store, SHA256_METADATA, StoreError, failure};

/// S3 refuses multipart parts below 5 MiB (except the last) and above 5 GiB, and uploads of
/// more than 10 000 parts.
const MIN_PART: u64 = 5 << 20;
const MAX_PART: u64 = 5 << 30;
const MAX_PARTS: u64 = 10_000;
/// Parts of one object in flight at once.
const PART_CONCURRENCY: usize = 4;

/// Part size for a multipart transfer of `size` bytes: the threshold, clamped to what S3
/// accepts, grown so no more than 10 000 parts are needed.
pub fn part_size(size: u64, threshold: u64) -> u64 {
    threshold
        .clamp(MIN_PART, MAX_PART)
        .max(size.div_ceil(MAX_PARTS))
}

/// Byte ranges (inclusive start, length) of the parts.
fn parts(size: u64, part: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut offset = 0;
    while offset < size {
        let length = part.min(size - offset);
        out.push((offset, length));
        offset += length;
    }
    out
}

impl S3Store {
    async fn create_multipart(
        &self,
        key: &str,
        options: &PutOptions,
    ) -> Result<String, StoreError> {
        let mut request = self
            .client
            .create_multipart_upload()
            .bucket(&self.bucket)
            .key(self.full_key(key))
            .set_content_type(options.content_type.map(String::from))
            .set_cache_control(options.cache_control.map(String::from));
        if let Some(sha) = &options.sha256 {
            request = request.metadata(SHA256_METADATA, sha);
        }
        if self.checksums() {
            request = request.checksum_algorithm(ChecksumAlgorithm::Sha256);
        }
        let output = request
            .send()
            .await
            .map_err(|e| self.error("start a multipart transfer of", key, failure(&e)))?;
        output.upload_id().map(String::from).ok_or_else(|| {
            self.io_error(
                "start a multipart transfer of",
                key,
                "the server returned no upload id",
            )
        })
    }

    async fn complete_multipart(
        &self,
        key: &str,
        upload_id: &str,
        mut completed: Vec<CompletedPart>,
        if_absent: bool,
    ) -> Result<PutResult, StoreError> {
        completed.sort_by_key(|part| part.part_number());
        let mut request = self
            .client
            .complete_multipart_upload()
            .bucket(&self.bucket)
            .key(self.full_key(key))
            .upload_id(upload_id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(completed))
                    .build(),
            );
        if if_absent {
            request = request.if_none_match("*");
        }
        let sent = request.send().await.map(drop).map_err(|e| failure(&e));
        if sent.is_err() {
            self.abort(key, upload_id).await;
        }
        self.conditional_outcome(sent, if_absent, "complete the multipart transfer of", key)
    }

    /// Completes an upload whose parts all succeeded, or aborts it so no orphaned parts are
    /// left (and billed) behind.
    async fn finish_multipart(
        &self,
        op: &'static str,
        key: &str,
        upload_id: &str,
        parts: Result<Vec<CompletedPart>, Failure>,
        if_absent: bool,
    ) -> Result<PutResult, StoreError> {
        match parts {
            Ok(completed) => {
                self.complete_multipart(key, upload_id, completed, if_absent)
                    .await
            }
            Err(failure) => {
                self.abort(key, upload_id).await;
                Err(self.error(op, key, failure))
            }
        }
    }

    async fn abort(&self, key: &str, upload_id: &str) {
        let result = self
            .client
            .abort_multipart_upload()
            .bucket(&self.bucket)
            .key(self.full_key(key))
            .upload_id(upload_id)
            .send()
            .await;
        if let Err(error) = result {
            tracing::warn!(
                "could not abort the multipart upload of {key}: {}",
                super::in_words(&error)
            );
        }
    }

    /// Uploads a large file in parts, several in flight at once.
    pub(super) async fn put_multipart(
        &self,
        key: &str,
        path: &Path,
        size: u64,
        options: &PutOptions,
    ) -> Result<PutResult, StoreError> {
        let upload_id = self.create_multipart(key, options).await?;
        let ranges = parts(size, part_size(size, self.settings.multipart_threshold));
        let result = self
            .run_parts(&ranges, |number, offset, length| {
                let client = self.client.clone();
                let (bucket, full_key, upload_id, path) = (
                    self.bucket.clone(),
                    self.full_key(key),
                    upload_id.clone(),
                    path.to_path_buf(),
                );
                let checksums = self.checksums();
                async move {
                    let body = ByteStream::read_from()
                        .path(&path)
                        .offset(offset)
                        .length(Length::Exact(length))
                        .build()
                        .await
                        .map_err(|e| Failure {
                            status: None,
                            code: None,
                            message: e.to_string(),
                            transient: false,
                            unanswered: false,
                        })?;
                    let mut request = client
                        .upload_part()
                        .bucket(bucket)
                        .key(full_key)
                        .upload_id(upload_id)
                        .part_number(number)
                        .body(body);
                    if checksums {
                        request = request.checksum_algorithm(ChecksumAlgorithm::Sha256);
                    }
                    let output = request.send().await.map_err(|e| failure(&e))?;
                    Ok(CompletedPart::builder()
                        .part_number(number)
                        .set_e_tag(output.e_tag().map(String::from))
                        .set_checksum_sha256(output.checksum_sha256().map(String::from))
                        .build())
                }
            })
            .await;
        self.finish_multipart("upload", key, &upload_id, result, options.if_absent)
            .await
    }

    /// Copies a large object in parts with UploadPartCopy (server side).
    pub(super) async fn copy_multipart(
        &self,
        source: &S3Store,
        from_key: &str,
        to_key: &str,
        size: u64,
        options: &PutOptions,
    ) -> Result<PutResult, StoreError> {
        let upload_id = self.create_multipart(to_key, options).await?;
        let ranges = parts(size, part_size(size, self.settings.multipart_threshold));
        let copy_source = source.copy_source(from_key);
        let result = self
            .run_parts(&ranges, |number, offset, length| {
                let request = self
                    .client
                    .upload_part_copy()
                    .bucket(&self.bucket)
                    .key(self.full_key(to_key))
                    .upload_id(&upload_id)
                    .part_number(number)
                    .copy_source(&copy_source)
                    .copy_source_range(format!("bytes={offset}-{}", offset + length - 1));
                async move {
                    let output = request.send().await.map_err(|e| failure(&e))?;
                    let result = output.copy_part_result();
                    Ok(CompletedPart::builder()
                        .part_number(number)
                        .set_e_tag(result.and_then(|r| r.e_tag()).map(String::from))
                        .set_checksum_sha256(
                            result.and_then(|r| r.checksum_sha256()).map(String::from),
                        )
                        .build())
                }
            })
            .await;
        self.finish_multipart("copy", to_key, &upload_id, result, options.if_absent)
            .await
    }

    /// Runs one future per part, at most [`PART_CONCURRENCY`] at a time; the first failure
    /// stops the rest.
    async fn run_parts<F, Fut>(
        &self,
        ranges: &[(u64, u64)],
        make: F,
    ) -> Result<Vec<CompletedPart>, Failure>
    where
        F: Fn(i32, u64, u64) -> Fut,
        Fut: std::future::Future<Output = Result<CompletedPart, Failure>> + Send + 'static,
    {
        let mut tasks = tokio::task::JoinSet::new();
        let mut completed = Vec::with_capacity(ranges.len());
        let mut next = 0;
        loop {
            while next < ranges.len() && tasks.len() < PART_CONCURRENCY {
                let (offset, length) = ranges[next];
                let number = i32::try_from(next + 1).unwrap_or(i32::MAX);
                tasks.spawn(make(number, offset, length));
                next += 1;
            }
            let Some(joined) = tasks.join_next().await else {
                break;
            };
            let part = joined.map_err(|e| Failure {
                status: None,
                code: None,
                message: e.to_string(),
                transient: false,
                unanswered: false,
            })?;
            completed.push(part?);
        }
        Ok(completed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_sizes_respect_s3_limits() {
        assert_eq!(
            part_size(12 << 20, 1 << 20),
            MIN_PART,
            "below 5 MiB is raised"
        );
        assert_eq!(part_size(12 << 30, 4 << 30), 4 << 30);
        assert_eq!(
            part_size(1 << 40, 8 << 30),
            MAX_PART,
            "above 5 GiB is lowered"
        );
        assert_eq!(
            part_size(100_000 * MIN_PART, MIN_PART),
            10 * MIN_PART,
            "at most 10 000 parts"
        );
        assert_eq!(parts(12, 5), vec![(0, 5), (5, 5), (10, 2)]);
        assert_eq!(parts(10, 5), vec![(0, 5), (5, 5)]);
    }
}
