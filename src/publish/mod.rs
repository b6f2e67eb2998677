//! Publishing a set of objects into an index prefix, as `stage` and `promote` both do, in the
//! shape every verb takes:
//!
//! * [`inspect`] reads the destination: what it publishes (for the version-ordering lint and
//!   the page list) and the SHA-256 at every key of the set;
//! * [`plan`] decides, as a pure function of that: each object is transferred, already there
//!   (a re-run: skipped), or a conflict that stops everything before the first byte moves;
//!   versions that would sort below published builds are refused;
//! * [`apply`] moves every object in parallel, verified, and rewrites the index pages last. A
//!   run stopped between the objects and the pages leaves the published pages as they were; a
//!   re-run skips what is already there and completes.
//!
//! [`stage`] is the `stage` verb on top: a verified build output, uploaded.

mod apply;
mod error;
mod plan;
pub mod reindex;
mod set;
pub mod stage;

pub use apply::{Destination, apply, inspect};
pub use error::Error;
pub use plan::{Conflict, PublishPlan, Transfer, plan};
pub use set::{Item, Publication, SetObject, Source, upload_items};
