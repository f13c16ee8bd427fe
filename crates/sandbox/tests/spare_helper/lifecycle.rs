//! A spare's life: it serves the next launch from a session of its own, is replaced when it (or
//! its PID 1) died, dies with its launcher, and is forked by the launcher's resident helper (into
//! its namespaces, PID 1 from the start); its PID 1 reports the command's exit, signal or timeout
//! exactly.

use super::*;

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
    wait_gone(&[spare]);
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
    let spares: Vec<u32> = spares.into_iter().collect();
    wait_gone(&spares);
    // Gone from /proc: killed and reaped (a zombie would still be listed).
    assert!(!spares.iter().any(|p| alive(*p)), "{:?}", helpers());
    assert!(
        children_named("toolsmith-resid").is_empty(),
        "the resident helper is gone"
    );
    wait_exited(&pid1s);
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
        // Forked into its namespaces: PID 1 of its own, in a network namespace owned by the
        // resident's user namespace.
        let status = std::fs::read_to_string(format!("/proc/{spare}/status")).unwrap();
        let nspid = status.lines().find(|l| l.starts_with("NSpid:")).unwrap();
        assert_eq!(nspid.split_whitespace().last(), Some("1"), "{nspid}");
        let net = std::fs::File::open(format!("/proc/{spare}/ns/net")).unwrap();
        assert_eq!(
            namespace_link(&net, NS_GET_USERNS),
            link(&format!("/proc/{}/ns/user", found[0])),
            "the resident's user namespace owns the spare's network"
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
