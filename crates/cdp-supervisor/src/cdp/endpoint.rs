//! Endpoint resolution. (contract skeleton)

/// Why an endpoint could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error("bad CDP URL {url:?}: {reason}")]
    BadUrl { url: String, reason: String },
}

/// Resolves `http://host:port`, `http://host:port/json/version` or a bare
/// `ws://host:port` to the browser's WebSocket URL.
pub async fn resolve_ws_url(url: &str) -> Result<String, EndpointError> {
    let _ = url;
    todo!()
}
