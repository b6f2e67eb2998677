//! Building the stack's wheels. The verb's shape: its [`input`] (resolved by `settings::build`)
//! → what the SDK
//! is ([`sdk_facts`]) and what the checkouts hold ([`inspect`]: which projects ([`select`]),
//! their git state ([`source`]) and the files their recipes read) → the pure [`plan`] (versions,
//! targets ([`targets`]), env and steps from the recipes, `crate::recipes`) → [`apply`]: the DAG executor
//! ([`execute`]), compiler caches ([`compilers`]) and the build report, which is also the build
//! cache's index ([`report`](mod@report)). Every refusal is an [`Error`].

pub(crate) mod apply;
pub(crate) mod compilers;
mod error;
pub(crate) mod execute;
pub(crate) mod input;
pub(crate) mod inspect;
pub mod mode;
pub(crate) mod plan;
pub(crate) mod report;
pub(crate) mod sdk_facts;
pub(crate) mod select;
pub(crate) mod source;
pub(crate) mod split;
pub(crate) mod targets;
pub(crate) mod tools;

pub use error::Error;
