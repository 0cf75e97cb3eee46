//! The parent-death signal: on Linux every child is armed with
//! `PR_SET_PDEATHSIG = SIGKILL`, so the kernel kills it when the host dies,
//! even by `SIGKILL` (OOM killer, container stop, a supervisor).
//!
//! The one module of this crate that needs `unsafe`: the hook runs in the
//! forked child before `exec` (`pre_exec`).
//!
//! Caveats (documented in the crate docs too):
//! * Linux sends the signal when the **thread** that forked the child exits,
//!   not the process. Tokio's worker threads (and the thread of a
//!   current-thread runtime) live as long as the runtime, so a child
//!   spawned from async code lives as long as it should. A child spawned
//!   from a thread that ends earlier — a `spawn_blocking` thread after its
//!   idle keep-alive, a worker that went through `block_in_place`, a
//!   short-lived `std::thread` — is killed when that thread ends.
//! * The signal only reaches the child itself; its descendants are found by
//!   their marker (`mark`) and by the ledger sweep.
//! * macOS (and other unix) has no such call: there this arms nothing.
#![allow(unsafe_code)]

/// Arm `cmd` so the child gets `SIGKILL` when this process dies, and
/// refuses to start if this process died before the hook ran.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn arm(cmd: &mut tokio::process::Command) {
    use nix::errno::Errno;
    use nix::sys::signal::Signal;

    // Captured in the parent, before the fork.
    let host = nix::unistd::getpid();
    // SAFETY: the closure runs in the forked child before `exec`, where only
    // async-signal-safe functions may be called. It makes exactly two
    // system calls through thin `nix` wrappers — `prctl(PR_SET_PDEATHSIG)`
    // and `getppid` — both async-signal-safe. It allocates nothing (an
    // `io::Error` from an errno is a plain integer), takes no lock and
    // touches no state shared with other threads (`host` is a copied
    // integer).
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
            // If the host died between the fork and the line above, the
            // child was already re-parented and the signal will never come:
            // fail the exec instead of running unwatched.
            if nix::unistd::getppid() != host {
                return Err(Errno::ESRCH.into());
            }
            Ok(())
        });
    }
}

/// No parent-death signal outside Linux.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn arm(_cmd: &mut tokio::process::Command) {}
