//! The seccomp filter, installed by the helper last, just before `execve`.
//!
//! Default allow, with `EPERM` for: `socket` outside AF_UNIX/AF_NETLINK (network off),
//! `socket(AF_UNIX)` (Unix sockets denied; `socketpair` stays allowed, asyncio needs it),
//! `socketpair` outside AF_UNIX (network off), and always `io_uring_setup/enter/register` (its
//! socket ops bypass the `socket` check). On x86_64 a guard in front denies every x32 syscall
//! number (bit 30), which seccompiler does not mask.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

use super::plan::SeccompPlan;

/// Builds the BPF program for `plan`.
pub(crate) fn program(plan: &SeccompPlan) -> Result<BpfProgram, String> {
    let ne = |value: i32| {
        SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, value as u64)
            .map_err(err)
    };
    let eq = |value: i32| {
        SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value as u64)
            .map_err(err)
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for nr in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(nr, Vec::new());
    }
    let socket_rule = match (plan.deny_inet, plan.deny_unix) {
        (true, true) => Some(vec![ne(libc::AF_NETLINK)?]),
        (true, false) => Some(vec![ne(libc::AF_UNIX)?, ne(libc::AF_NETLINK)?]),
        (false, true) => Some(vec![eq(libc::AF_UNIX)?]),
        (false, false) => None,
    };
    if let Some(conditions) = socket_rule {
        rules.insert(
            libc::SYS_socket,
            vec![SeccompRule::new(conditions).map_err(err)?],
        );
    }
    if plan.deny_inet {
        rules.insert(
            libc::SYS_socketpair,
            vec![SeccompRule::new(vec![ne(libc::AF_UNIX)?]).map_err(err)?],
        );
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(err)?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(err)?;
    let mut program: BpfProgram = filter.try_into().map_err(err)?;
    if cfg!(target_arch = "x86_64") {
        program.splice(0..0, x32_guard());
    }
    Ok(program)
}

fn err(e: impl std::fmt::Display) -> String {
    format!("seccomp: {e}")
}

/// `if (nr >= 0x40000000) return ERRNO(EPERM);` (jumps are relative, so prepending is safe; the
/// arch check that follows still kills foreign architectures).
pub(crate) fn x32_guard() -> [sock_filter; 3] {
    const BPF_LD_W_ABS: u16 = 0x20;
    const BPF_JGE_K: u16 = 0x35;
    const BPF_RET_K: u16 = 0x06;
    const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
    [
        sock_filter {
            code: BPF_LD_W_ABS,
            jt: 0,
            jf: 0,
            k: 0,
        },
        sock_filter {
            code: BPF_JGE_K,
            jt: 0,
            jf: 1,
            k: 0x4000_0000,
        },
        sock_filter {
            code: BPF_RET_K,
            jt: 0,
            jf: 0,
            k: SECCOMP_RET_ERRNO | libc::EPERM as u32,
        },
    ]
}

/// Installs `program` on the calling thread (sets `no_new_privs` first).
pub(crate) fn install(program: &BpfProgram) -> Result<(), String> {
    seccompiler::apply_filter(program).map_err(|e| format!("seccomp: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_compile_for_every_combination() {
        for deny_inet in [false, true] {
            for deny_unix in [false, true] {
                let plan = SeccompPlan {
                    deny_inet,
                    deny_unix,
                };
                assert!(program(&plan).unwrap().len() > 3);
            }
        }
    }
}
