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
        let why = if error.is_timeout_error() {
            format!("no answer within {}s", self.timeout.as_secs())
        } else if error.is_connector_error() {
            "could not connect".to_string()
        } else {
            return Ok(());
        };
        let request = context
            .request()
            .map(|r| format!("{} {}", r.method(), crate::redact::redact_url(r.uri())))
            .unwrap_or_else(|| "request".into());
        tracing::warn!(
            "S3 {request}: {why}; an attempt failed (at most {} in all, --s3-attempts)",
            self.attempts
        );
        Ok(())
    }
}
