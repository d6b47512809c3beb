//! The supervisor: the pure rules ([`state`]), the async [`driver`] that feeds
//! them, the page layer above it ([`act`]: the outline with refs, and the
//! actions on them), and the [`registry`] of supervisors (each with its
//! page layer) by task id.

pub mod act;
pub mod bridge;
pub mod calls;
pub mod credentials;
pub mod driver;
pub mod events;
pub mod origins;
pub mod policy;
pub mod registry;
pub mod snapshot;
pub mod state;
pub mod wording;
