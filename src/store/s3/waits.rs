//! Bounded waits on S3: a connect timeout and a read timeout per attempt, a fixed number of
//! attempts, a line for each failed attempt saying what it waited for, and a final error in
//! words instead of the SDK's debug rendering. An endpoint that accepts connections and never
//! answers ends after `attempts × timeout` (plus backoff), not after the SDK's defaults.

use std::time::Duration;

use aws_sdk_s3::config::interceptors::FinalizerInterceptorContextRef;
use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::config::{ConfigBag, Intercept, RuntimeComponents};

use super::S3Settings;

/// The SDK settings for `settings`' timeout and attempts.
pub(super) fn configure(
    builder: aws_sdk_s3::config::Builder,
    settings: &S3Settings,
) -> aws_sdk_s3::config::Builder {
    builder
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(settings.timeout)
                .read_timeout(settings.timeout)
                .build(),
        )
        .retry_config(RetryConfig::standard().with_max_attempts(settings.attempts))
        .interceptor(AttemptNotice {
            endpoint: settings.endpoint.as_deref().map_or_else(
                || "S3".to_string(),
                |e| format!("S3 endpoint {}", crate::redact::redact_url(e)),
            ),
            timeout: settings.timeout,
            attempts: settings.attempts,
        })
}

/// How a timed-out or unreachable request is described in the final error.
pub(super) fn describe_wait(timeout: Duration, attempts: u32) -> String {
    format!(
        "no answer within {}s, {attempts} attempt{} (--s3-timeout, --s3-attempts); \
         check --s3-endpoint and that the server is up and reachable",
        timeout.as_secs(),
        crate::ui::plural(attempts as usize)
    )
}

/// Says, for each attempt that timed out or could not connect, what it waited for.
#[derive(Debug)]
struct AttemptNotice {
    /// `S3 endpoint http://host:port`, or `S3` for AWS itself.
    endpoint: String,
    timeout: Duration,
    attempts: u32,
}

impl Intercept for AttemptNotice {
    fn name(&self) -> &'static str {
        "rockbuild-attempt-notice"
    }

    fn read_after_attempt(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let Some(Err(error)) = context.output_or_error() else {
            return Ok(());
        };
        let timed_out =
            error.is_timeout_error() || error.as_connector_error().is_some_and(|c| c.is_timeout());
        let why = if timed_out {
            format!(
                "no answer within {}s (--s3-timeout)",
                self.timeout.as_secs()
            )
        } else if let Some(connector) = error.as_connector_error() {
            match connector.is_io() {
                true => "the connection failed or was dropped".to_string(),
                false => "could not connect".to_string(),
            }
        } else {
            return Ok(());
        };
        tracing::warn!(
            "{}: {why}; a request attempt failed (at most {} attempts per request, --s3-attempts)",
            self.endpoint,
            self.attempts
        );
        Ok(())
    }
}
