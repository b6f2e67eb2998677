//! `rockbuild index URL`: rewrite the index pages of a store prefix from what is stored there.

use std::collections::HashMap;

use crate::cli::{IndexArgs, StoreArgs};
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::index::scan;
use crate::store::{self, S3Settings, StoreSettings, StoreUrl};

pub fn run(args: IndexArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let IndexArgs {
        url,
        store: store_args,
    } = args;
    let settings = store_settings(&store_args);
    let url = StoreUrl::parse(&url, &ctx.cwd)?;
    let store = store::open(&url, &settings)?;
    let (scan, pages) = scan::reindex(ctx, store.as_ref(), &HashMap::new(), settings.jobs)?;
    for skipped in &scan.skipped {
        ctx.ui.warn(format!("not indexed: {skipped}"));
    }
    ctx.ui.status(format!(
        "wrote {} index pages for {} files of {} projects at {}",
        pages.len(),
        scan.file_count(),
        scan.projects.len(),
        store.url()
    ));
    Ok(ExitStatus::Success)
}

/// The store settings every publishing verb shares.
pub fn store_settings(args: &StoreArgs) -> StoreSettings {
    let StoreArgs {
        s3_endpoint,
        s3_region,
        s3_path_style,
        s3_checksums,
        multipart_threshold,
        transfer_jobs,
        transfer_attempts,
    } = args;
    StoreSettings {
        s3: S3Settings {
            endpoint: s3_endpoint.clone(),
            region: s3_region.clone(),
            path_style: *s3_path_style,
            checksums: *s3_checksums,
            multipart_threshold: *multipart_threshold,
        },
        jobs: (*transfer_jobs).max(1),
        attempts: (*transfer_attempts).max(1),
    }
}
