//! Namespaces: every command gets fresh ones, entered by its spare before its plan, but for its
//! network namespace, which its launcher lends one command at a time and none of them owns; a
//! launch lets them go (or its network namespace back), and takes its control group back, once
//! it is over.

use super::*;
use toolsmith_sandbox::NetworkPolicy;

#[tokio::test]
async fn a_spare_enters_its_namespaces_before_its_plan_fresh_but_for_a_network_none_of_them_owns() {
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
    let ours: Vec<String> = links.iter().map(|l| link(l)).collect();
    // The namespaces' files stay open, so no namespace number is reused (the kernel recycles
    // them once a namespace is gone).
    let mut held = Vec::new();
    let mut seen: Vec<Vec<String>> = Vec::new();
    for round in 0..4 {
        let pid1 = wait_for_prepared_spare().expect("a prepared spare");
        let prepared: Vec<String> = kinds
            .iter()
            .map(|k| {
                let path = format!("/proc/{pid1}/ns/{k}");
                held.push(std::fs::File::open(&path).unwrap());
                link(&path)
            })
            .collect();
        // The network namespace is owned by the user namespace its command's is a child of:
        // the command holds no capability over it.
        let net = std::fs::File::open(format!("/proc/{pid1}/ns/net")).unwrap();
        let user = std::fs::File::open(format!("/proc/{pid1}/ns/user")).unwrap();
        let owner = namespace_link(&net, NS_GET_USERNS);
        assert_ne!(
            owner, prepared[3],
            "round {round}: the command owns its network"
        );
        assert_eq!(namespace_link(&user, NS_GET_PARENT), owner, "round {round}");
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
        let all: BTreeSet<&str> = seen.iter().map(|s| s[i].as_str()).collect();
        assert!(
            !all.contains(ours[i].as_str()),
            "{kind}: toolsmith's own: {seen:?}"
        );
        if *kind == "net" {
            // Launches one after the other take turns with two: the one a command runs in, and
            // the one lent to the spare prepared meanwhile.
            assert_eq!(all.len(), 2, "network namespaces are not reused: {seen:?}");
        } else {
            assert_eq!(all.len(), seen.len(), "{kind} namespaces shared: {seen:?}");
        }
    }
}

#[tokio::test]
async fn a_network_namespace_is_never_lent_while_its_command_runs() {
    let Some((_serial, _dir, root)) = begin(true).await else {
        return;
    };
    let launcher = launcher(&root);
    let net = |wait: &str| {
        let script = format!("readlink /proc/self/ns/net; sleep {wait}");
        ExecRequest::new("sh", vec!["-c".into(), script], &root)
    };
    // Three launches to fill the pool, then one that runs while others come and go.
    for _ in 0..3 {
        launcher.run(&net("0")).await.unwrap();
    }
    wait_for_prepared_spare().expect("a prepared spare");
    let long_request = net("1.5");
    let long = launcher.run(&long_request);
    let others = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut seen = Vec::new();
        for _ in 0..6 {
            let out = launcher.run(&net("0")).await.unwrap();
            seen.push(out.stdout.trim().to_string());
        }
        seen
    };
    let (long, others) = tokio::join!(long, others);
    let long = long.unwrap();
    assert_eq!(long.exit_code, 0, "{long:?}");
    let long = long.stdout.trim();
    assert!(long.starts_with("net:["), "{long}");
    assert!(
        !others.iter().any(|o| o == long),
        "{long} served another command while its own ran: {others:?}"
    );
}

#[tokio::test]
async fn the_network_namespace_of_a_cancelled_launch_is_never_lent_again() {
    let Some((_serial, _dir, root)) = begin(true).await else {
        return;
    };
    let launcher = launcher(&root);
    let net = || ExecRequest::new("readlink", vec!["/proc/self/ns/net".into()], &root);
    for _ in 0..3 {
        launcher.run(&net()).await.unwrap();
    }
    // The namespace the next launch will run in, held open here so that its number cannot
    // name a later namespace once the kernel has torn it down.
    let pid1 = wait_for_prepared_spare().expect("a prepared spare");
    let path = format!("/proc/{pid1}/ns/net");
    let _held = std::fs::File::open(&path).unwrap();
    let cancelled = link(&path);
    let sleep = ExecRequest::new("sleep", vec!["30".into()], &root);
    // Its future dropped while the command runs: the namespace is let go, not given back, as
    // the launch's PID 1 was not reaped when the launch ended.
    let started = Instant::now();
    let run = tokio::time::timeout(Duration::from_millis(300), launcher.run(&sleep)).await;
    assert!(run.is_err(), "the launch was not cancelled: {run:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let mut later = Vec::new();
    for _ in 0..6 {
        let out = launcher.run(&net()).await.unwrap();
        later.push(out.stdout.trim().to_string());
    }
    assert!(
        !later.contains(&cancelled),
        "{cancelled} was lent again after its launch was cancelled: {later:?}"
    );
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
    // and network namespaces, sent with its readiness) and the network namespace of the last
    // launch, back in the pool for the spare after it; nothing else of the eight launches.
    // Compared by name, not counted: the last launch's mount namespace, not yet let go, and the
    // next spare's, not yet received, would count as the one expected.
    let pid1 = wait_for_prepared_spare().expect("the next spare");
    let [mnt, net] = ["mnt", "net"].map(|k| link(&format!("/proc/{pid1}/ns/{k}")));
    let held_set = || held_namespaces().into_iter().collect::<BTreeSet<_>>();
    let expected = |held: &BTreeSet<String>| {
        let mounts: Vec<_> = held.iter().filter(|l| l.starts_with("mnt:")).collect();
        let nets: Vec<_> = held.iter().filter(|l| l.starts_with("net:")).collect();
        mounts == [&mnt] && nets.len() == 2 && nets.contains(&&net)
    };
    settled(|| expected(&held_set())).await;
    assert!(
        expected(&held_set()),
        "namespaces still held: {:?}",
        held_set()
    );
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
