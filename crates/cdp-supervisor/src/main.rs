//! The `cdp-supervisor` binary: see [`cdp_supervisor::cli`].

fn main() -> std::process::ExitCode {
    cdp_supervisor::cli::main()
}
