//! Stopping a run by signal: SIGINT (Ctrl-C), SIGTERM (schedulers, `kill`, `timeout`) and
//! SIGHUP (the terminal closed) finish the current step, flush the file, write the sidecar and
//! the summary, and exit with 128 + the signal's number (130, 143, 129).
//!
//! A second signal exits at once, but only when it comes at least [`REPEAT`] after the first:
//! GNU `timeout` and job control send the same signal to the process and to its process group
//! together, and that duplicate must not cut the orderly stop short.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long after the first signal another one means "exit now" rather than a duplicate.
pub const REPEAT: Duration = Duration::from_millis(1000);

/// The first signal received (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// When it came (CLOCK_MONOTONIC, ns).
static FIRST_NS: AtomicU64 = AtomicU64::new(0);
/// The run's stop flag (leaked: it lives as long as the process).
static STOP: AtomicPtr<AtomicBool> = AtomicPtr::new(std::ptr::null_mut());

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime is async-signal-safe and writes only `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

extern "C" fn on_signal(sig: libc::c_int) {
    // Only atomics, clock_gettime and _exit: all async-signal-safe.
    let now = monotonic_ns();
    if SIGNAL
        .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
    {
        FIRST_NS.store(now, Ordering::SeqCst);
        let stop = STOP.load(Ordering::SeqCst);
        if !stop.is_null() {
            // SAFETY: set once from a leaked Arc, never freed.
            unsafe { (*stop).store(true, Ordering::SeqCst) };
        }
    } else if now.saturating_sub(FIRST_NS.load(Ordering::SeqCst)) >= REPEAT.as_nanos() as u64 {
        // SAFETY: _exit ends the process without running any Rust or C cleanup.
        unsafe { libc::_exit(128 + sig) };
    }
}

/// The signals a run routes to its stop flag, then SIGXFSZ.
const ROUTED: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGXFSZ];

/// The handlers [`install`] replaced, for [`restore`] (a host process such as Python keeps
/// its own between runs).
static PREVIOUS: std::sync::Mutex<Vec<(libc::c_int, libc::sigaction)>> =
    std::sync::Mutex::new(Vec::new());

/// Route SIGINT, SIGTERM and SIGHUP to `stop`. SIGXFSZ is ignored, so a file-size limit
/// (`ulimit -f`) fails the write with a message instead of killing the process. A signal
/// received by an earlier run in the same process is forgotten.
pub fn install(stop: &Arc<AtomicBool>) {
    SIGNAL.store(0, Ordering::SeqCst);
    STOP.store(
        Arc::into_raw(stop.clone()) as *mut AtomicBool,
        Ordering::SeqCst,
    );
    let mut previous = PREVIOUS.lock().unwrap_or_else(|e| e.into_inner());
    previous.clear();
    for sig in ROUTED {
        // SAFETY: zeroed sigactions, the new one with a handler that only touches atomics
        // (or SIG_IGN for SIGXFSZ); the old one is written by the call.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = if sig == libc::SIGXFSZ {
                libc::SIG_IGN
            } else {
                on_signal as extern "C" fn(libc::c_int) as usize
            };
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, &action, &mut old);
            previous.push((sig, old));
        }
    }
}

/// Put back the handlers [`install`] replaced: the Python wheel calls this after each
/// in-process command, so the interpreter's Ctrl-C handling returns.
pub fn restore() {
    let mut previous = PREVIOUS.lock().unwrap_or_else(|e| e.into_inner());
    for (sig, old) in previous.drain(..) {
        // SAFETY: restoring a handler the system gave us.
        unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
    }
}

/// True when a signal stopped the last run.
pub fn received() -> bool {
    SIGNAL.load(Ordering::SeqCst) != 0
}

/// The exit code of a run stopped early: 128 + the signal that stopped it (130 when the stop
/// flag was set some other way).
pub fn exit_code() -> u8 {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => 130,
        sig => (128 + sig).clamp(0, 255) as u8,
    }
}
