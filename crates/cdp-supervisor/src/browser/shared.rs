//! One local Chromium shared by many tasks, each in a browser context of
//! its own (DESIGN "Many tasks, one browser", `browser.isolation: context`).
//!
//! A [`SharedBrowser`] is launched on first need ([`SharedBrowser::ws_url`])
//! and lives while some task holds a [`BrowserLease`]: the last lease
//! dropped (the last task's supervisor ended) kills it and removes its
//! user-data-dir. It is not kept warm: a task starting afterwards launches
//! a fresh one (about a second), so an idle server holds no browser.
//!
//! When the browser dies (crash, OOM kill), every task's connection drops
//! and each task's supervisor reconnects through [`SharedBrowser::ws_url`]:
//! the first one there relaunches it (the launches are serialized), the
//! others find the new one running. Each task then creates a new context
//! (its old one died with the browser) and says so as a reconnect does.
//!
//! The contexts themselves are made by the supervisor on its own
//! connection (`Target.createBrowserContext{disposeOnDetach:true}`), so a
//! task's context is disposed — tabs closed, cookies gone — when its
//! connection closes, however its supervisor ends.

use super::{LaunchError, LaunchOptions, LocalChromium};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// One Chromium for the tasks of a process, launched on first need.
#[derive(Debug)]
pub struct SharedBrowser {
    launch: LaunchOptions,
    inner: Mutex<Inner>,
    /// Held while (re)launching: tasks that find the browser dead at once
    /// relaunch it once between them.
    launching: tokio::sync::Mutex<()>,
    launches: AtomicU64,
}

#[derive(Debug, Default)]
struct Inner {
    users: usize,
    chromium: Option<LocalChromium>,
}

/// A task's hold on a [`SharedBrowser`]: while one exists the browser
/// stays; the last one dropped closes it.
#[derive(Debug)]
pub struct BrowserLease {
    browser: Arc<SharedBrowser>,
    /// Given back already ([`BrowserLease::release`]): the drop does nothing.
    released: bool,
}

impl SharedBrowser {
    /// A shared browser launched with `launch` when first needed.
    pub fn new(launch: LaunchOptions) -> Arc<SharedBrowser> {
        Arc::new(SharedBrowser {
            launch,
            inner: Mutex::new(Inner::default()),
            launching: tokio::sync::Mutex::new(()),
            launches: AtomicU64::new(0),
        })
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A hold on the browser for one task (taken before [`Self::ws_url`], so
    /// that the browser a start launches is not closed under it).
    pub fn lease(self: &Arc<Self>) -> BrowserLease {
        self.inner().users += 1;
        BrowserLease {
            browser: self.clone(),
            released: false,
        }
    }

    /// The running browser's WebSocket URL; launches it when there is none
    /// or it has exited (once, whoever else asks at the same time).
    ///
    /// # Errors
    /// The launch's.
    pub async fn ws_url(&self) -> Result<String, LaunchError> {
        let _one = self.launching.lock().await;
        let dead = {
            let mut inner = self.inner();
            if let Some(c) = inner.chromium.as_mut()
                && !c.has_exited()
            {
                return Ok(c.ws_url().to_owned());
            }
            inner.chromium.take()
        };
        if dead.is_some() {
            tracing::warn!("the shared browser has exited; relaunching it");
        }
        // Dropped: its process group killed, its user-data-dir removed.
        drop(dead);
        let chromium = LocalChromium::launch(&self.launch).await?;
        self.launches.fetch_add(1, Ordering::SeqCst);
        let url = chromium.ws_url().to_owned();
        tracing::info!(pid = ?chromium.pid(), "shared browser launched");
        let mut inner = self.inner();
        if inner.users == 0 {
            // Every task ended during the launch: nobody needs it.
            drop(inner);
            drop(chromium);
        } else {
            inner.chromium = Some(chromium);
        }
        Ok(url)
    }

    /// The port its DevTools endpoint listens on, while one runs and has
    /// one (a pipe launch has none unless `chromium_args` asks for it).
    pub fn devtools_port(&self) -> Option<u16> {
        self.inner().chromium.as_ref()?.devtools_port()
    }

    /// The browser process id, while one runs.
    pub fn pid(&self) -> Option<u32> {
        self.inner().chromium.as_ref().and_then(LocalChromium::pid)
    }

    /// How many times a browser was launched (a relaunch counts).
    pub fn launches(&self) -> u64 {
        self.launches.load(Ordering::SeqCst)
    }

    /// How many tasks hold the browser.
    pub fn users(&self) -> usize {
        self.inner().users
    }
}

impl BrowserLease {
    /// The browser this lease holds.
    pub fn browser(&self) -> &Arc<SharedBrowser> {
        &self.browser
    }

    /// Gives the hold back and, when it was the last, closes the browser
    /// and waits until it has exited and its user-data-dir is gone (a
    /// server exiting right after its last task leaves nothing behind).
    pub async fn release(mut self) {
        self.released = true;
        if let Some(c) = self.give_back() {
            Box::pin(c.shutdown()).await;
        }
    }

    /// One hold fewer; the browser to close when it was the last.
    fn give_back(&self) -> Option<LocalChromium> {
        let mut inner = self.browser.inner();
        inner.users = inner.users.saturating_sub(1);
        let closing = if inner.users == 0 {
            inner.chromium.take()
        } else {
            None
        };
        if let Some(c) = &closing {
            tracing::info!(pid = ?c.pid(), "the last task ended: closing the shared browser");
        }
        closing
    }
}

impl Drop for BrowserLease {
    fn drop(&mut self) {
        if !self.released {
            // Dropped, the browser kills its group and cleans up on a
            // thread of its own.
            drop(self.give_back());
        }
    }
}
