//! `rockbuild test-report`: which shard results to combine and what must be among them.

use std::path::PathBuf;

use crate::ci::releases::{DEFAULT_RELEASES, ReleaseTable};
use crate::cli::TestReportArgs;
use crate::context::Context;
use crate::stack::ConfigSource;
use crate::suite::Error;
use crate::suite::catalog::TestConfig;
use crate::suite::summary::{Expectation, ShardCounts};

#[derive(Debug)]
pub struct TestReportSettings {
    pub results: Vec<PathBuf>,
    pub expect: Vec<Expectation>,
    pub report: PathBuf,
    pub markdown: Option<PathBuf>,
    pub json: bool,
    /// Shards per config when neither `--expect` nor the shards say.
    pub shard_counts: ShardCounts,
}

impl TestReportSettings {
    pub fn resolve(args: TestReportArgs, ctx: &Context) -> anyhow::Result<Self> {
        let TestReportArgs {
            results,
            expect,
            report,
            markdown,
            json,
        } = args;
        let families = crate::stack::load_families(None)?;
        let releases = ReleaseTable::load(
            &ConfigSource::embedded("configs/releases.yaml", DEFAULT_RELEASES),
            &families,
        )
        .map_err(Error::from)?;
        let shard_counts = TestConfig::all()
            .into_iter()
            .map(|config| {
                let shards = releases.test_config(config.name()).map_or(1, |c| c.shards);
                (config, shards)
            })
            .collect();
        let expect = expect
            .iter()
            .map(|given| parse_expectation(given))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TestReportSettings {
            results: results.iter().map(|dir| ctx.absolute(dir)).collect(),
            expect,
            report: ctx.absolute(&report),
            markdown: markdown.map(|m| ctx.absolute(&m)),
            json,
            shard_counts,
        })
    }
}

/// `default` or `default=6`.
fn parse_expectation(given: &str) -> Result<Expectation, Error> {
    let error = |message: String| Error::Flag {
        flag: "--expect",
        message,
    };
    let (name, count) = match given.split_once('=') {
        Some((name, count)) => (name.trim(), Some(count.trim())),
        None => (given.trim(), None),
    };
    let config = TestConfig::parse(name).ok_or_else(|| {
        error(format!(
            "unknown test config '{name}' (known: {})",
            TestConfig::all().map(TestConfig::name).join(", ")
        ))
    })?;
    let count = match count {
        None => None,
        Some(text) => match text.parse::<u32>() {
            Ok(n) if n >= 1 => Some(n),
            _ => {
                return Err(error(format!(
                    "'{given}': the shard count must be a whole number from 1 (default=6)"
                )));
            }
        },
    };
    Ok((config, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expectations() {
        assert_eq!(
            parse_expectation("default=6").expect("ok"),
            (TestConfig::Default, Some(6))
        );
        assert_eq!(
            parse_expectation("gpu-smoke").expect("ok"),
            (TestConfig::GpuSmoke, None)
        );
        assert_eq!(
            parse_expectation("defualt").expect_err("bad").to_string(),
            "--expect: unknown test config 'defualt' (known: default, quick, distributed, inductor, gpu-smoke)"
        );
        assert_eq!(
            parse_expectation("default=0").expect_err("bad").to_string(),
            "--expect: 'default=0': the shard count must be a whole number from 1 (default=6)"
        );
    }
}
