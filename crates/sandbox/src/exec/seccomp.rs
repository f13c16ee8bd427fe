//! The seccomp filter, installed by the helper last, just before `execve`.
//!
//! Default allow. Always, whatever the policy:
//!
//! - **No privilege planted for later** (`EPERM`): set-user-ID and set-group-ID mode bits in
//!   `chmod`, `fchmod`, `fchmodat`, `fchmodat2`, in `open`/`openat`/`creat` when they create a
//!   file (`O_CREAT` or `O_TMPFILE`), in `mkdir`/`mkdirat` and `mknod`/`mknodat`, which may not
//!   create character or block devices either. The extended-attribute setters (`setxattr`,
//!   `lsetxattr`, `fsetxattr`, `setxattrat`) fail with `EOPNOTSUPP`, so neither file
//!   capabilities (`security.capability`) nor ACLs can be set; `cp -a` and friends treat that
//!   answer as "not supported here" and carry on. `openat2` answers `ENOSYS`: its mode sits
//!   behind a pointer seccomp cannot read, and programs fall back to `openat`.
//! - **No mounts** (`EPERM`): `mount`, `umount2`, `pivot_root` and the new mount API
//!   (`open_tree`, `open_tree_attr`, `move_mount`, `fsopen`, `fsconfig`, `fsmount`, `fspick`,
//!   `mount_setattr`), after the helper made its own. Landlock forbids them too; this covers
//!   best-effort runs without it.
//! - **No kernel keyrings** (`ENOSYS`): `add_key`, `request_key`, `keyctl`, so keys in the
//!   caller's session or user keyring cannot be read.
//! - `io_uring_setup/enter/register` (`EPERM`): its operations bypass every check above.
//!
//! By policy (`EPERM`): `socket` outside AF_UNIX/AF_NETLINK (network off), `socket(AF_UNIX)`
//! (Unix sockets denied; `socketpair` stays allowed, asyncio needs it), `socketpair` outside
//! AF_UNIX (network off).
//!
//! seccompiler builds one program per answer (`EPERM`, `ENOSYS`, `EOPNOTSUPP`); they are
//! stitched into one filter (one program to run per syscall, not three). On x86_64 a guard in
//! front denies every x32 syscall number (bit 30), which seccompiler does not mask.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

use super::plan::SeccompPlan;

/// `setxattrat(2)` (Linux 6.13), the same number on every architecture; the libc crate does not
/// name it yet.
const SYS_SETXATTRAT: i64 = 463;
/// `open_tree_attr(2)` (Linux 6.15), the same number on every architecture; not in libc yet.
const SYS_OPEN_TREE_ATTR: i64 = 467;

const SET_ID: [u32; 2] = [libc::S_ISUID, libc::S_ISGID];

const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JMP_JA: u16 = 0x05;
const BPF_JGE_K: u16 = 0x35;
const BPF_RET_K: u16 = 0x06;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;

type Rules = BTreeMap<i64, Vec<SeccompRule>>;

/// Builds the BPF program for `plan`.
pub(crate) fn program(plan: &SeccompPlan) -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(err)?;
    let build = |rules: Rules, errno: i32| -> Result<BpfProgram, String> {
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno as u32),
            arch,
        )
        .map_err(err)?;
        filter.try_into().map_err(err)
    };
    let mut program = stitch(vec![
        build(eperm_rules(plan)?, libc::EPERM)?,
        build(whole(&enosys_syscalls()), libc::ENOSYS)?,
        build(whole(&xattr_setters()), libc::EOPNOTSUPP)?,
    ])?;
    if cfg!(target_arch = "x86_64") {
        program.splice(0..0, x32_guard());
    }
    Ok(program)
}

fn err(e: impl std::fmt::Display) -> String {
    format!("seccomp: {e}")
}

/// `(arg & mask) == value` on the low 32 bits of argument `arg`.
fn masked(arg: u8, mask: u32, value: u32) -> Result<SeccompCondition, String> {
    SeccompCondition::new(
        arg,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::MaskedEq(u64::from(mask)),
        u64::from(value),
    )
    .map_err(err)
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(err)
}

/// Rules denying a set-ID bit in the mode argument `mode` (each `extra` condition ANDed).
fn set_id_rules(mode: u8, extra: &[(u8, u32)]) -> Result<Vec<SeccompRule>, String> {
    let mut rules = Vec::new();
    let flags: Vec<Option<(u8, u32)>> = if extra.is_empty() {
        vec![None]
    } else {
        extra.iter().copied().map(Some).collect()
    };
    for flag in flags {
        for bit in SET_ID {
            let mut conditions = vec![masked(mode, bit, bit)?];
            if let Some((arg, value)) = flag {
                conditions.push(masked(arg, value, value)?);
            }
            rules.push(rule(conditions)?);
        }
    }
    Ok(rules)
}

/// `mknod` modes: no set-ID bit, no character or block device.
fn mknod_rules(mode: u8) -> Result<Vec<SeccompRule>, String> {
    let mut rules = set_id_rules(mode, &[])?;
    for kind in [libc::S_IFCHR, libc::S_IFBLK] {
        rules.push(rule(vec![masked(mode, libc::S_IFMT, kind)?])?);
    }
    Ok(rules)
}

/// Every `EPERM` rule: set-ID modes, device nodes, mounts, io_uring and the policy's sockets.
fn eperm_rules(plan: &SeccompPlan) -> Result<Rules, String> {
    let mut rules = whole(&[
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_open_tree,
        SYS_OPEN_TREE_ATTR,
        libc::SYS_move_mount,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
    ]);
    // The flags that make open/openat create a file (and read their mode argument).
    let creating = |arg: u8| [(arg, libc::O_CREAT as u32), (arg, libc::O_TMPFILE as u32)];
    rules.insert(libc::SYS_fchmod, set_id_rules(1, &[])?);
    rules.insert(libc::SYS_fchmodat, set_id_rules(2, &[])?);
    rules.insert(libc::SYS_fchmodat2, set_id_rules(2, &[])?);
    rules.insert(libc::SYS_openat, set_id_rules(3, &creating(2))?);
    rules.insert(libc::SYS_mkdirat, set_id_rules(2, &[])?);
    rules.insert(libc::SYS_mknodat, mknod_rules(2)?);
    #[cfg(target_arch = "x86_64")]
    {
        rules.insert(libc::SYS_chmod, set_id_rules(1, &[])?);
        rules.insert(libc::SYS_open, set_id_rules(2, &creating(1))?);
        rules.insert(libc::SYS_creat, set_id_rules(1, &[])?);
        rules.insert(libc::SYS_mkdir, set_id_rules(1, &[])?);
        rules.insert(libc::SYS_mknod, mknod_rules(1)?);
    }

    let family = |op: SeccompCmpOp, value: i32| {
        SeccompCondition::new(0, SeccompCmpArgLen::Dword, op, value as u64).map_err(err)
    };
    let ne = |value| family(SeccompCmpOp::Ne, value);
    let socket_rule = match (plan.deny_inet, plan.deny_unix) {
        (true, true) => Some(vec![ne(libc::AF_NETLINK)?]),
        (true, false) => Some(vec![ne(libc::AF_UNIX)?, ne(libc::AF_NETLINK)?]),
        (false, true) => Some(vec![family(SeccompCmpOp::Eq, libc::AF_UNIX)?]),
        (false, false) => None,
    };
    if let Some(conditions) = socket_rule {
        rules.insert(libc::SYS_socket, vec![rule(conditions)?]);
    }
    if plan.deny_inet {
        rules.insert(libc::SYS_socketpair, vec![rule(vec![ne(libc::AF_UNIX)?])?]);
    }
    Ok(rules)
}

/// `openat2` (mode behind a pointer) and the kernel keyring calls.
fn enosys_syscalls() -> [i64; 4] {
    [
        libc::SYS_openat2,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_keyctl,
    ]
}

fn xattr_setters() -> [i64; 4] {
    [
        libc::SYS_setxattr,
        libc::SYS_lsetxattr,
        libc::SYS_fsetxattr,
        SYS_SETXATTRAT,
    ]
}

/// Rules matching every call of each syscall.
fn whole(syscalls: &[i64]) -> Rules {
    syscalls.iter().map(|&nr| (nr, Vec::new())).collect()
}

/// Joins seccompiler programs (each: the architecture check, then its rules, answering
/// `ALLOW` when none matched) into one: every `ALLOW` but the last program's becomes a jump to
/// the next program, whose own architecture check is dropped. Jumps are relative and each
/// instruction is replaced one for one, so every offset stays valid.
fn stitch(programs: Vec<BpfProgram>) -> Result<BpfProgram, String> {
    let arch_check_len = 3;
    let first_check: Vec<sock_filter> = programs
        .first()
        .map(|p| p.iter().take(arch_check_len).cloned().collect())
        .unwrap_or_default();
    let count = programs.len();
    let mut out = Vec::new();
    for (i, program) in programs.into_iter().enumerate() {
        if program.len() <= arch_check_len || program[..arch_check_len] != first_check[..] {
            return Err("seccomp: unexpected program layout".into());
        }
        let body = if i == 0 {
            &program[..]
        } else {
            &program[arch_check_len..]
        };
        let last = i + 1 == count;
        for (j, instruction) in body.iter().enumerate() {
            if !last && instruction.code == BPF_RET_K && instruction.k == SECCOMP_RET_ALLOW {
                out.push(sock_filter {
                    code: BPF_JMP_JA,
                    jt: 0,
                    jf: 0,
                    k: (body.len() - 1 - j) as u32,
                });
            } else {
                out.push(instruction.clone());
            }
        }
    }
    Ok(out)
}

/// `if (nr >= 0x40000000) return ERRNO(EPERM);` (jumps are relative, so prepending is safe; the
/// arch check that follows still kills foreign architectures).
pub(crate) fn x32_guard() -> [sock_filter; 3] {
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
#[path = "seccomp/tests.rs"]
mod tests;
