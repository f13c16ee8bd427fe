//! [`NetPool`]: a launcher's empty network namespaces, each lent to one launch at a time.
//!
//! Making a network namespace and tearing it down was the largest cost left on a sandboxed
//! launch: in a loop of forks that unshare user, pid and mount namespaces, adding a fresh
//! network namespace took each iteration from ~0.76 to ~1.52 ms and from ~0.74 to ~1.70 ms of
//! CPU (the kernel's per-namespace set-up of every protocol, then its teardown on a kernel
//! worker), where entering one kept open cost nothing measurable (2 000 iterations, three
//! rounds, the 2-core test machine). Launches back to back are CPU-bound there, so that work
//! was the launch's. A prepared spare ([`Ahead`](super::Ahead)) therefore takes its network
//! namespace from its launcher's pool when one is free, and makes one otherwise; once its
//! launch is over the namespace goes back to the pool.
//!
//! The contract:
//!
//! - **The command holds no capability over it.** A pooled network namespace is made, `lo`
//!   brought up (loopback-only) or left down, in a user namespace of its own (`U0`: the
//!   launcher's uid mapped to itself). The spare enters both (`setns`), then unshares the
//!   command's user namespace (`U1`, a child of `U0`) with its pid and mount namespaces; or
//!   the launcher's resident helper, which stays in `U0`, enters the network namespace and
//!   forks the spare into those three (see [`resident`](super::resident)). The
//!   command is root at most in `U1`; capabilities over a network namespace are those in its
//!   owner, `U0`, which no process of the command is in. So it cannot add an interface, an
//!   address, a route or a firewall rule, bring `lo` up or down, or write a `net` sysctl: it
//!   can only open sockets, which close when it exits.
//! - **One launch at a time.** A namespace is lent to one spare and comes back only when its
//!   launch is over and the command's PID 1 has been reaped: the pid namespace's last process
//!   is then gone (the kernel reaps every other process of a pid namespace before its PID 1's
//!   exit is reported), with every socket it held. A launch that ends any other way (a spare
//!   discarded, the launch's future dropped before the reap) lets its namespace go: the kernel
//!   tears it down. Launches at once never share one.
//! - **Only with a pid and a user namespace.** Without a pid namespace a command's processes
//!   can outlive its launch; without a user namespace it would own the network namespace. Such
//!   plans keep a fresh network namespace per command, as every fresh (not spare) helper does.
//! - **Kind for kind.** A namespace with `lo` up serves only loopback-only launches, one with
//!   `lo` down only network-off launches.
//! - **Bounded.** At most [`IDLE_MAX`] wait in a pool; more are let go. A pool dies with its
//!   launcher.
//!
//! What a command can leave behind is what the kernel keeps of its closed sockets: TCP
//! `TIME_WAIT` entries on loopback (no data; a later bind of the same port without
//! `SO_REUSEADDR` can fail for up to a minute), and a socket kept alive only by a cycle of
//! descriptors in flight between Unix sockets, which no process can reach and the kernel's
//! collector frees. Neither carries data to the next command.

use std::os::fd::OwnedFd;
use std::sync::{Mutex, PoisonError};

/// The most idle network namespaces a pool keeps (sequential launches use two in turn: one
/// lent to the running command, one to the spare prepared meanwhile).
pub(crate) const IDLE_MAX: usize = 4;

/// A network namespace and the user namespace that owns it (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct NetNs {
    /// `U0`, the owner: a spare enters it first (`setns` into a network namespace needs
    /// `CAP_SYS_ADMIN` in its owner).
    pub(crate) user: OwnedFd,
    /// The network namespace.
    pub(crate) net: OwnedFd,
    /// Whether `lo` is up in it.
    pub(crate) loopback_up: bool,
}

/// A launcher's idle network namespaces (see the [module docs](self)).
#[derive(Debug, Default)]
pub(crate) struct NetPool {
    idle: Mutex<Vec<NetNs>>,
}

impl NetPool {
    /// An idle namespace whose `lo` is up or down as `loopback_up` says, if there is one.
    pub(crate) fn take(&self, loopback_up: bool) -> Option<NetNs> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let at = idle.iter().position(|ns| ns.loopback_up == loopback_up)?;
        Some(idle.swap_remove(at))
    }

    /// Takes `ns` back, once the launch it was lent to is over (see the [module docs](self));
    /// gives it back when the pool is full, to be let go.
    pub(crate) fn give_back(&self, ns: NetNs) -> Result<(), NetNs> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() >= IDLE_MAX {
            return Err(ns);
        }
        idle.push(ns);
        Ok(())
    }

    /// How many namespaces are idle.
    #[cfg(test)]
    fn idle(&self) -> usize {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(loopback_up: bool) -> NetNs {
        let open = || OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
        NetNs {
            user: open(),
            net: open(),
            loopback_up,
        }
    }

    #[test]
    fn a_pool_lends_kind_for_kind_and_keeps_a_bounded_number() {
        let pool = NetPool::default();
        assert!(pool.take(false).is_none());
        pool.give_back(ns(true)).unwrap();
        assert!(pool.take(false).is_none(), "lo is up in the only one");
        let up = pool.take(true).expect("the loopback-only one");
        assert!(up.loopback_up);
        for _ in 0..IDLE_MAX {
            pool.give_back(ns(false)).unwrap();
        }
        let refused = pool.give_back(ns(false)).expect_err("the pool is full");
        assert!(!refused.loopback_up);
        assert_eq!(pool.idle(), IDLE_MAX);
        assert!(pool.take(false).is_some());
        assert_eq!(pool.idle(), IDLE_MAX - 1);
    }
}
