//! Multi-arch packaging, above single wheels: a fat wheel made into a host wheel and one device
//! wheel per GPU target, and what those device packages are called.
//!
//! - [`device`]: the device packages of a split, their names, metadata and the extras the host
//!   wheel gains (`torch[device-gfx942]`).
//! - [`split`]: the kpack split of a fat wheel.
//! - [`fat`]: the fat Windows torch wheel, the ROCm SDK carried inside (torch only, reached
//!   through the `fat-wheel` command).

pub mod device;
pub mod fat;
pub mod split;
