//! The helper a launcher starts ahead of its next launch (the *spare*): it serves that launch,
//! waits in a session of its own, is replaced when it died, and dies with its launcher. Prepared
//! ahead (its namespaces entered before its plan), it serves only the plans of the policy it was
//! prepared for, and no two commands share a namespace.
//!
//! The tests look at this process' children in `/proc`, so they take turns. Alone in its
//! binary, not a module of `tests/it`: every launcher keeps a spare helper, and these tests
//! take every helper child of the process for theirs (they count them, and kill them), so the
//! other sandbox tests' launchers in the same process would break them and be broken. It shares
//! `tests/it/common` with them.

#[path = "it/common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use toolsmith_sandbox::exec::{Ahead, ExecRequest, LandlockPlan, Launcher, Plan};
use toolsmith_sandbox::{NetworkPolicy, SandboxPolicy};

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The start of a test: the serial lock (the tests count this process' helpers) and a
/// temporary root, canonical; `None`, the test skipped, when it `needs_namespaces` and this
/// machine has none.
async fn begin(
    needs_namespaces: bool,
) -> Option<(
    tokio::sync::MutexGuard<'static, ()>,
    tempfile::TempDir,
    std::path::PathBuf,
)> {
    let serial = SERIAL.lock().await;
    if needs_namespaces && !namespaces() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    Some((serial, dir, root))
}

fn launcher(root: &std::path::Path) -> Launcher {
    Launcher::new(common::helper(), SandboxPolicy::new(root))
}

fn echo(root: &std::path::Path, text: &str) -> ExecRequest {
    ExecRequest::new("echo", vec![text.into()], root)
}

/// This process' children that are sandbox helpers (`comm` is cut to 15 bytes), with their
/// `/proc/<pid>/stat` fields after the command name: state, ppid, pgrp, session, ….
fn helpers() -> Vec<(u32, Vec<String>)> {
    children_named("toolsmith-sandb")
}

/// This process' resident helpers that have not exited.
fn residents() -> Vec<u32> {
    children_named("toolsmith-resid")
        .into_iter()
        .filter(|(_, fields)| fields[0] != "Z")
        .map(|(pid, _)| pid)
        .collect()
}

/// This process' children whose `comm` starts with `name`, with their `/proc/<pid>/stat`
/// fields after the command name.
fn children_named(name: &str) -> Vec<(u32, Vec<String>)> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = &stat[open + 1..close];
        let fields: Vec<String> = stat[close + 1..]
            .split_whitespace()
            .map(String::from)
            .collect();
        if comm.starts_with(name) && fields.get(1) == Some(&me) {
            found.push((pid, fields));
        }
    }
    found
}

/// The helpers waiting (sleeping, not yet in a pid namespace of their own) once one exists.
fn wait_for_spares() -> BTreeSet<u32> {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let spares: BTreeSet<u32> = helpers()
            .into_iter()
            .filter(|(_, fields)| fields[0] == "S")
            .map(|(pid, _)| pid)
            .collect();
        if !spares.is_empty() || Instant::now() > until {
            return spares;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Whether `pid` has exited and waits to be reaped.
fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rfind(')')
                .map(|i| stat[i + 1..].trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

fn kill(pid: u32) {
    let pid = rustix::process::Pid::from_raw(pid as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
}

/// Waits (5 s at most) until every one of `pids` has exited: gone, or a zombie.
fn wait_exited(pids: &[u32]) {
    let until = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|p| alive(*p) && !zombie(*p)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[tokio::test]
async fn a_spare_waits_in_its_own_session_and_serves_the_next_launch() {
    let Some((_serial, _dir, root)) = begin(false).await else {
        return;
    };
    let launcher = launcher(&root);
    assert_eq!(
        launcher.run(&echo(&root, "one")).await.unwrap().stdout,
        "one\n"
    );
    // Ready: a prepared spare's PID 1 (the spare that forked it has exited), or the spare.
    assert!(launcher.warm_up());
    let spares = wait_for_spares();
    assert_eq!(spares.len(), 1, "one spare after a launch: {:?}", helpers());
    let spare = *spares.first().unwrap();
    let fields = helpers().into_iter().find(|(p, _)| *p == spare).unwrap().1;
    // A session (and process group) of its own: a Ctrl-C on the terminal does not reach it.
    assert_eq!(fields[2], spare.to_string(), "process group");
    assert_eq!(fields[3], spare.to_string(), "session");

    let out = launcher.run(&echo(&root, "two")).await.unwrap();
    assert_eq!((out.exit_code, out.stdout.as_str()), (0, "two\n"));
    let until = Instant::now() + Duration::from_secs(5);
    while alive(spare) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!alive(spare), "the spare ran the second launch and exited");
}

#[tokio::test]
async fn a_spare_that_died_is_replaced_by_a_fresh_helper() {
    let Some((_serial, _dir, root)) = begin(false).await else {
        return;
    };
    let launcher = launcher(&root);
    launcher.run(&echo(&root, "one")).await.unwrap();
    assert!(launcher.warm_up());
    let spares = wait_for_spares();
    assert!(!spares.is_empty());
    spares.iter().copied().for_each(kill);
    // Dead: its files closed, so the plan cannot be sent to it. (A spare killed while its plan
    // is on the way dies as a command killed by SIGKILL would, and is reported so.)
    wait_exited(&spares.iter().copied().collect::<Vec<_>>());
    let out = launcher.run(&echo(&root, "after")).await.unwrap();
    assert_eq!((out.exit_code, out.stdout.as_str()), (0, "after\n"));
}

#[tokio::test]
async fn dropping_the_launcher_kills_and_reaps_its_spare() {
    let Some((_serial, _dir, root)) = begin(false).await else {
        return;
    };
    let launcher = launcher(&root);
    launcher.run(&echo(&root, "one")).await.unwrap();
    // Ready: with namespaces, the spare's PID 1 (this process' child) is what waits.
    assert!(launcher.warm_up());
    let spares = wait_for_spares();
    assert!(!spares.is_empty());
    let pid1s: Vec<u32> = spares.iter().flat_map(|p| children(*p)).collect();
    drop(launcher);
    let until = Instant::now() + Duration::from_secs(5);
    while spares.iter().any(|p| alive(*p)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    // Gone from /proc: killed and reaped (a zombie would still be listed).
    assert!(!spares.iter().any(|p| alive(*p)), "{:?}", helpers());
    assert!(
        children_named("toolsmith-resid").is_empty(),
        "the resident helper is gone"
    );
    while pid1s.iter().any(|p| alive(*p) && !zombie(*p)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!pid1s.iter().any(|p| alive(*p) && !zombie(*p)), "{pid1s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_launches_each_get_a_helper() {
    let Some((_serial, _dir, root)) = begin(false).await else {
        return;
    };
    let launcher = std::sync::Arc::new(launcher(&root));
    for round in 0..3 {
        let runs: Vec<_> = (0..6)
            .map(|i| {
                let (launcher, root) = (launcher.clone(), root.clone());
                tokio::spawn(async move {
                    let text = format!("{round}-{i}");
                    let out = launcher.run(&echo(&root, &text)).await.unwrap();
                    assert_eq!(out.stdout, format!("{text}\n"));
                })
            })
            .collect();
        for run in runs {
            run.await.unwrap();
        }
    }
}

/// The children of `pid`.
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Whether this machine gives a launch user, network, pid and mount namespaces (a spare is then
/// prepared in them); prints the skip line otherwise.
fn namespaces() -> bool {
    let caps = common::caps();
    common::require(
        "namespaces",
        (caps.user_namespaces || caps.running_as_root)
            && caps.net_namespaces
            && caps.pid_namespaces
            && caps.mount_namespaces,
    )
}

/// A spare that has entered its namespaces: its PID 1, this process' own child (forked with
/// `CLONE_PARENT`; the spare that forked it has exited), in a network namespace other than this
/// process'. Waits for one (5 s at most).
fn wait_for_prepared_spare() -> Option<u32> {
    let ours = std::fs::read_link("/proc/self/ns/net").unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        for pid1 in wait_for_spares() {
            if std::fs::read_link(format!("/proc/{pid1}/ns/net")).is_ok_and(|ns| ns != ours) {
                return Some(pid1);
            }
        }
        if Instant::now() > until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[tokio::test]
async fn a_spare_enters_fresh_namespaces_before_its_plan_and_no_two_commands_share_one() {
    let Some((_serial, _dir, root)) = begin(true).await else {
        return;
    };
    let launcher = launcher(&root);
    let kinds = ["net", "pid", "mnt", "user"];
    let links: Vec<String> = kinds.iter().map(|k| format!("/proc/self/ns/{k}")).collect();
    let request = ExecRequest::new("readlink", links.clone(), &root);
    // The first launch starts a helper of its own; each one after it is served by the spare
    // prepared while the one before ran.
    launcher.run(&request).await.unwrap();
    let ours: Vec<String> = links
        .iter()
        .map(|l| {
            std::fs::read_link(l)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    // The namespaces' files stay open, so no namespace number is reused (the kernel recycles
    // them once a namespace is gone).
    let mut held = Vec::new();
    let mut seen: Vec<Vec<String>> = Vec::new();
    for round in 0..3 {
        let pid1 = wait_for_prepared_spare().expect("a prepared spare");
        let prepared: Vec<String> = kinds
            .iter()
            .map(|k| {
                let path = format!("/proc/{pid1}/ns/{k}");
                held.push(std::fs::File::open(&path).unwrap());
                std::fs::read_link(&path)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        let out = launcher.run(&request).await.unwrap();
        assert_eq!(out.exit_code, 0, "{out:?}");
        let got: Vec<String> = out.stdout.lines().map(String::from).collect();
        assert_eq!(
            got, prepared,
            "round {round}: the command runs in its spare's namespaces"
        );
        seen.push(got);
    }
    for (i, kind) in kinds.iter().enumerate() {
        let mut all: BTreeSet<&str> = seen.iter().map(|s| s[i].as_str()).collect();
        assert_eq!(all.len(), seen.len(), "{kind} namespaces shared: {seen:?}");
        all.insert(&ours[i]);
        assert_eq!(
            all.len(),
            seen.len() + 1,
            "{kind}: toolsmith's own: {seen:?}"
        );
    }
}

/// Waits until `done`, for a let-go on a blocking thread: up to 30 s, as letting a mount
/// namespace go waits for an RCU grace period, which a loaded machine can make long (the
/// assertion after it fails on a leak, not on a slow let-go).
async fn settled(mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The namespaces this process holds open (descriptors naming a mount or network namespace
/// other than its own).
fn held_namespaces() -> Vec<String> {
    let ours = ["mnt", "net"].map(|k| std::fs::read_link(format!("/proc/self/ns/{k}")).unwrap());
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter(|link| {
            let text = link.to_string_lossy();
            (text.starts_with("mnt:[") || text.starts_with("net:[")) && !ours.contains(link)
        })
        .map(|link| link.to_string_lossy().into_owned())
        .collect()
}

#[tokio::test]
async fn the_namespaces_a_launch_held_are_let_go_once_it_is_over() {
    let Some((_serial, _dir, root)) = begin(true).await else {
        return;
    };
    let launcher = launcher(&root);
    for i in 0..8 {
        let out = launcher.run(&echo(&root, &i.to_string())).await.unwrap();
        assert_eq!(out.exit_code, 0, "{out:?}");
    }
    // What is left open once the blocking threads have let go: the next spare's two (its mount
    // and network namespaces, sent with its readiness), nothing of the eight launches. Compared
    // by name, not counted: the last launch's two, not yet let go, and the next spare's, not
    // yet received, would count as the two expected.
    let pid1 = wait_for_prepared_spare().expect("the next spare");
    let spare: BTreeSet<String> = ["mnt", "net"]
        .iter()
        .map(|k| {
            let link = std::fs::read_link(format!("/proc/{pid1}/ns/{k}")).unwrap();
            link.to_string_lossy().into_owned()
        })
        .collect();
    let held_set = || held_namespaces().into_iter().collect::<BTreeSet<_>>();
    settled(|| held_set() == spare).await;
    assert_eq!(held_set(), spare, "namespaces still held");
    drop(launcher);
    settled(|| held_namespaces().is_empty()).await;
    assert_eq!(
        held_namespaces(),
        Vec::<String>::new(),
        "held after the launcher is gone"
    );
}

/// The control groups this process made (named `toolsmith-<pid>-…`), across the hierarchies.
fn our_groups(support: &toolsmith_sandbox::exec::CgroupSupport) -> Vec<std::path::PathBuf> {
    let ours = format!("toolsmith-{}-", std::process::id());
    support
        .hierarchies()
        .iter()
        .filter_map(|h| std::fs::read_dir(&h.parent).ok())
        .flatten()
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(&ours))
        .map(|entry| entry.path())
        .collect()
}

#[tokio::test]
async fn a_command_group_is_taken_back_after_its_launch_and_removed_with_the_launcher() {
    let Some((_serial, _dir, root)) = begin(true).await else {
        return;
    };
    let support = toolsmith_sandbox::exec::CgroupSupport::detect();
    if support.hierarchies().is_empty() {
        eprintln!("SKIPPED: cgroups: {}", support.describe());
        return;
    }
    let launcher = launcher(&root);
    for i in 0..8 {
        let out = launcher.run(&echo(&root, &i.to_string())).await.unwrap();
        assert_eq!(out.exit_code, 0, "{out:?}");
    }
    // Each launch's group, emptied by PID 1's exit, is taken back once the launch is over and
    // serves a later one: what exists is the next spare's group and at most one kept, per
    // hierarchy, not one per launch. The next spare's group is made before it prepares: once
    // it has, the count can only fall (the last launch's group may not be taken back yet).
    wait_for_prepared_spare().expect("the next spare");
    let per = support.hierarchies().len();
    settled(|| our_groups(&support).len() <= 2 * per).await;
    let groups = our_groups(&support);
    assert!(groups.len() <= 2 * per, "{groups:?}");
    drop(launcher);
    settled(|| our_groups(&support).is_empty()).await;
    assert_eq!(our_groups(&support), Vec::<std::path::PathBuf>::new());
}

#[tokio::test]
async fn a_listener_of_one_command_is_not_in_the_next_ones_network() {
    let Some((_serial, _dir, root)) = begin(true).await else {
        return;
    };
    if !common::require("python", common::python()) {
        return;
    }
    let mut policy = SandboxPolicy::new(&root);
    policy.network = NetworkPolicy::LoopbackOnly;
    let launcher = Launcher::new(common::helper(), policy);
    // Its pid, then the listening sockets on 127.0.0.1:47613 (0xB9FD, state 0A) in
    // /proc/net/tcp.
    let script = |bind: bool| {
        format!(
            "import os, socket\n\
             if {bind}:\n    s = socket.socket(); s.bind(('127.0.0.1', 47613)); s.listen()\n\
             print(os.getpid())\n\
             print(sum(1 for l in open('/proc/net/tcp') if ':B9FD ' in l and l.split()[3] == '0A'))",
            bind = if bind { "True" } else { "False" }
        )
    };
    let python =
        |bind: bool| ExecRequest::new(common::PYTHON, vec!["-c".into(), script(bind)], &root);
    let first = launcher.run(&python(true)).await.unwrap();
    assert_eq!(first.exit_code, 0, "{first:?}");
    assert!(wait_for_prepared_spare().is_some());
    let second = launcher.run(&python(false)).await.unwrap();
    assert_eq!(second.exit_code, 0, "{second:?}");
    let (first, second): (Vec<&str>, Vec<&str>) = (
        first.stdout.lines().collect(),
        second.stdout.lines().collect(),
    );
    assert_eq!(first[1], "1", "the first command listens: {first:?}");
    assert_eq!(
        second[1], "0",
        "the first command's listener is visible: {second:?}"
    );
}

#[tokio::test]
async fn a_spare_whose_pid_1_died_is_replaced_by_a_fresh_helper() {
    let Some((_serial, _dir, root)) = begin(true).await else {
        return;
    };
    let launcher = launcher(&root);
    launcher.run(&echo(&root, "one")).await.unwrap();
    let pid1 = wait_for_prepared_spare().expect("a prepared spare");
    kill(pid1);
    wait_exited(&[pid1]);
    let out = launcher.run(&echo(&root, "after")).await.unwrap();
    assert_eq!((out.exit_code, out.stdout.as_str()), (0, "after\n"));
}

#[tokio::test]
async fn a_helper_prepared_for_one_policy_refuses_the_plan_of_another() {
    let Some((_serial, _dir, root)) = begin(true).await else {
        return;
    };
    let marker = root.join("ran");
    let request = ExecRequest::new("touch", vec![marker.to_string_lossy().into()], &root);
    let caps = common::caps();
    // Prepared for `network: full` (no network namespace), given the plan of `network: off`.
    let mut full = SandboxPolicy::new(&root);
    full.network = NetworkPolicy::Full;
    let (full_plan, _) = Plan::build(&full, caps, &request, std::iter::empty()).unwrap();
    let (off_plan, _) = Plan::build(
        &SandboxPolicy::new(&root),
        caps,
        &request,
        std::iter::empty(),
    )
    .unwrap();
    let ahead = Ahead::of(&full_plan).expect("a preparation");
    assert!(!ahead.admits(&off_plan));

    let (helper, ours) = started_spare(&ahead, b"!");
    let (code, report) = hand(helper, ours, &off_plan);
    assert_eq!(code, 125, "{report}");
    assert!(
        report.contains(r#""kind":"plan""#) && report.contains("prepared for other namespaces"),
        "{report}"
    );
    assert!(!marker.exists(), "the command ran");
}

/// A helper started by hand, and what to wait for: the helper, or (a spare with a pid
/// namespace) its PID 1, this process' child since the spare forked it with `CLONE_PARENT`.
enum Started {
    Helper(std::process::Child),
    Pid1(i32),
}

/// A spare helper started by hand: `go` is its go message (`!`, or `#`, a length and a Landlock
/// plan); returns it (its PID 1 once forked: the spare has exited then) and the launcher's end
/// once it said it is ready.
fn started_spare(ahead: &Ahead, go: &[u8]) -> (Started, UnixStream) {
    let (mut ours, theirs) = UnixStream::pair().unwrap();
    let mut helper = std::process::Command::new(common::helper_path())
        .arg("spare")
        .arg(serde_json::to_string(ahead).unwrap())
        .stdin(std::os::fd::OwnedFd::from(theirs))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    ours.write_all(go).unwrap();
    let mut ready = [0u8; 1];
    ours.read_exact(&mut ready).unwrap();
    let started = if &ready == b"1" {
        let mut pid = [0u8; 4];
        ours.read_exact(&mut pid).unwrap();
        // The spare exits once PID 1 is ours.
        assert!(helper.wait().unwrap().success());
        ours.read_exact(&mut ready).unwrap();
        Started::Pid1(i32::from_le_bytes(pid))
    } else {
        Started::Helper(helper)
    };
    assert_eq!(&ready, b"+", "the helper prepared");
    (started, ours)
}

/// `#`, the length and `plan`'s Landlock rules: the go of a spare that builds its ruleset ahead.
fn go_with_rules(plan: &Plan) -> Vec<u8> {
    let rules = serde_json::to_vec(plan.landlock.as_ref().expect("Landlock rules")).unwrap();
    let mut go = vec![b'#'];
    go.extend_from_slice(&u32::try_from(rules.len()).unwrap().to_le_bytes());
    go.extend_from_slice(&rules);
    go
}

/// `plan` as the launcher sends it to a spare given `go` (from [`go_with_rules`]): asking for
/// the ruleset built ahead, naming the rules by their digest, without them.
fn asking_for_the_ruleset(plan: &Plan, go: &[u8]) -> Plan {
    let mut plan = plan.clone();
    plan.landlock_ahead = true;
    plan.landlock_digest = Some(LandlockPlan::digest(&go[5..]));
    plan.landlock = None;
    plan
}

/// Sends `plan` to a started helper and waits for it: its exit code and its report.
fn hand(helper: Started, mut ours: UnixStream, plan: &Plan) -> (i32, String) {
    ours.write_all(&serde_json::to_vec(plan).unwrap()).unwrap();
    ours.shutdown(std::net::Shutdown::Write).unwrap();
    let code = match helper {
        Started::Helper(mut helper) => helper.wait().unwrap().code(),
        Started::Pid1(pid) => {
            let pid = rustix::process::Pid::from_raw(pid).unwrap();
            let waited = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
            waited.unwrap().and_then(|(_, status)| status.exit_status())
        }
    };
    let mut report = String::new();
    ours.read_to_string(&mut report).unwrap();
    (code.unwrap_or(-1), report)
}

#[tokio::test]
async fn a_spare_restricted_ahead_confines_the_plan_its_rules_were_for_and_serves_no_other() {
    let Some((_serial, _dir, root)) = begin(true).await else {
        return;
    };
    if !common::landlock() {
        return;
    }
    let elsewhere = tempfile::tempdir().unwrap();
    let outside = elsewhere.path().canonicalize().unwrap().join("escaped");
    let marker = root.join("ran");
    let script = format!("touch {}; touch {}", marker.display(), outside.display());
    let request = ExecRequest::new("sh", vec!["-c".into(), script], &root);
    let caps = common::caps();
    let (plan, _) = Plan::build(
        &SandboxPolicy::new(&root),
        caps,
        &request,
        std::iter::empty(),
    )
    .unwrap();
    let ahead = Ahead::of(&plan).expect("a preparation");

    // Restricted with the plan's own rules before the plan came: the command runs, confined by
    // them (it may write in its root, not beside it).
    let go = go_with_rules(&plan);
    let (helper, ours) = started_spare(&ahead, &go);
    // Confined before its plan (after READY, while the plan may be on its way): the filter
    // installed (mode 2), `no_new_privs` set.
    let Started::Pid1(pid1) = &helper else {
        panic!("a pid namespace")
    };
    let confined = ["NoNewPrivs:\t1", "Seccomp:\t2"].map(String::from).to_vec();
    let until = Instant::now() + Duration::from_secs(5);
    while confined_status(*pid1) != confined && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(confined_status(*pid1), confined);
    let (code, report) = hand(helper, ours, &asking_for_the_ruleset(&plan, &go));
    assert_eq!(code, 1, "the second touch is denied: {report}");
    assert!(report.is_empty(), "{report}");
    assert!(marker.exists(), "the command did not run");
    assert!(
        !outside.exists(),
        "the ruleset enforced ahead did not confine the command"
    );
    std::fs::remove_file(&marker).unwrap();

    // Built from other rules (the other directory writable too), and the plan names its own:
    // refused, nothing run.
    let mut wider = SandboxPolicy::new(&root);
    wider
        .extra_writable
        .push(elsewhere.path().canonicalize().unwrap());
    let (other, _) = Plan::build(&wider, caps, &request, std::iter::empty()).unwrap();
    assert_eq!(
        Ahead::of(&other).as_ref(),
        Some(&ahead),
        "the same namespaces"
    );
    let (helper, ours) = started_spare(&ahead, &go_with_rules(&other));
    let (code, report) = hand(helper, ours, &asking_for_the_ruleset(&plan, &go));
    assert_eq!(code, 125, "{report}");
    let other_rules = "restricted ahead with other Landlock rules than the plan's";
    assert!(
        report.contains(r#""kind":"plan""#) && report.contains(other_rules),
        "{report}"
    );
    assert!(!marker.exists() && !outside.exists(), "the command ran");

    // A plan that asks for the ruleset built ahead but names no rules: refused, nothing run.
    let (helper, ours) = started_spare(&ahead, &go);
    let mut unnamed = asking_for_the_ruleset(&plan, &go);
    unnamed.landlock_digest = None;
    let (code, report) = hand(helper, ours, &unnamed);
    assert_eq!(code, 125, "{report}");
    assert!(report.contains(other_rules), "{report}");
    assert!(!marker.exists() && !outside.exists(), "the command ran");

    // Restricted with other rules, and the plan brings its own: refused too (the spare cannot
    // be restricted with the plan's rules alone any more), nothing run.
    let (helper, ours) = started_spare(&ahead, &go_with_rules(&other));
    let (code, report) = hand(helper, ours, &plan);
    assert_eq!(code, 125, "{report}");
    assert!(report.contains(other_rules), "{report}");
    assert!(!marker.exists() && !outside.exists(), "the command ran");
}

/// The `Seccomp:` and `NoNewPrivs:` lines of `/proc/<pid>/status`.
fn confined_status(pid: i32) -> Vec<String> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("Seccomp:") || l.starts_with("NoNewPrivs:"))
        .map(String::from)
        .collect()
}

#[tokio::test]
async fn a_plan_that_asks_for_a_ruleset_no_one_built_is_refused() {
    let Some((_serial, _dir, root)) = begin(true).await else {
        return;
    };
    let marker = root.join("ran");
    let request = ExecRequest::new("touch", vec![marker.to_string_lossy().into()], &root);
    let (mut plan, _) = Plan::build(
        &SandboxPolicy::new(&root),
        common::caps(),
        &request,
        std::iter::empty(),
    )
    .unwrap();
    plan.landlock_ahead = true;
    let ahead = Ahead::of(&plan).expect("a preparation");
    // A spare given no rules with its go.
    let (helper, ours) = started_spare(&ahead, b"!");
    let (code, report) = hand(helper, ours, &plan);
    assert_eq!(code, 125, "{report}");
    assert!(report.contains("built none"), "{report}");
    // A fresh helper builds nothing ahead.
    let (ours, theirs) = UnixStream::pair().unwrap();
    let helper = std::process::Command::new(common::helper_path())
        .arg("run")
        .stdin(std::os::fd::OwnedFd::from(theirs))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (code, report) = hand(Started::Helper(helper), ours, &plan);
    assert_eq!(code, 125, "{report}");
    assert!(report.contains("built none"), "{report}");
    assert!(!marker.exists(), "the command ran");
}

#[tokio::test]
async fn spares_are_forked_by_one_resident_helper_as_children_of_the_launcher() {
    let Some((_serial, _dir, root)) = begin(true).await else {
        return;
    };
    let launcher = launcher(&root);
    let mut seen = BTreeSet::new();
    let mut resident = None;
    for i in 0..4 {
        let text = i.to_string();
        let out = launcher.run(&echo(&root, &text)).await.unwrap();
        assert_eq!(out.stdout, format!("{text}\n"));
        let spare = wait_for_prepared_spare().expect("a prepared spare");
        // The launcher's child (`helpers` lists only this process' children), in a session of
        // its own, and never one seen before.
        assert!(seen.insert(spare), "spare {spare} served twice");
        let found = residents();
        assert_eq!(found.len(), 1, "one resident helper: {found:?}");
        assert_ne!(found[0], spare);
        assert_eq!(
            *resident.get_or_insert(found[0]),
            found[0],
            "the same resident"
        );
    }
}

#[tokio::test]
async fn a_dead_resident_helper_is_replaced_and_launches_go_on() {
    let Some((_serial, _dir, root)) = begin(true).await else {
        return;
    };
    let launcher = launcher(&root);
    launcher.run(&echo(&root, "one")).await.unwrap();
    wait_for_prepared_spare().expect("a prepared spare");
    let found = residents();
    assert_eq!(found.len(), 1, "{found:?}");
    let dead = found[0];
    kill(dead);
    wait_exited(&[dead]);
    // The spare it forked before is the launcher's own and serves; the next one cannot be
    // forked by the dead resident, so it is spawned; the one after that is forked by a new one.
    for text in ["two", "three", "four"] {
        let out = launcher.run(&echo(&root, text)).await.unwrap();
        assert_eq!(
            (out.exit_code, out.stdout.as_str()),
            (0, format!("{text}\n").as_str())
        );
        wait_for_prepared_spare().expect("a prepared spare");
    }
    let found = residents();
    assert_eq!(found.len(), 1, "a new resident: {found:?}");
    assert_ne!(found[0], dead);
    assert!(!alive(dead), "the dead resident was reaped");
}

#[tokio::test]
async fn a_prepared_spares_pid_1_reports_exits_signals_and_timeouts_exactly() {
    let Some((_serial, _dir, root)) = begin(true).await else {
        return;
    };
    let mut policy = SandboxPolicy::new(&root);
    policy.limits.timeout = Duration::from_secs(1);
    let launcher = Launcher::new(common::helper(), policy);
    let run = |args: &[&str]| {
        let args = args.iter().map(|a| a.to_string()).collect();
        let request = ExecRequest::new("sh", args, &root);
        let launcher = &launcher;
        async move {
            // Each launch is served by a ready spare: its PID 1, the launcher's own child,
            // whose status the launch reports (no middle process relays it).
            assert!(launcher.warm_up());
            assert!(wait_for_prepared_spare().is_some());
            launcher.run(&request).await.unwrap()
        }
    };
    let out = run(&["-c", "echo out; echo err >&2; exit 3"]).await;
    assert_eq!(
        (out.exit_code, out.stdout.as_str(), out.stderr.as_str()),
        (3, "out\n", "err\n")
    );
    if common::python() {
        // A real fault (a self-sent signal is ignored by PID 1 of a pid namespace).
        let fault = format!("{} -c 'import ctypes; ctypes.string_at(0)'", common::PYTHON);
        let out = run(&["-c", &format!("exec {fault}")]).await;
        assert_eq!(
            (out.exit_code, out.signal.as_deref()),
            (1, Some("SIGSEGV")),
            "{out:?}"
        );
    }
    // The timeout kills the whole tree, a `setsid` escapee (a session of its own, inside the
    // pid namespace) included.
    let out = run(&["-c", "setsid sleep 331.7 & sleep 300"]).await;
    assert!(out.timed_out, "{out:?}");
    assert_eq!(out.signal.as_deref(), Some("SIGKILL"), "{out:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(common::survivors("331.7"), 0, "a setsid escapee survived");
}
