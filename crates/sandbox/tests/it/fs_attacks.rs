//! The filesystem attack suite against [`RootDir`] and through the file
//! tools: every escape is refused with the exact code and message, and nothing outside the root
//! is ever read or written, even while a directory is swapped for a symlink mid-call.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolsmith_builtins::Workspace;
use toolsmith_core::{Tool, ToolContext, ToolError};
use toolsmith_sandbox::{Capabilities, RootDir, SandboxPolicy};

use crate::common;

const SECRET: &str = "TOP-SECRET";
const ESCAPE: &str = "Path escapes sandbox root";
const VIA_SYMLINK: &str = "Path escapes sandbox root (via symlink)";

/// `outer/{root, outside/secret, rootevil/secret}`.
struct Fixture {
    _dir: tempfile::TempDir,
    outer: PathBuf,
    root: RootDir,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let outer = dir.path().canonicalize().unwrap();
        for sub in ["root", "outside", "rootevil"] {
            std::fs::create_dir(outer.join(sub)).unwrap();
        }
        std::fs::write(outer.join("outside/secret"), SECRET).unwrap();
        std::fs::write(outer.join("rootevil/secret"), SECRET).unwrap();
        std::fs::write(outer.join("root/file.txt"), "inside").unwrap();
        let root = RootDir::open(outer.join("root")).unwrap();
        Fixture {
            _dir: dir,
            outer,
            root,
        }
    }

    fn inside(&self, path: &str) -> PathBuf {
        self.outer.join("root").join(path)
    }

    fn outside(&self, path: &str) -> PathBuf {
        self.outer.join("outside").join(path)
    }

    fn workspace(&self) -> Arc<Workspace> {
        Workspace::new(SandboxPolicy::new(self.outer.join("root"))).unwrap()
    }

    /// The outside directory still holds only the untouched secret.
    fn assert_outside_untouched(&self) {
        let mut names: Vec<_> = std::fs::read_dir(self.outer.join("outside"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["secret"]);
        assert_eq!(
            std::fs::read_to_string(self.outside("secret")).unwrap(),
            SECRET
        );
    }
}

fn assert_blocked<T: std::fmt::Debug>(result: Result<T, ToolError>, code: &str, message: &str) {
    let err = result.unwrap_err();
    assert_eq!((err.code(), err.message()), (code, message));
}

/// The `degraded` module runs this module's tests under the helper's `degrade` mode: there
/// openat2 must be gone, so every test here exercises cap-std's component walk instead.
#[test]
fn openat2_is_gone_under_degrade() {
    let caps = Capabilities::detect_with(None);
    eprintln!(
        "openat2 available: {}; degraded run: {}",
        caps.openat2,
        common::degraded()
    );
    if common::degraded() {
        assert!(!caps.openat2, "openat2 still works under degrade");
        assert_eq!(
            caps.landlock_abi, None,
            "Landlock still works under degrade"
        );
    }
}

#[test]
fn legitimate_paths_are_allowed() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.inside("sub/dir")).unwrap();
    std::fs::write(f.inside("sub/dir/n.txt"), "nested").unwrap();
    symlink("file.txt", f.inside("link")).unwrap();
    symlink("link", f.inside("chain")).unwrap();
    symlink("sub/dir", f.inside("dirlink")).unwrap();
    assert_eq!(f.root.read_to_string("file.txt").unwrap(), "inside");
    assert_eq!(
        f.root.read_to_string("./sub/../file.txt").unwrap(),
        "inside"
    );
    assert_eq!(f.root.read_to_string("sub/dir/n.txt").unwrap(), "nested");
    assert_eq!(f.root.read_to_string("link").unwrap(), "inside");
    assert_eq!(f.root.read_to_string("chain").unwrap(), "inside");
    assert_eq!(f.root.read_to_string("dirlink/n.txt").unwrap(), "nested");
    let absolute = f.inside("file.txt");
    assert_eq!(
        f.root.read_to_string(absolute.to_str().unwrap()).unwrap(),
        "inside"
    );
    f.root.write_atomic("new/deep/file", b"x").unwrap();
    assert_eq!(std::fs::read(f.inside("new/deep/file")).unwrap(), b"x");
}

#[test]
fn dot_dot_absolute_and_sibling_paths_are_escapes() {
    let f = Fixture::new();
    let sibling = format!("{}evil/secret", f.outer.join("root").display());
    let outside = f.outside("secret");
    for path in [
        "../outside/secret",
        "sub/dir/../../../../../../etc/passwd",
        "../rootevil/secret",
        "/etc/passwd",
        "/proc/self/root/etc/passwd",
        sibling.as_str(),
        outside.to_str().unwrap(),
    ] {
        assert_blocked(f.root.read(path), "TOOL_PATH_ESCAPE", ESCAPE);
        assert_blocked(f.root.write_atomic(path, b"x"), "TOOL_PATH_ESCAPE", ESCAPE);
    }
    f.assert_outside_untouched();
}

#[test]
fn symlinks_out_are_escapes_via_symlink() {
    let f = Fixture::new();
    symlink(f.outside("secret"), f.inside("abs-file")).unwrap();
    symlink("../outside/secret", f.inside("rel-file")).unwrap();
    symlink(f.outer.join("outside"), f.inside("dir")).unwrap();
    symlink("/etc", f.inside("etcdir")).unwrap();
    // A chain that leaves on its third link.
    symlink("c2", f.inside("c1")).unwrap();
    symlink("c3", f.inside("c2")).unwrap();
    symlink("../outside/secret", f.inside("c3")).unwrap();
    // Magic links.
    symlink("/proc/self/root/etc/passwd", f.inside("proc-root")).unwrap();
    symlink("/proc/self/cwd", f.inside("proc-cwd")).unwrap();
    for path in [
        "abs-file",
        "rel-file",
        "dir/secret",
        "etcdir/passwd",
        "c1",
        "proc-root",
        "proc-cwd/Cargo.toml",
    ] {
        assert_blocked(f.root.read(path), "TOOL_PATH_ESCAPE", VIA_SYMLINK);
    }
    for path in ["dir/new.txt", "etcdir/passwd.sbxtest", "dir/sub/new.txt"] {
        assert_blocked(
            f.root.write_atomic(path, b"x"),
            "TOOL_PATH_ESCAPE",
            VIA_SYMLINK,
        );
    }
    assert_blocked(f.root.open_dir("dir"), "TOOL_PATH_ESCAPE", VIA_SYMLINK);
    assert_blocked(f.root.resolve_dir("dir"), "TOOL_PATH_ESCAPE", VIA_SYMLINK);
    assert!(!Path::new("/etc/passwd.sbxtest").exists());
    f.assert_outside_untouched();
}

#[test]
fn proc_self_fd_paths_and_links() {
    let f = Fixture::new();
    let held = std::fs::File::open(f.outside("secret")).unwrap();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&held);
    let path = format!("/proc/self/fd/{fd}");
    assert_blocked(f.root.read(&path), "TOOL_PATH_ESCAPE", ESCAPE);
    symlink(&path, f.inside("fdlink")).unwrap();
    assert_blocked(f.root.read("fdlink"), "TOOL_PATH_ESCAPE", VIA_SYMLINK);
    assert_blocked(
        f.root.write_atomic("fdlink/x", b"x"),
        "TOOL_PATH_ESCAPE",
        VIA_SYMLINK,
    );
    f.assert_outside_untouched();
}

#[test]
fn writing_through_a_symlink_out_is_refused_even_when_dangling() {
    let f = Fixture::new();
    symlink(f.outside("created"), f.inside("dangling")).unwrap();
    symlink("../outside/created", f.inside("dangling-rel")).unwrap();
    symlink(f.outside("secret"), f.inside("live")).unwrap();
    for path in ["dangling", "dangling-rel", "live"] {
        assert_blocked(
            f.root.write_atomic(path, b"data"),
            "TOOL_PATH_ESCAPE",
            VIA_SYMLINK,
        );
    }
    f.assert_outside_untouched();
    // A symlink that dangles inside the root is replaced by the file, not followed.
    symlink("nowhere", f.inside("inner")).unwrap();
    f.root.write_atomic("inner", b"data").unwrap();
    assert!(
        std::fs::symlink_metadata(f.inside("inner"))
            .unwrap()
            .file_type()
            .is_file()
    );
    assert!(!f.inside("nowhere").exists());
}

#[test]
fn writing_to_a_hard_link_replaces_the_link() {
    let f = Fixture::new();
    std::fs::hard_link(f.outside("secret"), f.inside("hard")).unwrap();
    f.root.write_atomic("hard", b"overwritten").unwrap();
    assert_eq!(std::fs::read(f.inside("hard")).unwrap(), b"overwritten");
    f.assert_outside_untouched();
}

#[test]
fn nul_bytes_and_over_long_paths_are_refused() {
    let f = Fixture::new();
    assert_blocked(
        f.root.read("file.txt\0/../../etc/passwd"),
        "TOOL_PATH_INVALID",
        "Path must be a string",
    );
    let long = "a/".repeat(3000) + "x"; // 6001 bytes, beyond PATH_MAX
    let component = "b".repeat(300); // beyond NAME_MAX
    for path in [long.as_str(), component.as_str()] {
        assert_blocked(
            f.root.read(path),
            "TOOL_PATH_TOO_LONG",
            "Path or file name too long",
        );
        assert_blocked(
            f.root.write_atomic(path, b"x"),
            "TOOL_PATH_TOO_LONG",
            "Path or file name too long",
        );
    }
    f.assert_outside_untouched();
}

#[test]
fn non_utf8_names_are_allowed() {
    let f = Fixture::new();
    let name = Path::new(std::ffi::OsStr::from_bytes(b"caf\xe9.txt"));
    std::fs::write(f.inside("").join(name), "latin-1 name").unwrap();
    let mut file = f.root.open_file_path(name).unwrap().into_std();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut file, &mut text).unwrap();
    assert_eq!(text, "latin-1 name");
}

#[test]
fn fifos_and_devices_are_not_read() {
    let f = Fixture::new();
    symlink("/dev/zero", f.inside("zero")).unwrap();
    assert_blocked(f.root.read("zero"), "TOOL_PATH_ESCAPE", VIA_SYMLINK);
    let status = std::process::Command::new("mkfifo")
        .arg(f.inside("fifo"))
        .status();
    if status.is_ok_and(|s| s.success()) {
        // Opened non-blocking and refused: this must not hang.
        assert_blocked(
            f.root.read("fifo"),
            "TOOL_NOT_A_FILE",
            "Not a regular file: fifo",
        );
    }
}

/// Sets up `root/sub` (benign `passwd`) and `root/swap` → `outer/target` (secret `passwd`).
fn swap_fixture() -> Fixture {
    let f = Fixture::new();
    std::fs::create_dir(f.inside("sub")).unwrap();
    std::fs::write(f.inside("sub/passwd"), "benign").unwrap();
    std::fs::create_dir(f.outer.join("target")).unwrap();
    std::fs::write(f.outer.join("target/passwd"), SECRET).unwrap();
    symlink(f.outer.join("target"), f.inside("swap")).unwrap();
    f
}

/// A thread exchanging `a` and `b` with `renameat2(RENAME_EXCHANGE)` until told to stop; it
/// returns the number of swaps.
fn swap_repeatedly(a: PathBuf, b: PathBuf) -> (Arc<AtomicBool>, std::thread::JoinHandle<u64>) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let handle = std::thread::spawn(move || {
        let mut swaps = 0u64;
        while !flag.load(Ordering::Relaxed) {
            rustix::fs::renameat_with(
                rustix::fs::CWD,
                &a,
                rustix::fs::CWD,
                &b,
                rustix::fs::RenameFlags::EXCHANGE,
            )
            .unwrap();
            swaps += 1;
        }
        swaps
    });
    (stop, handle)
}

/// Whether `code` is an acceptable refusal for a read racing the swap: `TOOL_PATH_ESCAPE`; under
/// `degrade` (no openat2) also what cap-std's component walk meets when the swap lands between
/// its steps: `TOOL_NOT_A_DIRECTORY` (`sub` opened with `O_NOFOLLOW` while it is the symlink)
/// and `TOOL_IO_ERROR` (`EINVAL` from reading that link once it is a directory again). The
/// content check is what proves nothing leaks.
fn refused_in_race(code: &str) -> bool {
    code == "TOOL_PATH_ESCAPE"
        || (common::degraded() && ["TOOL_NOT_A_DIRECTORY", "TOOL_IO_ERROR"].contains(&code))
}

/// Swaps `root/sub` (a real directory holding a benign `passwd`) with a symlink to an outside
/// directory (holding a secret `passwd`) with `renameat2(RENAME_EXCHANGE)` for ~1.5 s, while
/// reads and writes go through `sub/`.
#[test]
fn a_directory_swapped_for_a_symlink_mid_call_never_leaks() {
    let f = swap_fixture();
    let (stop, swapper) = swap_repeatedly(f.inside("sub"), f.inside("swap"));

    let deadline = Instant::now() + Duration::from_millis(1500);
    let (mut reads, mut benign, mut writes) = (0u64, 0u64, 0u64);
    while Instant::now() < deadline {
        reads += 1;
        match f.root.read_to_string("sub/passwd") {
            Ok(text) => {
                assert_eq!(text, "benign", "read outside the root");
                benign += 1;
            }
            Err(err) => assert!(refused_in_race(err.code()), "{err:?}"),
        }
        if f.root.write_atomic("sub/written", b"w").is_ok() {
            writes += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 100 && reads > 100, "swaps {swaps}, reads {reads}");
    assert!(benign > 0 && writes > 0, "benign {benign}, writes {writes}");

    let mut names: Vec<_> = std::fs::read_dir(f.outer.join("target"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["passwd"], "a write landed outside the root");
    assert_eq!(
        std::fs::read_to_string(f.outer.join("target/passwd")).unwrap(),
        SECRET
    );
}

async fn call(tool: &impl Tool, input: Value) -> Result<String, ToolError> {
    let cx = ToolContext::for_test(tool.spec().name());
    tool.call(input, &cx).await.map(|out| out.model.to_text())
}

#[tokio::test]
async fn the_tools_refuse_the_same_attacks() {
    use toolsmith_builtins::{edit, glob, grep, read, write};
    let f = Fixture::new();
    let ws = f.workspace();
    symlink(f.outer.join("outside"), f.inside("dir")).unwrap();
    symlink(f.outside("secret"), f.inside("link")).unwrap();
    std::fs::hard_link(f.outside("secret"), f.inside("hard")).unwrap();

    for (path, message) in [
        ("../outside/secret", ESCAPE),
        ("/etc/passwd", ESCAPE),
        ("link", VIA_SYMLINK),
        ("dir/secret", VIA_SYMLINK),
    ] {
        assert_blocked(
            call(&read(&ws), json!({"path": path})).await,
            "TOOL_PATH_ESCAPE",
            message,
        );
        assert_blocked(
            call(&write(&ws), json!({"path": path, "content": "x"})).await,
            "TOOL_PATH_ESCAPE",
            message,
        );
        assert_blocked(
            call(
                &edit(&ws),
                json!({"path": path, "old_string": SECRET, "new_string": "x"}),
            )
            .await,
            "TOOL_PATH_ESCAPE",
            message,
        );
        assert_blocked(
            call(&grep(&ws), json!({"pattern": "SECRET", "path": path})).await,
            "TOOL_PATH_ESCAPE",
            message,
        );
    }
    assert_blocked(
        call(&glob(&ws), json!({"pattern": "*", "path": "dir"})).await,
        "TOOL_PATH_ESCAPE",
        VIA_SYMLINK,
    );
    // The walk does not follow symlinks out; the hard link is the known exception (its inode
    // is outside, its name inside; no path-based check can tell).
    assert_eq!(
        call(&grep(&ws), json!({"pattern": "SECRET"}))
            .await
            .unwrap(),
        format!("hard:1:{SECRET}\n")
    );
    assert_eq!(
        call(&glob(&ws), json!({"pattern": "**/secret"}))
            .await
            .unwrap(),
        ""
    );
    // Editing the hard link replaces it: the outside file is unchanged.
    call(
        &edit(&ws),
        json!({"path": "hard", "old_string": "TOP", "new_string": "NOT"}),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(f.inside("hard")).unwrap(),
        "NOT-SECRET"
    );
    f.assert_outside_untouched();
}

#[tokio::test]
async fn the_tools_never_leak_during_a_swap_race() {
    use toolsmith_builtins::{glob, grep, read};
    let f = swap_fixture();
    std::fs::write(f.outer.join("target/outside-only.txt"), SECRET).unwrap();
    let ws = f.workspace();
    let (stop, swapper) = swap_repeatedly(f.inside("sub"), f.inside("swap"));
    let deadline = Instant::now() + Duration::from_millis(1000);
    let (mut calls, mut benign) = (0u64, 0u64);
    while Instant::now() < deadline {
        calls += 1;
        match call(&read(&ws), json!({"path": "sub/passwd"})).await {
            Ok(text) => {
                assert_eq!(text, "benign");
                benign += 1;
            }
            Err(err) => assert!(
                err.code() == "TOOL_FILE_NOT_FOUND" || refused_in_race(err.code()),
                "{err:?}"
            ),
        }
        for path in [".", "sub", "sub/passwd"] {
            if let Ok(out) = call(&grep(&ws), json!({"pattern": ".", "path": path})).await {
                assert!(!out.contains(SECRET), "grep read outside: {out}");
            }
        }
        if let Ok(out) = call(&glob(&ws), json!({"pattern": "**"})).await {
            assert!(!out.contains("outside-only"), "glob listed outside: {out}");
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 100 && calls > 10, "swaps {swaps}, calls {calls}");
    assert!(benign > 0);
}

/// Runs a tool call on a thread and runtime of its own; `None` if it has not returned within
/// 10 s (a FIFO opened by path blocks for ever, and so would this test without the bound).
fn call_within_10s(tool: impl Tool + 'static, input: Value) -> Option<Result<String, ToolError>> {
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _ = done.send(runtime.block_on(call(&tool, input)));
    });
    result.recv_timeout(Duration::from_secs(10)).ok()
}

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
}

/// The walk of `grep` and `glob` reads ignore files only through the root: a FIFO named
/// `.gitignore` (which hung the tool for ever), a symlink to `/dev/zero` (which exhausted
/// memory), a symlink to an ignore file outside (which was read), an oversized one, a directory,
/// a symlinked `.git/info/exclude` and a worktree `.git` file pointing outside are all skipped;
/// had any been read, its `*` rule would hide every file.
#[test]
fn the_walk_reads_ignore_files_only_through_the_root() {
    use toolsmith_builtins::{glob, grep};
    let f = Fixture::new();
    let ignores = f.outer.join("ignores");
    std::fs::create_dir_all(ignores.join("common/info")).unwrap();
    std::fs::create_dir_all(ignores.join("wt")).unwrap();
    std::fs::write(ignores.join("all"), "*\n").unwrap();
    std::fs::write(ignores.join("wt/commondir"), "../common\n").unwrap();
    std::fs::write(ignores.join("common/info/exclude"), "*\n").unwrap();
    for dir in ["big", "dirig", "repo/.git/info", "sub", "wt"] {
        std::fs::create_dir_all(f.inside(dir)).unwrap();
    }
    for dir in ["big", "dirig", "repo", "sub", "wt"] {
        std::fs::write(f.inside(&format!("{dir}/kept.txt")), "inside").unwrap();
    }
    mkfifo(&f.inside(".gitignore"));
    symlink("/dev/zero", f.inside("sub/.gitignore")).unwrap();
    symlink(ignores.join("all"), f.inside("sub/.ignore")).unwrap();
    let big = std::fs::File::create(f.inside("big/.ignore")).unwrap();
    std::io::Write::write_all(&mut &big, b"*\n").unwrap();
    big.set_len(2 << 20).unwrap();
    std::fs::create_dir(f.inside("dirig/.gitignore")).unwrap();
    symlink(ignores.join("all"), f.inside("repo/.git/info/exclude")).unwrap();
    std::fs::write(f.inside("wt/.git"), "gitdir: ../../ignores/wt\n").unwrap();
    let ws = f.workspace();

    let notes = "[ignore file skipped: .gitignore: not a regular file]\n\
        [ignore file skipped: big/.ignore: larger than 1048576 bytes]\n\
        [ignore file skipped: dirig/.gitignore: not a regular file]\n\
        [ignore file skipped: repo/.git/info/exclude: a symbolic link, not followed]\n\
        [ignore file skipped: sub/.ignore: a symbolic link, not followed]\n\
        [ignore file skipped: sub/.gitignore: a symbolic link, not followed]\n";
    let out = call_within_10s(grep(&ws), json!({"pattern": "inside"}))
        .expect("grep did not return within 10 s")
        .unwrap();
    assert_eq!(
        out,
        format!(
            "big/kept.txt:1:inside\ndirig/kept.txt:1:inside\nfile.txt:1:inside\n\
             repo/kept.txt:1:inside\nsub/kept.txt:1:inside\nwt/kept.txt:1:inside\n{notes}"
        )
    );
    let out = call_within_10s(glob(&ws), json!({"pattern": "**/*.txt"}))
        .expect("glob did not return within 10 s")
        .unwrap();
    let (paths, rest) = out.split_at(out.find("[ignore").unwrap());
    let mut paths: Vec<&str> = paths.lines().collect();
    paths.sort_unstable();
    assert_eq!(
        paths,
        [
            "big/kept.txt",
            "dirig/kept.txt",
            "file.txt",
            "repo/kept.txt",
            "sub/kept.txt",
            "wt/kept.txt"
        ]
    );
    assert_eq!(rest, notes);
    f.assert_outside_untouched();
}

/// `.gitignore` swapped between a regular file (`*.log`) and a symlink to an outside file
/// (`*`) with `renameat2(RENAME_EXCHANGE)` while the tools walk: the outside rules never
/// apply (they would hide `file.txt`).
#[tokio::test]
async fn an_ignore_file_swapped_for_a_symlink_out_is_never_read() {
    use toolsmith_builtins::{glob, grep};
    let f = Fixture::new();
    std::fs::create_dir(f.outer.join("ignores")).unwrap();
    std::fs::write(f.outer.join("ignores/all"), "*\n").unwrap();
    std::fs::write(f.inside(".gitignore"), "*.log\n").unwrap();
    symlink(f.outer.join("ignores/all"), f.inside("swapped")).unwrap();
    let ws = f.workspace();
    let (stop, swapper) = swap_repeatedly(f.inside(".gitignore"), f.inside("swapped"));
    let deadline = Instant::now() + Duration::from_millis(1000);
    let (mut calls, mut skipped) = (0u64, 0u64);
    while Instant::now() < deadline {
        calls += 1;
        let out = call(&grep(&ws), json!({"pattern": "inside"}))
            .await
            .unwrap();
        assert!(out.starts_with("file.txt:1:inside\n"), "{out}");
        skipped += u64::from(out.contains("a symbolic link, not followed"));
        let out = call(&glob(&ws), json!({"pattern": "*.txt"})).await.unwrap();
        assert!(out.starts_with("file.txt\n"), "{out}");
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 100 && calls > 10, "swaps {swaps}, calls {calls}");
    assert!(skipped > 0, "the symlink was never met");
}
