//! # cdp-supervisor
//!
//! A browser supervisor for AI agents. It holds one persistent Chrome
//! DevTools Protocol (CDP) connection per agent task and
//!
//! - surfaces every native JS dialog (`alert`, `confirm`, `prompt`,
//!   `beforeunload`) that blocks the page, and answers it — by the agent
//!   (`browser_dialog`), by policy (`auto_dismiss`, `auto_accept`), or by a
//!   watchdog so that no page stays frozen;
//! - keeps the whole frame tree, cross-origin iframes (OOPIFs) included, and
//!   routes CDP calls into an OOPIF over its own child session.
//! - surfaces the other prompts a browser raises the same way: a file
//!   input's chooser, and an HTTP login (`http_auth`, answered with a
//!   username and password or stored `credentials`); keeps every tab's
//!   downloads in the task's directory, listed in the snapshot.
//!
//! The layers, from the wire up:
//! - [`cdp`] — the wire: envelope, typed events, endpoint resolution, connection.
//! - [`supervisor::state`] — the rules, as a pure state machine: events and
//!   requests in, CDP commands and a snapshot out; no I/O, no clock. A
//!   coordinator over one sub-machine per rule family (targets, frames,
//!   dialogs, navigations, console, downloads, timers), the rules of an
//!   agent's call (which dialog interrupts it, what its deadline means,
//!   what holds a navigation: `state::calls`) and the document loads a
//!   caller waits for (`state::loads`).
//! - [`supervisor::driver`] — the async task that feeds the state machine.
//!   Its contract with the core: every command the core emits gets exactly
//!   one reply back — Chromium's, or a "lost" error when it could not be sent
//!   or the connection dropped — so the core never waits on the driver to remember.
//! - [`supervisor::act`] — the page above the driver: the outline with refs
//!   and the actions on them; it owns the ref tables (the driver knows
//!   nothing of refs).
//! - [`supervisor::wording`] — what the agent reads for the core's errors.
//! - [`supervisor::registry`] — one supervisor per task id, with its page layer.
//! - [`tools`] — the agent surface (JSON in, JSON out) the MCP server and CLI wrap.
//! - [`browser`] — finding and launching local Chromium.
//!
//! It also shows the page to the agent (an outline with refs, across
//! OOPIFs) and acts on it with real input (`browser_click`, `browser_type`,
//! `browser_press_key`, `browser_select_option`), so an agent needs no
//! second browser driver; anything else goes through the raw `browser_cdp`
//! escape hatch, routed into OOPIFs.
//!
//! Calls a dialog interrupts, calls whose timeout passes while still queued
//! in the page, and what survives a reconnect follow DESIGN's rules: an
//! interrupted or timed-out call is delivered once through
//! `completed_calls`, and dialogs kept across a socket drop are re-checked
//! by their renderer's `Page.enable` before any watchdog acts on them.

#![warn(missing_docs)]

pub mod browser;
pub mod cdp;
pub mod changes;
pub mod cli;
pub mod config;
pub mod demo_site;
pub mod handles;
pub mod live;
pub mod mcp;
mod random;
pub mod supervisor;
pub mod tools;
