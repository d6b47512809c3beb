//! The config where input enters: a YAML document, then `CDP_SUPERVISOR_…`
//! environment variables, then one flag (`Config::set`). Never panics;
//! every error is one line naming a key (or the YAML); an accepted config
//! holds only valid values (its navigation policy builds, its timeout is in
//! range), and its policy answers any URL without panicking.
//!
//! Input: YAML, a NUL byte, then `NAME=VALUE` lines (NAME gets the
//! `CDP_SUPERVISOR_BROWSER__` prefix unless it has one), a NUL, then
//! `key=value` for `Config::set`.

#![no_main]

use cdp_supervisor::config::{Config, DIALOG_TIMEOUT_MAX_S, ENV_PREFIX};
use libfuzzer_sys::fuzz_target;

fn holds(c: &Config, probe: &str) {
    let b = &c.browser;
    assert!(b.dialog_timeout_s > 0.0 && b.dialog_timeout_s <= DIALOG_TIMEOUT_MAX_S);
    let policy = b.navigation_policy().expect("a stored origin parses");
    for url in [probe, "http://a.test/", "file:///etc/passwd", "about:blank"] {
        let _ = policy.check(url);
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, '\0');
    let yaml = parts.next().unwrap_or("");
    let env_text = parts.next().unwrap_or("");
    let flag = parts.next().unwrap_or("");

    let mut c = Config::default();
    match c.merge_yaml(yaml) {
        Ok(()) => holds(&c, yaml),
        Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
    }

    let env: Vec<(String, String)> = env_text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| {
            let k = if k.starts_with(ENV_PREFIX) {
                k.to_owned()
            } else {
                format!("{ENV_PREFIX}BROWSER__{}", k.to_ascii_uppercase())
            };
            (k, v.to_owned())
        })
        // Naming a file would read the disk: the YAML above covers files.
        .filter(|(k, _)| k != "CDP_SUPERVISOR_CONFIG")
        .collect();
    match Config::load(None, env) {
        Ok(mut c) => {
            holds(&c, env_text);
            if let Some((k, v)) = flag.split_once('=') {
                let before = c.clone();
                match c.set(k, v) {
                    Ok(()) => holds(&c, v),
                    Err(e) => {
                        assert!(!e.to_string().contains('\n'), "{e}");
                        assert_eq!(c, before, "set is atomic");
                    }
                }
            }
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
    }
});
