//! The supervisor: the pure rules ([`state`]), the async [`driver`] that feeds
//! them, and the [`registry`] of supervisors by task id.

pub mod bridge;
pub mod calls;
pub mod credentials;
pub mod driver;
pub mod events;
pub mod origins;
pub mod page;
pub mod policy;
pub mod registry;
pub mod snapshot;
pub mod state;
pub mod wording;
