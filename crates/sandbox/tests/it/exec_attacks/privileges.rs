//! No privilege planted for later (set-ID bits, file capabilities, device nodes) and no access
//! to the caller's kernel keyrings. Each attack is checked from outside afterwards: the mode
//! bits, extended attributes and file types of what the command left.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;
use std::process::Command;

use toolsmith_sandbox::exec::Launcher;
use toolsmith_sandbox::{Capabilities, SandboxPolicy, Strictness, UnixSockets};

use super::launcher;
use crate::common::{PYTHON, caps, helper, python, require, run};

/// Every file beneath `root` (not following links) with its mode and type.
fn walk(root: &Path) -> Vec<(String, std::fs::Metadata)> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let meta = entry.path().symlink_metadata().unwrap();
            if meta.is_dir() {
                dirs.push(entry.path());
            }
            let name = entry
                .path()
                .strip_prefix(root)
                .unwrap()
                .display()
                .to_string();
            found.push((name, meta));
        }
    }
    found
}

/// The names of the extended attributes of `path` (`llistxattr`).
#[allow(unsafe_code)]
fn xattrs(path: &Path) -> Vec<String> {
    let c_path = CString::new(path.as_os_str().as_bytes()).unwrap();
    let mut buf = vec![0u8; 4096];
    // SAFETY: a valid path and a buffer of buf.len() writable bytes.
    let n = unsafe { libc::llistxattr(c_path.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n <= 0 {
        return Vec::new();
    }
    buf[..n as usize]
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

/// Nothing beneath `root` grants anything: no set-ID bit, no device node, no extended
/// attribute.
fn assert_nothing_planted(root: &Path) {
    for (name, meta) in walk(root) {
        assert_eq!(
            meta.mode() & 0o6000,
            0,
            "{name} has a set-ID bit: {:o}",
            meta.mode()
        );
        let kind = meta.file_type();
        assert!(
            !kind.is_char_device() && !kind.is_block_device(),
            "{name} is a device node"
        );
        assert_eq!(xattrs(&root.join(&name)), Vec::<String>::new(), "{name}");
    }
}

#[tokio::test]
async fn set_id_binaries_cannot_be_planted_with_the_shell_tools() {
    if !require("seccomp privilege filter", caps().seccomp) {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let l = launcher(root.path(), |_| {});
    let script = "cp /bin/bash x; chmod 4755 x; echo chmod4755=$?; \
                  cp /bin/bash y; chmod 2755 y; echo chmod2755=$?; \
                  cp /bin/bash z; chmod u+s z; echo chmodu+s=$?; \
                  install -m 4755 /bin/bash w; echo install=$?; \
                  mkdir -m 2775 d; echo mkdir=$?; \
                  chmod 1777 x; echo sticky=$?; \
                  mkdir src; echo hi > src/f; cp -a src dst; echo cp-a=$?";
    let out = run(&l, "sh", &["-c", script]).await;
    assert_eq!(
        out.stdout, "chmod4755=1\nchmod2755=1\nchmodu+s=1\ninstall=1\nmkdir=1\nsticky=0\ncp-a=0\n",
        "{out:?}"
    );
    assert!(
        out.stderr
            .contains("chmod: changing permissions of 'x': Operation not permitted"),
        "{out:?}"
    );
    assert_nothing_planted(root.path());
    // The copies are there, only without the bits.
    let mode = |name: &str| std::fs::metadata(root.path().join(name)).unwrap().mode();
    assert_eq!(mode("y") & 0o7777, 0o755);
    assert_eq!(mode("x") & 0o7777, 0o1777);
    assert_eq!(
        std::fs::read_to_string(root.path().join("dst/f")).unwrap(),
        "hi\n"
    );

    // Control: without seccomp (best effort), the same command plants the bit.
    let control = tempfile::tempdir().unwrap();
    let no_seccomp = Capabilities {
        seccomp: false,
        ..caps().clone()
    };
    let mut policy = SandboxPolicy::new(control.path().canonicalize().unwrap());
    policy.strictness = Strictness::BestEffort;
    policy.unix_sockets = UnixSockets::Allow;
    let l = Launcher::with_capabilities(helper(), policy, no_seccomp);
    let out = run(&l, "sh", &["-c", "cp /bin/bash x && chmod 4755 x"]).await;
    assert_eq!(out.exit_code, 0, "{out:?}");
    let planted = std::fs::metadata(control.path().join("x")).unwrap().mode();
    assert_eq!(planted & 0o7777, 0o4755);
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("privilege filter (seccomp)"))
    );
}

#[tokio::test]
async fn modes_devices_and_file_capabilities_are_refused_to_raw_syscalls() {
    if !require("seccomp privilege filter", caps().seccomp) || !python() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let l = launcher(root.path(), |_| {});
    // A v2 `security.capability` value granting cap_setuid (bit 7), permitted + effective.
    let script = "import ctypes, errno, os, stat\n\
        libc = ctypes.CDLL(None, use_errno=True)\n\
        def t(name, f):\n\
        \x20   try:\n\
        \x20       f(); print(name, 'ok')\n\
        \x20   except OSError as e:\n\
        \x20       print(name, errno.errorcode[e.errno])\n\
        def sys(nr, *args):\n\
        \x20   if libc.syscall(nr, *args) < 0:\n\
        \x20       e = ctypes.get_errno(); raise OSError(e, os.strerror(e))\n\
        open('plain', 'w').close()\n\
        t('open-4755', lambda: os.close(os.open('a', os.O_CREAT | os.O_WRONLY, 0o4755)))\n\
        t('open-2755', lambda: os.close(os.open('b', os.O_CREAT | os.O_WRONLY, 0o2755)))\n\
        t('tmpfile-4755', lambda: os.close(os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o4755)))\n\
        t('open-755', lambda: os.close(os.open('c', os.O_CREAT | os.O_WRONLY, 0o755)))\n\
        t('chmod', lambda: os.chmod('plain', 0o4755))\n\
        t('mkdir', lambda: os.mkdir('d', 0o2755))\n\
        t('mknod-chr', lambda: os.mknod('null', 0o666 | stat.S_IFCHR, os.makedev(1, 3)))\n\
        t('mknod-blk', lambda: os.mknod('sda', 0o660 | stat.S_IFBLK, os.makedev(8, 0)))\n\
        t('mknod-fifo', lambda: os.mknod('fifo', 0o644 | stat.S_IFIFO))\n\
        cap = bytes([0, 0, 0, 2, 0x80, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])\n\
        t('security.capability', lambda: os.setxattr('plain', 'security.capability', cap))\n\
        t('user.xattr', lambda: os.setxattr('plain', 'user.x', b'1'))\n\
        t('acl', lambda: os.setxattr('plain', 'system.posix_acl_access', b'\\x02\\0\\0\\0'))\n\
        how = ctypes.create_string_buffer(24)\n\
        t('openat2', lambda: sys(437, -100, b'e', how, 24))\n\
        t('fchmodat2', lambda: sys(452, -100, b'plain', 0o6755, 0))\n";
    let out = run(&l, PYTHON, &["-c", script]).await;
    // Python names errno 95 ENOTSUP (EOPNOTSUPP has the same value on Linux).
    assert_eq!(
        out.stdout,
        "open-4755 EPERM\nopen-2755 EPERM\ntmpfile-4755 EPERM\nopen-755 ok\nchmod EPERM\n\
         mkdir EPERM\nmknod-chr EPERM\nmknod-blk EPERM\nmknod-fifo ok\n\
         security.capability ENOTSUP\nuser.xattr ENOTSUP\nacl ENOTSUP\nopenat2 ENOSYS\n\
         fchmodat2 EPERM\n",
        "{out:?}"
    );
    assert_nothing_planted(root.path());
    let names: Vec<String> = walk(root.path()).into_iter().map(|(n, _)| n).collect();
    assert!(
        !names
            .iter()
            .any(|n| ["a", "b", "null", "sda", "d"].contains(&n.as_str()))
    );
}

/// `add_key` in a fresh session keyring of the test's thread (which spawns the command), read
/// back by a plain child (so the key is really inherited), then out of the sandboxed command's
/// reach: every key syscall is `ENOSYS`.
#[allow(unsafe_code)]
#[tokio::test]
async fn the_callers_keyring_is_out_of_reach() {
    if !require("seccomp keyring filter", caps().seccomp) || !python() {
        return;
    }
    const KEY_SPEC_SESSION_KEYRING: i64 = -3;
    const KEYCTL_JOIN_SESSION_KEYRING: i64 = 1;
    const KEYCTL_READ: i64 = 11;
    const KEYCTL_INVALIDATE: i64 = 21;
    let secret = format!("toolsmith-key-{}", std::process::id());
    let (kind, description) = (c"user", c"toolsmith-test-key");
    // SAFETY: a NULL name asks for a new anonymous session keyring for this thread.
    unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_JOIN_SESSION_KEYRING,
            std::ptr::null::<libc::c_char>(),
        )
    };
    // SAFETY: NUL-terminated strings and a payload of secret.len() bytes.
    let key = unsafe {
        libc::syscall(
            libc::SYS_add_key,
            kind.as_ptr(),
            description.as_ptr(),
            secret.as_ptr(),
            secret.len(),
            KEY_SPEC_SESSION_KEYRING,
        )
    };
    if key < 0 {
        eprintln!(
            "SKIPPED keyring: add_key failed here: {}",
            std::io::Error::last_os_error()
        );
        return;
    }
    let read_key = format!(
        "import ctypes, os\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         buf = ctypes.create_string_buffer(256)\n\
         n = libc.syscall(250, {KEYCTL_READ}, {key}, buf, 256)\n\
         print('read', buf.raw[:n].decode() if n >= 0 else os.strerror(ctypes.get_errno()))\n\
         n = libc.syscall(250, 0, {KEY_SPEC_SESSION_KEYRING}, 0)\n\
         print('session', 'ok' if n >= 0 else os.strerror(ctypes.get_errno()))\n\
         n = libc.syscall(249, b'user', b'toolsmith-test-key', None, 0)\n\
         print('request', 'ok' if n >= 0 else os.strerror(ctypes.get_errno()))\n\
         n = libc.syscall(248, b'user', b'planted', b'x', 1, {KEY_SPEC_SESSION_KEYRING})\n\
         print('add', 'ok' if n >= 0 else os.strerror(ctypes.get_errno()))\n"
    );
    // Control: a plain child of the test reads the key.
    let plain = Command::new(PYTHON)
        .args(["-c", &read_key])
        .output()
        .unwrap();
    let plain = String::from_utf8_lossy(&plain.stdout).into_owned();

    let root = tempfile::tempdir().unwrap();
    let l = launcher(root.path(), |_| {});
    let out = run(&l, PYTHON, &["-c", &read_key]).await;
    // SAFETY: invalidating the key this test created.
    unsafe { libc::syscall(libc::SYS_keyctl, KEYCTL_INVALIDATE, key) };
    assert!(plain.starts_with(&format!("read {secret}\n")), "{plain}");
    assert_eq!(
        out.stdout,
        "read Function not implemented\nsession Function not implemented\n\
         request Function not implemented\nadd Function not implemented\n",
        "{out:?}"
    );
    if Path::new("/usr/bin/keyctl").exists() {
        let out = run(&l, "keyctl", &["show", "@s"]).await;
        assert_ne!(out.exit_code, 0, "{out:?}");
        assert!(!out.stdout.contains("toolsmith-test-key"), "{out:?}");
    }
}
