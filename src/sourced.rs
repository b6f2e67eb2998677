//! Where a resolved value came from (a flag, a variable, a config file, the lock, a default,
//! an inference), printed beside the value. Core: settings produce these values and the
//! stages' plans carry and print them, so neither has to name the other.

use std::fmt;

/// Where a resolved value came from; printed beside the value.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "detail")]
pub enum Source {
    Default,
    Flag(String),
    Env(String),
    Config(String),
    Lock(String),
    Preset(String),
    Inferred(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => write!(f, "default"),
            Source::Flag(flag) => write!(f, "{flag}"),
            Source::Env(name) => write!(f, "${name}"),
            Source::Config(place) => write!(f, "{place}"),
            Source::Lock(place) => write!(f, "lock {place}"),
            Source::Preset(name) => write!(f, "preset {name}"),
            Source::Inferred(why) => write!(f, "{why}"),
        }
    }
}

/// A value with where it came from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Sourced<T> {
    pub value: T,
    pub source: Source,
}
