//! `cdp-mock`: the scripted mock CDP endpoint as a process of its own, for
//! benchmarks run from another program (the Python package's
//! `bench/many.py`): it prints its browser WebSocket URL on one line, then
//! serves, with its default script (one page, `T1`), until its stdin closes.

use cdp_mock::MockCdp;

#[tokio::main]
async fn main() {
    let mock = MockCdp::start().await;
    println!("{}", mock.ws_url());
    let stdin_closed = tokio::task::spawn_blocking(|| {
        let mut sink = String::new();
        while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {
            sink.clear();
        }
    });
    let _ = stdin_closed.await;
    drop(mock);
}
