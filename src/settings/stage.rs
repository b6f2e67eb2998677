//! `stage`: the build output, where it goes (under `<to>/<family>` with `--amdgpu-family`), what it
//! is verified against, how the store is reached.

use std::path::PathBuf;

use super::store::store_settings;
use super::verify::expectations;
use super::{Source, Sourced};
use crate::cli::StageArgs;
use crate::context::Context;
use crate::lock::Lock;
use crate::publish;
use crate::recipes::Recipes;
use crate::stack::Target;
use crate::store::{StoreSettings, StoreUrl};
use crate::verify::{self, Expectations};

pub struct StageSettings {
    /// The directory holding the built wheels.
    pub input: PathBuf,
    /// The staging store (the family's prefix under `--to` with `--amdgpu-family`).
    pub dest: StoreUrl,
    /// `--to` as it was given (a refused re-stage suggests a prefix beside it).
    pub to: String,
    /// Where the SDK's index (`expect.index_url`) came from, as an error names it.
    pub index_from: String,
    pub expect: Expectations,
    /// The targets every GPU library must carry, and where they came from.
    pub targets: Option<Sourced<Vec<Target>>>,
    pub store: StoreSettings,
    pub dry_run: bool,
    pub json: bool,
}

impl StageSettings {
    /// Every usage error comes here, before the (possibly long) verification.
    pub fn resolve(args: StageArgs, ctx: &Context, recipes: &Recipes) -> anyhow::Result<Self> {
        let StageArgs {
            to,
            input,
            family,
            lock,
            targets,
            index_url,
            dry_run,
            json,
            allow_linux_tag,
            store,
            config,
        } = args;
        let stack = config.stack(ctx)?;
        let table = config.family_table(ctx)?;
        let mut dest = StoreUrl::parse(&to, &ctx.cwd)?;
        let family = match &family {
            Some(name) => {
                let family = table.family_named(name).map_err(publish::Error::Family)?;
                dest = dest
                    .join(&family.name)
                    .map_err(|reason| publish::Error::FamilySegment {
                        family: family.name.clone(),
                        reason,
                    })?;
                Some(family)
            }
            None => None,
        };
        // With a lock, the targets are the lock's: a different --targets is drift, not an
        // override.
        if let (Some(path), Some(list)) = (&lock, &targets) {
            let path = ctx.absolute(path);
            let given = table.targets(list).map_err(verify::Error::Targets)?;
            Lock::read(&path)?.expect_targets(&path, "--targets", &given)?;
        }
        let index_from = match (&index_url, &lock) {
            (Some(_), _) => "--index-url".to_string(),
            (None, Some(path)) => format!(
                "build.index_url of {}, where install-rocm installed the SDK from",
                ctx.absolute(path).display()
            ),
            (None, None) => String::new(),
        };
        let (mut expect, mut targets) = expectations(
            ctx,
            recipes,
            &stack,
            &table,
            lock.as_deref(),
            targets.as_deref(),
            index_url,
        )?;
        expect.wheels.allow_linux_tag = allow_linux_tag;
        // Without a lock record or --targets, the family names the targets the set was
        // built for.
        if expect.wheels.targets.is_empty()
            && let Some(family) = family
        {
            expect.wheels.targets = family.targets.clone();
            targets = Some(Sourced {
                value: family.targets.clone(),
                source: Source::Inferred(format!("family {}", family.name)),
            });
        }
        Ok(StageSettings {
            input: ctx.absolute(&input),
            dest,
            to,
            index_from,
            expect,
            targets,
            store: store_settings(store),
            dry_run,
            json,
        })
    }
}
