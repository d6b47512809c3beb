//! The `cdp-supervisor` binary: see [`cdp_supervisor::cli`].

fn main() -> std::process::ExitCode {
    fixed_mmap_threshold();
    cdp_supervisor::cli::main()
}

/// Allocations of 128 KiB and more (a page outline's reply, its parsed
/// nodes) get their own mapping, returned to the system when freed. glibc
/// otherwise raises that threshold each time such a block is freed, so the
/// next large ones come from its arenas and stay there: after three
/// snapshots of rustdoc's Vec page the server held 18 MiB of anonymous
/// memory (1 MiB idle); with this, 10 MiB.
fn fixed_mmap_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets the allocator's tuning, before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}
