//! Promotion: moving a tested set from a staging index to a release index, all or nothing.
//!
//! * [`evidence`] reads test reports (rockbuild JSON, JUnit XML) into evidence per wheel;
//! * [`waiver`] reads owned, expiring waivers;
//! * [`policy`] decides, as a pure function, whether the set may go (default deny);
//! * [`ordering`] refuses versions that would sort below published builds of the same
//!   version (PEP 440 local segments);
//! * [`run`] plans and performs the copy: every object first (verified), the destination
//!   index last, so a run stopped half way leaves the published index as it was and a re-run
//!   completes it.

pub mod evidence;
pub mod ordering;
pub mod policy;
pub mod waiver;
