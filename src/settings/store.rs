//! The store flags every publishing verb shares (`stage`, `index`, `promote`).

use crate::cli::StoreArgs;
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
        },
        jobs: transfer_jobs.max(1),
        attempts: transfer_attempts.max(1),
    }
}
