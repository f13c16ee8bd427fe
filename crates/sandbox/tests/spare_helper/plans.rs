//! Spares started by hand and given plans: a spare prepared for one policy, or restricted with
//! one set of Landlock rules, refuses the plan of another, and nothing runs.

use super::*;
use toolsmith_sandbox::NetworkPolicy;
use toolsmith_sandbox::exec::{Ahead, LandlockPlan, Plan};

/// The plan a launcher with `policy` would build for `request` on this machine.
fn plan(policy: &SandboxPolicy, request: &ExecRequest) -> Plan {
    Plan::build(policy, common::caps(), request, std::iter::empty())
        .unwrap()
        .0
}

#[tokio::test]
async fn a_helper_prepared_for_one_policy_refuses_the_plan_of_another() {
    let Some((_serial, _dir, root)) = begin(true).await else {
        return;
    };
    let marker = root.join("ran");
    let request = ExecRequest::new("touch", vec![marker.to_string_lossy().into()], &root);
    // Prepared for `network: full` (no network namespace), given the plan of `network: off`.
    let mut full = SandboxPolicy::new(&root);
    full.network = NetworkPolicy::Full;
    let full_plan = plan(&full, &request);
    let off_plan = plan(&SandboxPolicy::new(&root), &request);
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
    let plan = plan(&SandboxPolicy::new(&root), &request);
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
    wait_until(|| confined_status(*pid1) == confined);
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
    let other = self::plan(&wider, &request);
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
    let mut plan = plan(&SandboxPolicy::new(&root), &request);
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
