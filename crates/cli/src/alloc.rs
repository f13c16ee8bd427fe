//! The process's allocator: mimalloc for the command itself, the system's for the helper
//! processes this binary also is — the sandbox's helper (`__sandbox-exec`) and the `run_code`
//! worker (`__run-code-worker`), which run under the sandbox's memory limits (`RLIMIT_DATA`),
//! where mimalloc's reservations of address space ahead of use fail (measured: the helper's
//! first allocation after its limits, "Cannot allocate memory").
//!
//! Why mimalloc: the service allocates and frees a run's many small pieces across threads,
//! where glibc's malloc took 13 % of its CPU (measured: 0.87 → 0.75 ms of CPU a chat run,
//! docs/benchmarks.md, "The harness service").
//!
//! The choice is made once, at the process's first allocation (before `main`, on the one
//! thread there is), from `/proc/self/cmdline` read into a buffer on the stack: every block is
//! then allocated and freed by the same allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU8, Ordering};

/// The allocator of the `toolsmith` binary (see the [module docs](self)).
pub(crate) struct Allocator;

const UNDECIDED: u8 = 0;
const MIMALLOC: u8 = 1;
const SYSTEM: u8 = 2;

static CHOICE: AtomicU8 = AtomicU8::new(UNDECIDED);

/// Which allocator this process uses.
fn choice() -> u8 {
    match CHOICE.load(Ordering::Relaxed) {
        UNDECIDED => {
            let chosen = if helper_process() { SYSTEM } else { MIMALLOC };
            CHOICE.store(chosen, Ordering::Relaxed);
            chosen
        }
        chosen => chosen,
    }
}

/// Whether this process is one of the helpers: its first argument is one of theirs. When the
/// command line cannot be read, it is taken to be one (the system's allocator is always safe).
fn helper_process() -> bool {
    use rustix::fs::{Mode, OFlags, open};
    let Ok(file) = open(
        c"/proc/self/cmdline",
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return true;
    };
    let mut buffer = [0u8; 64];
    let Ok(read) = rustix::io::read(&file, &mut buffer) else {
        return true;
    };
    let mut args = buffer[..read].split(|b| *b == 0).skip(1);
    let first = args.next().unwrap_or_default();
    first == toolsmith_sandbox::exec::HELPER_ARG.as_bytes()
        || first == toolsmith_builtins::RUN_CODE_WORKER_ARG.as_bytes()
}

// A global allocator is an unsafe trait: this one only forwards.
#[allow(unsafe_code)]
// SAFETY: every call is forwarded to one allocator, the same one for the process's whole life
// (decided before the first block is handed out), which upholds `GlobalAlloc`'s contract.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe {
            match choice() {
                MIMALLOC => mimalloc::MiMalloc.alloc(layout),
                _ => System.alloc(layout),
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from the same allocator (the choice never changes).
        unsafe {
            match choice() {
                MIMALLOC => mimalloc::MiMalloc.dealloc(ptr, layout),
                _ => System.dealloc(ptr, layout),
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe {
            match choice() {
                MIMALLOC => mimalloc::MiMalloc.alloc_zeroed(layout),
                _ => System.alloc_zeroed(layout),
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from the same allocator (the choice never changes).
        unsafe {
            match choice() {
                MIMALLOC => mimalloc::MiMalloc.realloc(ptr, layout, new_size),
                _ => System.realloc(ptr, layout, new_size),
            }
        }
    }
}
