//! `index`: the store prefix whose pages are rewritten, and how to reach it.

use super::store::store_settings;
use crate::cli::IndexArgs;
use crate::context::Context;
use crate::store::{StoreSettings, StoreUrl};

pub struct IndexSettings {
    pub url: StoreUrl,
    pub store: StoreSettings,
    pub dry_run: bool,
    pub json: bool,
}

impl IndexSettings {
    pub fn resolve(args: IndexArgs, ctx: &Context) -> anyhow::Result<Self> {
        let IndexArgs {
            url,
            dry_run,
            json,
            store,
        } = args;
        Ok(IndexSettings {
            url: StoreUrl::parse(&url, &ctx.cwd)?,
            store: store_settings(store),
            dry_run,
            json,
        })
    }
}
