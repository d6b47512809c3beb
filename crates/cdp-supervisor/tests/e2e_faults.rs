//! End to end on real Chromium: faults of the endpoint. Chromium killed
//! mid-session (the supervisor gives up cleanly and leaves the registry), and
//! the socket cut by a TCP proxy (the supervisor reconnects and the OOPIF is
//! back with a new session).

mod common;

use cdp_supervisor::supervisor::driver::{RECONNECT_BACKOFF_START, SupervisorOptions};
use cdp_supervisor::supervisor::policy::DialogPolicy;
use cdp_supervisor::supervisor::registry::{Endpoint, Registry};
use cdp_supervisor::supervisor::snapshot::{ConnectionStatus, Snapshot};
use cdp_supervisor::supervisor::state::{DialogAction, DialogRequest};
use common::*;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

#[tokio::test(flavor = "multi_thread")]
async fn chromium_killed_mid_session_the_supervisor_gives_up_and_leaves_the_registry() {
    let (site, chromium) = site_and_chromium().await;
    let registry = Registry::new();
    let opts = SupervisorOptions {
        attach_timeout: Duration::from_secs(1),
        reconnect_backoff_start: Duration::from_millis(100),
        ..options(DialogPolicy::MustRespond, Duration::from_secs(300))
    };
    let budget: Duration = (0..opts.max_reconnect_failures)
        .map(|i| opts.reconnect_backoff_start * (1 << i) + opts.attach_timeout)
        .sum();
    let sup = registry
        .get_or_start("task", Endpoint::Url(chromium.ws_url().to_owned()), opts)
        .await
        .expect("attach");
    goto(&sup, &site.url("a.test", "/demo")).await;
    let killed = Instant::now();
    chromium.shutdown().await;
    tokio::time::timeout(budget + Duration::from_secs(2), sup.exited())
        .await
        .expect("the supervisor gave up within the backoff budget");
    eprintln!(
        "gave up {:?} after Chromium was killed (budget {budget:?})",
        killed.elapsed()
    );
    assert!(!sup.is_running());
    assert_eq!(sup.snapshot().connection, ConnectionStatus::Closed);
    let deadline = Instant::now() + WAIT;
    while !registry.task_ids().is_empty() {
        assert!(
            Instant::now() < deadline,
            "registry entry left: {:?}",
            registry.task_ids()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(registry.get("task").is_none());
}

/// A loopback TCP proxy that can cut every connection and refuse new ones.
struct Proxy {
    addr: SocketAddr,
    refusing: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: JoinHandle<()>,
}

impl Proxy {
    async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().unwrap();
        let refusing = Arc::new(AtomicBool::new(false));
        let conns: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let accept = tokio::spawn({
            let refusing = refusing.clone();
            let conns = conns.clone();
            async move {
                while let Ok((mut client, _)) = listener.accept().await {
                    if refusing.load(Ordering::SeqCst) {
                        let _ = client.set_zero_linger();
                        continue;
                    }
                    let task = tokio::spawn(async move {
                        let Ok(mut server) = TcpStream::connect(upstream).await else {
                            return;
                        };
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    });
                    conns.lock().unwrap().push(task);
                }
            }
        });
        Proxy {
            addr,
            refusing,
            conns,
            accept,
        }
    }

    /// A proxy in front of the Chromium whose browser endpoint is `ws_url`,
    /// and the same endpoint through the proxy.
    async fn in_front_of(ws_url: &str) -> (Proxy, String) {
        let u = url::Url::parse(ws_url).unwrap();
        let upstream: SocketAddr = format!("127.0.0.1:{}", u.port().unwrap()).parse().unwrap();
        let proxy = Proxy::start(upstream).await;
        let proxied = format!("ws://{}{}", proxy.addr, u.path());
        (proxy, proxied)
    }

    /// Drops every proxied connection and refuses new ones until [`Proxy::restore`].
    fn cut(&self) {
        self.refusing.store(true, Ordering::SeqCst);
        for task in self.conns.lock().unwrap().drain(..) {
            task.abort();
        }
    }

    fn restore(&self) {
        self.refusing.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

fn oopif(s: &Snapshot) -> Option<(String, String)> {
    s.frame_tree
        .children
        .iter()
        .find(|c| c.is_oopif && c.url.ends_with("/demo-oopif"))
        .and_then(|c| Some((c.frame_id.clone(), c.session_id.clone()?)))
}

fn tree_complete(s: &Snapshot) -> bool {
    s.connection == ConnectionStatus::Connected
        && s.frame_tree
            .top
            .as_ref()
            .is_some_and(|t| t.url.ends_with("/demo"))
        && s.frame_tree
            .children
            .iter()
            .any(|c| !c.is_oopif && c.url.ends_with("/demo-same"))
        && oopif(s).is_some()
}

#[tokio::test(flavor = "multi_thread")]
async fn socket_cut_by_a_proxy_the_supervisor_reconnects_and_the_oopif_is_back_with_a_new_session()
{
    let (site, chromium) = site_and_chromium().await;
    let (proxy, proxied) = Proxy::in_front_of(chromium.ws_url()).await;
    // The product's defaults (reconnect backoff from 0.5 s): the figure is what a user sees.
    let sup = cdp_supervisor::supervisor::driver::Supervisor::start(
        &proxied,
        options(DialogPolicy::MustRespond, Duration::from_secs(300)),
    )
    .await
    .expect("attach through the proxy");
    goto(&sup, &site.url("a.test", "/demo")).await;
    let before = wait_snapshot(&sup, "the demo frame tree", tree_complete).await;
    let (frame_id, old_session) = oopif(&before).unwrap();

    proxy.cut();
    let cut = Instant::now();
    wait_snapshot(&sup, "reconnecting", |s| {
        s.connection == ConnectionStatus::Reconnecting
    })
    .await;
    // The endpoint stays unreachable for about a second (scripted, not a wait on the supervisor).
    tokio::time::sleep(Duration::from_secs(1)).await;
    proxy.restore();
    let restored = Instant::now();
    let connected = wait_snapshot(&sup, "connected", |s| {
        s.connection == ConnectionStatus::Connected
    })
    .await;
    let to_connected = restored.elapsed();
    let after = wait_snapshot(&sup, "the frame tree complete again", |s| {
        tree_complete(s) && oopif(s).is_some_and(|(_, session)| session != old_session)
    })
    .await;
    let to_complete = restored.elapsed();
    // Attempts start 0.5 s and 1.5 s after the drop (backoff 0.5 s, doubling):
    // the second one is the first that can get through.
    let attempt = RECONNECT_BACKOFF_START * 3;
    eprintln!(
        "reconnect on real Chromium: restore → connected {to_connected:?}, restore → frame tree complete {to_complete:?}; \
         cut → complete {:?}, i.e. ≈ {:?} from the attempt's start to the frame tree complete (tree rebuilt {:?} after connected)",
        cut.elapsed(),
        cut.elapsed().saturating_sub(attempt),
        to_complete.saturating_sub(to_connected)
    );
    drop(connected);
    let (new_frame, new_session) = oopif(&after).unwrap();
    assert_eq!(new_frame, frame_id, "the same OOPIF");
    assert_ne!(new_session, old_session);
    // Calls route to the new session.
    let host = match sup
        .cdp(
            "Runtime.evaluate",
            serde_json::json!({"expression": "location.host", "returnByValue": true}),
            Some(&frame_id),
            None,
            WAIT,
        )
        .await
        .expect("evaluate in the OOPIF")
    {
        cdp_supervisor::supervisor::driver::CallOutcome::Reply(v) => v["result"]["value"].clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(host, format!("b.test:{}", site.port()));
    sup.stop().await;
    drop(chromium);
}

/// When the Chromium we launched dies, there is no endpoint to wait for: the
/// supervisor gives up at once (default backoff, no 15 s of retries) and
/// leaves the registry, so the next call starts a fresh browser.
#[tokio::test(flavor = "multi_thread")]
async fn our_own_chromium_dying_ends_the_supervisor_at_once() {
    let registry = Registry::new();
    let sup = registry
        .get_or_start(
            "local-dies",
            Endpoint::Local(launch_options()),
            options(DialogPolicy::MustRespond, Duration::from_secs(300)),
        )
        .await
        .expect("launch and attach");
    let port: u16 = sup
        .endpoint()
        .split(':')
        .nth(2)
        .and_then(|p| p.split('/').next())
        .and_then(|p| p.parse().ok())
        .expect("port in the endpoint");
    let dir = user_data_dir_of_port(port).expect("our Chromium's user-data-dir");
    let started = Instant::now();
    for pid in processes_with(&dir) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    tokio::time::timeout(Duration::from_secs(5), sup.exited())
        .await
        .expect("gave up within 5 s");
    let took = started.elapsed();
    eprintln!("own Chromium killed → supervisor ended in {took:?}");
    let until = Instant::now() + Duration::from_secs(2);
    while !registry.task_ids().is_empty() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(registry.task_ids().is_empty(), "registry entry left behind");
}

/// Issue 9: the reconnect path re-attaches every supervised tab, not only
/// the current one — a dialog in a popup is still caught after the socket
/// came back, with the popup's target id, and answered on its session.
#[tokio::test(flavor = "multi_thread")]
async fn socket_cut_with_two_tabs_open_both_are_supervised_after_the_reconnect() {
    let (site, chromium) = site_and_chromium().await;
    let (proxy, proxied) = Proxy::in_front_of(chromium.ws_url()).await;
    let sup = cdp_supervisor::supervisor::driver::Supervisor::start(
        &proxied,
        SupervisorOptions {
            reconnect_backoff_start: Duration::from_millis(100),
            ..options(DialogPolicy::MustRespond, Duration::from_secs(300))
        },
    )
    .await
    .expect("attach through the proxy");
    goto(&sup, &site.url("a.test", "/demo")).await;
    let opener = sup.snapshot().tabs[0].target_id.clone();
    let popup_url = site.url("a.test", "/demo-same");
    eval(&sup, None, &format!("window.open({popup_url:?}); 1")).await;
    let two = wait_snapshot(&sup, "the popup supervised", |s| {
        s.tabs.len() == 2 && s.tabs.iter().any(|t| t.url == popup_url)
    })
    .await;
    let popup = two
        .tabs
        .iter()
        .find(|t| t.url == popup_url)
        .unwrap()
        .target_id
        .clone();
    assert_eq!(
        two.tabs
            .iter()
            .find(|t| t.target_id == popup)
            .unwrap()
            .opener_target_id
            .as_deref(),
        Some(opener.as_str())
    );

    proxy.cut();
    wait_snapshot(&sup, "reconnecting", |s| {
        s.connection == ConnectionStatus::Reconnecting
    })
    .await;
    proxy.restore();
    let after = wait_snapshot(&sup, "connected with both tabs", |s| {
        s.connection == ConnectionStatus::Connected && s.tabs.len() == 2
    })
    .await;
    assert!(
        after
            .tabs
            .iter()
            .any(|t| t.target_id == opener && t.current)
    );

    // The other tab comes back through browser-level auto-attach, just
    // after the current one: until then a call on it has no page session.
    let deadline = Instant::now() + WAIT;
    loop {
        let r = sup
            .cdp(
                "Runtime.evaluate",
                serde_json::json!({"expression": "1"}),
                None,
                Some(&popup),
                WAIT,
            )
            .await;
        match r {
            Ok(_) => break,
            Err(e) if Instant::now() < deadline => {
                eprintln!("popup not re-attached yet: {e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("the popup was not re-attached: {e}"),
        }
    }
    // A dialog in each tab, after the reconnect: both caught, each with its tab.
    for (tab, text) in [
        (&popup, "popup after reconnect"),
        (&opener, "opener after reconnect"),
    ] {
        eval(
            &sup,
            Some(tab),
            &format!("setTimeout(() => alert({text:?}), 0); 1"),
        )
        .await;
        let s = wait_snapshot(&sup, text, |s| {
            s.pending_dialogs.iter().any(|d| d.message == text)
        })
        .await;
        let d = s
            .pending_dialogs
            .iter()
            .find(|d| d.message == text)
            .unwrap();
        assert_eq!(d.target_id.as_deref(), Some(tab.as_str()), "{d:?}");
        let closed = sup
            .answer_dialog(DialogRequest {
                action: DialogAction::Accept,
                prompt_text: None,
                dialog_id: Some(d.id.clone()),
                files: None,
                login: None,
            })
            .await
            .expect("answered on its tab's session");
        assert_eq!(
            closed.closed_by,
            cdp_supervisor::supervisor::snapshot::ClosedBy::Agent
        );
    }
    sup.stop().await;
    drop(chromium);
}

async fn eval(
    sup: &cdp_supervisor::supervisor::driver::Supervisor,
    tab: Option<&str>,
    expression: &str,
) {
    let r = sup
        .cdp(
            "Runtime.evaluate",
            serde_json::json!({"expression": expression, "returnByValue": true}),
            None,
            tab,
            WAIT,
        )
        .await
        .expect("evaluate");
    assert!(
        matches!(r, cdp_supervisor::supervisor::driver::CallOutcome::Reply(_)),
        "{r:?}"
    );
}
