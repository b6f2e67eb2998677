//! Building the stack's wheels. The verb's shape: settings (`settings::build`) → what the SDK
//! is ([`sdk_facts`]) and what the checkouts hold ([`inspect`]: which projects ([`select`]),
//! their git state ([`source`]) and the files their recipes read) → the pure [`plan`] (versions,
//! targets ([`targets`]), env and steps from the [`recipes`]) → [`apply`]: the DAG executor
//! ([`execute`]), compiler caches ([`compilers`]) and the build report, which is also the build
//! cache's index ([`report`](mod@report)). Every refusal is an [`Error`].

pub mod apply;
pub mod compilers;
mod error;
pub mod execute;
pub mod inspect;
pub mod plan;
pub mod recipes;
pub mod report;
pub mod sdk_facts;
pub mod select;
pub mod source;
pub mod targets;

pub use error::Error;
