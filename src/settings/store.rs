//! The store flags every publishing verb shares (`stage`, `index`, `promote`).

use std::time::Duration;

use crate::cli::StoreArgs;
use crate::store::lease::LeaseSettings;
use crate::store::{S3Settings, StoreSettings};

/// How stores are reached: S3 client settings and transfer parallelism.
pub fn store_settings(args: StoreArgs) -> StoreSettings {
    let StoreArgs {
        s3_endpoint,
        s3_region,
        s3_path_style,
        s3_checksums,
        multipart_threshold,
        transfer_jobs,
        transfer_attempts,
        s3_timeout,
        s3_attempts,
        break_lease,
        lease_ttl,
        lease_wait,
    } = args;
    // A workflow passes an unset repository variable through as "": AWS's defaults.
    let given = |value: Option<String>| value.filter(|v| !v.trim().is_empty());
    StoreSettings {
        s3: S3Settings {
            endpoint: given(s3_endpoint),
            region: given(s3_region),
            path_style: s3_path_style,
            checksums: s3_checksums,
            multipart_threshold,
            timeout: Duration::from_secs(s3_timeout),
            attempts: s3_attempts,
        },
        lease: LeaseSettings {
            break_lease,
            ttl: Duration::from_secs(lease_ttl),
            wait: Duration::from_secs(lease_wait),
        },
        jobs: transfer_jobs.max(1),
        attempts: transfer_attempts.max(1),
    }
}
