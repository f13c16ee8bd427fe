//! The filter run through a small classic-BPF interpreter, so each rule's answer is checked
//! without installing anything.

use super::*;

/// `struct seccomp_data` as the kernel lays it out (native endianness).
fn data(nr: i64, args: [u64; 6]) -> Vec<u8> {
    let arch: u32 = if cfg!(target_arch = "x86_64") {
        0xC000_003E
    } else {
        0xC000_00B7
    };
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&(nr as u32).to_ne_bytes());
    bytes.extend_from_slice(&arch.to_ne_bytes());
    bytes.extend_from_slice(&0u64.to_ne_bytes());
    for arg in args {
        bytes.extend_from_slice(&arg.to_ne_bytes());
    }
    bytes
}

/// Runs `program` on `data`; returns the `SECCOMP_RET_*` value.
fn run(program: &[sock_filter], data: &[u8]) -> u32 {
    let (mut pc, mut acc) = (0usize, 0u32);
    loop {
        let ins = program[pc].clone();
        pc += 1;
        let jump = |cond: bool| usize::from(if cond { ins.jt } else { ins.jf });
        match ins.code {
            0x20 => {
                let k = ins.k as usize;
                acc = u32::from_ne_bytes(data[k..k + 4].try_into().unwrap());
            }
            0x54 => acc &= ins.k,
            0x05 => pc += ins.k as usize,
            0x15 => pc += jump(acc == ins.k),
            0x25 => pc += jump(acc > ins.k),
            0x35 => pc += jump(acc >= ins.k),
            0x45 => pc += jump(acc & ins.k != 0),
            0x06 => return ins.k,
            code => panic!("instruction {code:#x} not interpreted"),
        }
    }
}

const ALLOW: u32 = SECCOMP_RET_ALLOW;

fn errno(e: i32) -> u32 {
    SECCOMP_RET_ERRNO | e as u32
}

fn filter() -> BpfProgram {
    program(&SeccompPlan {
        deny_inet: true,
        deny_unix: true,
        mediate_loopback: false,
    })
    .unwrap()
}

#[test]
fn programs_compile_for_every_combination() {
    for deny_inet in [false, true] {
        for deny_unix in [false, true] {
            let plan = SeccompPlan {
                deny_inet,
                deny_unix,
                mediate_loopback: false,
            };
            assert!(program(&plan).unwrap().len() > 3);
        }
    }
}

#[test]
fn set_id_modes_are_denied_and_plain_modes_allowed() {
    let p = filter();
    let eperm = errno(libc::EPERM);
    let check = |nr: i64, args: [u64; 6], want: u32| {
        assert_eq!(run(&p, &data(nr, args)), want, "syscall {nr} {args:?}");
    };
    check(libc::SYS_fchmod, [3, 0o4755, 0, 0, 0, 0], eperm);
    check(libc::SYS_fchmod, [3, 0o2755, 0, 0, 0, 0], eperm);
    check(libc::SYS_fchmod, [3, 0o1777, 0, 0, 0, 0], ALLOW);
    check(libc::SYS_fchmodat, [0, 0, 0o6755, 0, 0, 0], eperm);
    check(libc::SYS_fchmodat, [0, 0, 0o755, 0, 0, 0], ALLOW);
    check(libc::SYS_fchmodat2, [0, 0, 0o4700, 0, 0, 0], eperm);
    let creat = libc::O_CREAT as u64 | libc::O_WRONLY as u64;
    let tmpfile = libc::O_TMPFILE as u64 | libc::O_RDWR as u64;
    check(libc::SYS_openat, [0, 0, creat, 0o4755, 0, 0], eperm);
    check(libc::SYS_openat, [0, 0, tmpfile, 0o2755, 0, 0], eperm);
    check(libc::SYS_openat, [0, 0, creat, 0o755, 0, 0], ALLOW);
    // Without O_CREAT/O_TMPFILE the mode is ignored by the kernel (and may be garbage).
    check(
        libc::SYS_openat,
        [0, 0, libc::O_RDONLY as u64, 0o4755, 0, 0],
        ALLOW,
    );
    check(
        libc::SYS_openat,
        [0, 0, libc::O_DIRECTORY as u64, 0o4755, 0, 0],
        ALLOW,
    );
    check(libc::SYS_mkdirat, [0, 0, 0o2775, 0, 0, 0], eperm);
    check(libc::SYS_mkdirat, [0, 0, 0o775, 0, 0, 0], ALLOW);
    let fifo = u64::from(libc::S_IFIFO) | 0o644;
    let chr = u64::from(libc::S_IFCHR) | 0o666;
    let blk = u64::from(libc::S_IFBLK) | 0o660;
    let sock = u64::from(libc::S_IFSOCK) | 0o644;
    check(libc::SYS_mknodat, [0, 0, fifo, 0, 0, 0], ALLOW);
    check(libc::SYS_mknodat, [0, 0, sock, 0, 0, 0], ALLOW);
    check(libc::SYS_mknodat, [0, 0, chr, 0x0103, 0, 0], eperm);
    check(libc::SYS_mknodat, [0, 0, blk, 0x0800, 0, 0], eperm);
    check(
        libc::SYS_mknodat,
        [0, 0, u64::from(libc::S_IFREG) | 0o4755, 0, 0, 0],
        eperm,
    );
    #[cfg(target_arch = "x86_64")]
    {
        check(libc::SYS_chmod, [0, 0o4755, 0, 0, 0, 0], eperm);
        check(libc::SYS_chmod, [0, 0o644, 0, 0, 0, 0], ALLOW);
        check(libc::SYS_open, [0, creat, 0o6755, 0, 0, 0], eperm);
        check(
            libc::SYS_open,
            [0, libc::O_RDONLY as u64, 0o6755, 0, 0, 0],
            ALLOW,
        );
        check(libc::SYS_creat, [0, 0o4755, 0, 0, 0, 0], eperm);
        check(libc::SYS_mkdir, [0, 0o2755, 0, 0, 0, 0], eperm);
        check(libc::SYS_mknod, [0, chr, 0, 0, 0, 0], eperm);
        check(libc::SYS_mknod, [0, fifo, 0, 0, 0, 0], ALLOW);
    }
}

#[test]
fn each_class_gets_its_own_answer() {
    let p = filter();
    let answer = |nr: i64| run(&p, &data(nr, [0; 6]));
    for nr in [
        libc::SYS_setxattr,
        libc::SYS_lsetxattr,
        libc::SYS_fsetxattr,
        SYS_SETXATTRAT,
    ] {
        assert_eq!(answer(nr), errno(libc::EOPNOTSUPP), "{nr}");
    }
    for nr in [
        libc::SYS_openat2,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_keyctl,
    ] {
        assert_eq!(answer(nr), errno(libc::ENOSYS), "{nr}");
    }
    for nr in [
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        SYS_OPEN_TREE_ATTR,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_io_uring_setup,
    ] {
        assert_eq!(answer(nr), errno(libc::EPERM), "{nr}");
    }
    for nr in [
        libc::SYS_read,
        libc::SYS_getxattr,
        libc::SYS_removexattr,
        libc::SYS_execve,
    ] {
        assert_eq!(answer(nr), ALLOW, "{nr}");
    }
    // Sockets, as before: INET denied, netlink allowed, unix denied by this plan.
    let socket = |family: i32| run(&p, &data(libc::SYS_socket, [family as u64, 1, 0, 0, 0, 0]));
    assert_eq!(socket(libc::AF_INET), errno(libc::EPERM));
    assert_eq!(socket(libc::AF_UNIX), errno(libc::EPERM));
    assert_eq!(socket(libc::AF_NETLINK), ALLOW);
    if cfg!(target_arch = "x86_64") {
        assert_eq!(answer(0x4000_0000 | 39), errno(libc::EPERM), "x32 getpid");
    }
}

#[test]
fn the_program_stays_small() {
    // Each syscall's check is reached by a binary search; the whole program is what the kernel
    // emulates per syscall number and JIT-compiles at install (see the module docs).
    let p = filter();
    assert!(p.len() < 120, "{} instructions", p.len());
    let entries = checks(&SeccompPlan {
        deny_inet: true,
        deny_unix: true,
        mediate_loopback: false,
    })
    .len();
    assert!(entries >= 30, "{entries}");
}
