//! The default read allowlist under the real sandbox: secrets the old, wider list exposed
//! (`/etc/shadow`, `~/.cargo/credentials.toml`, console devices) are unreadable, while what
//! toolchains need (the shell, Python with TLS, name lookups, time zones, git, cargo) still
//! works. Skipped, with a printed reason, where Landlock is unavailable.

use std::path::{Path, PathBuf};
use std::time::Duration;

use toolsmith_sandbox::exec::Launcher;
use toolsmith_sandbox::{ReadPolicy, SandboxPolicy};

use crate::common::{self, caps, sh};

/// Whether Landlock is here; prints the skip reason otherwise.
fn landlock(what: &str) -> bool {
    let ok = common::landlock();
    if !ok {
        eprintln!("SKIPPED {what}: Landlock is not available on this machine");
    }
    ok
}

fn root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A launcher for `root` whose read allowlist is the default one for `home`.
fn launcher(root: &Path, home: Option<&Path>, edit: impl FnOnce(&mut SandboxPolicy)) -> Launcher {
    let mut policy = SandboxPolicy::new(root.canonicalize().unwrap());
    policy.read = ReadPolicy::Allowlist(ReadPolicy::system_paths(home));
    policy.limits.timeout = Duration::from_secs(20);
    edit(&mut policy);
    Launcher::with_capabilities(common::helper(), policy, caps().clone())
}

/// The real home directory (for the toolchain checks), when there is one.
fn home() -> Option<PathBuf> {
    std::env::var_os("HOME").map(PathBuf::from)
}

/// `cat path` must fail with Landlock's (or the permission bits') `Permission denied`.
async fn assert_unreadable(l: &Launcher, path: &str) {
    let out = sh(l, &format!("head -c 16 {path}")).await;
    assert_eq!(out.exit_code, 1, "{path}: {out:?}");
    assert_eq!(out.stdout, "", "{path}: {out:?}");
    assert_eq!(
        out.stderr,
        format!("head: cannot open '{path}' for reading: Permission denied\n"),
        "{path}: {out:?}"
    );
}

#[tokio::test]
async fn etc_secrets_are_unreadable() {
    if !landlock("etc secrets") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let l = launcher(dir.path(), home().as_deref(), |_| {});
    for path in [
        "/etc/shadow",
        "/etc/gshadow",
        "/etc/ssl/private/x",
        "/etc/sudoers",
    ] {
        if Path::new(path).exists() {
            assert_unreadable(&l, path).await;
        }
    }
    // Listing /etc is not needed by anything and shows what is installed.
    let out = sh(&l, "ls /etc").await;
    assert_eq!(out.exit_code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "ls: cannot open directory '/etc': Permission denied\n"
    );
    if root() && Path::new("/etc/shadow").exists() {
        // The control: the same read works when the allowlist is not the guard.
        let l = launcher(dir.path(), None, |p| p.read = ReadPolicy::Everywhere);
        let out = sh(&l, "head -c 5 /etc/shadow").await;
        assert_eq!(out.stdout, "root:", "{out:?}");
    }
}

#[tokio::test]
async fn cargo_credentials_and_config_are_unreadable_but_its_caches_are_not() {
    if !landlock("cargo credentials") {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let cargo = home.path().join(".cargo");
    for sub in ["bin", "registry/cache", "git/db"] {
        std::fs::create_dir_all(cargo.join(sub)).unwrap();
    }
    for (file, text) in [
        ("credentials.toml", "[registry]\ntoken = \"cio-secret\"\n"),
        ("credentials", "[registry]\ntoken = \"cio-secret\"\n"),
        ("config.toml", "[registries.x]\ntoken = \"cio-secret\"\n"),
        ("config", "[registries.x]\ntoken = \"cio-secret\"\n"),
        ("registry/cache/crate.txt", "crate bytes\n"),
        ("git/db/pack.txt", "pack bytes\n"),
    ] {
        std::fs::write(cargo.join(file), text).unwrap();
    }
    std::fs::write(cargo.join("bin/tool"), "#!/bin/sh\necho tool ran\n").unwrap();
    std::fs::set_permissions(
        cargo.join("bin/tool"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let home = home.path().canonicalize().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let l = launcher(dir.path(), Some(&home), |_| {});
    for file in ["credentials.toml", "credentials", "config.toml", "config"] {
        assert_unreadable(&l, cargo.join(file).to_str().unwrap()).await;
    }
    let script = format!(
        "cat {c}/registry/cache/crate.txt {c}/git/db/pack.txt && {c}/bin/tool",
        c = cargo.display()
    );
    let out = sh(&l, &script).await;
    assert_eq!(out.stdout, "crate bytes\npack bytes\ntool ran\n", "{out:?}");
    assert_eq!(out.exit_code, 0, "{out:?}");
}

#[tokio::test]
async fn console_and_kernel_devices_are_unreadable() {
    if !landlock("console devices") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let l = launcher(dir.path(), None, |_| {});
    let mut checked = 0;
    for path in [
        "/dev/mem",
        "/dev/kmem",
        "/dev/port",
        "/dev/kmsg",
        "/dev/tty1",
        "/dev/console",
        "/dev/vcs",
        "/dev/loop0",
        "/dev/sda",
        "/dev/vda",
    ] {
        if Path::new(path).exists() {
            assert_unreadable(&l, path).await;
            checked += 1;
        }
    }
    assert!(
        checked > 0,
        "no console or kernel device to try on this machine"
    );
    // The named nodes still work.
    let out = sh(
        &l,
        "head -c 4 /dev/zero | od -An -tx1; head -c 2 /dev/full | od -An -tx1; \
         head -c 8 /dev/urandom | wc -c; head -c 8 /dev/random | wc -c; echo gone >/dev/null",
    )
    .await;
    assert_eq!(out.stdout, " 00 00 00 00\n 00 00\n8\n8\n", "{out:?}");
    assert_eq!((out.exit_code, out.stderr.as_str()), (0, ""), "{out:?}");
}

#[tokio::test]
async fn toolchains_still_work() {
    if !landlock("toolchains") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = home();
    let rustup = home.as_ref().map(|h| h.join(".rustup"));
    let l = launcher(dir.path(), home.as_deref(), |p| {
        // The sandbox's HOME is the root: point rustup at the real toolchains.
        if let Some(rustup) = rustup.filter(|r| r.exists()) {
            p.env
                .set
                .push(("RUSTUP_HOME".into(), rustup.to_string_lossy().into()));
        }
    });
    let uid = rustix::process::geteuid().as_raw();
    let name = if uid == 0 { "root" } else { "nobody" };
    let checks: &[(&str, String)] = &[
        ("echo ok", "ok\n".into()),
        ("ls /usr/bin >/dev/null && echo listed", "listed\n".into()),
        // passwd, group and nsswitch.conf.
        ("id -un; id -gn", format!("{name}\n{}\n", group_name())),
        // hosts, through nsswitch.conf.
        ("getent hosts localhost | head -c 9", "127.0.0.1".into()),
        // localtime (date falls back to UTC without it, so read it directly too).
        (
            "date +%Y >/dev/null && head -c 4 /etc/localtime",
            "TZif".into(),
        ),
        (
            "head -c 27 /etc/ssl/certs/ca-certificates.crt",
            "-----BEGIN CERTIFICATE-----".into(),
        ),
    ];
    for (script, want) in checks {
        let out = sh(&l, script).await;
        assert_eq!((out.exit_code, &out.stdout), (0, want), "{script}: {out:?}");
    }
    let python = "import ssl, json, urllib.parse; \
                  n = ssl.create_default_context().cert_store_stats()['x509_ca']; \
                  print(1, n > 0)";
    for py in ["/usr/bin/python3", "python3"] {
        if which(py).is_none() {
            eprintln!("SKIPPED {py}: not installed");
            continue;
        }
        let out = sh(&l, &format!("{py} -c \"{python}\"")).await;
        assert_eq!(
            (out.exit_code, out.stdout.as_str()),
            (0, "1 True\n"),
            "{py}: {out:?}"
        );
    }
    for (tool, prefix) in [
        ("git", "git version "),
        ("cargo", "cargo "),
        ("rustc", "rustc "),
    ] {
        let Some(path) = which(tool) else {
            eprintln!("SKIPPED {tool} --version: not installed");
            continue;
        };
        let out = sh(&l, &format!("{} --version", path.display())).await;
        assert_eq!(out.exit_code, 0, "{tool}: {out:?}");
        assert!(out.stdout.starts_with(prefix), "{tool}: {out:?}");
    }
    if which("git").is_some() {
        // Reads the system and user configuration and the user's passwd entry.
        let out = sh(
            &l,
            "GIT_COMMITTER_EMAIL=a@b git var GIT_COMMITTER_IDENT | cut -d' ' -f1",
        )
        .await;
        let want = format!("{name}\n");
        assert_eq!((out.exit_code, &out.stdout), (0, &want), "{out:?}");
    }
}

/// The effective group's name, as the host sees it.
fn group_name() -> String {
    let out = std::process::Command::new("id")
        .arg("-gn")
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// `program` when it has a `/`, else its first match in `PATH`.
fn which(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return Path::new(program).exists().then(|| PathBuf::from(program));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}
