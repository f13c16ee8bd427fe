//! Control groups bounding a whole process tree: the task cap stops the fork that would exceed
//! it, the memory cap OOM-kills a hog, dropping a group kills its processes and removes it, and
//! groups of creators that died are cleaned up. Skipped, with a printed line, where this process
//! cannot create groups with the controller a test needs (not root, nothing delegated).

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use toolsmith_sandbox::exec::{Cgroup, CgroupSupport, CgroupVersion};

/// The detected support, when it has `what`; prints the skip line otherwise.
fn support(test: &str, memory: bool, pids: bool) -> Option<CgroupSupport> {
    let support = CgroupSupport::detect();
    if (memory && !support.memory()) || (pids && !support.pids()) {
        eprintln!("SKIPPED {test}: cgroups: {}", support.describe());
        return None;
    }
    Some(support)
}

/// Starts `sh -c script`, which must begin with `read go;`, moves it into `group`, then lets it
/// go: nothing it forks can start outside the group.
fn spawn_in(group: &Cgroup, script: &str) -> Child {
    let mut child = Command::new("sh")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    group.add(child.id()).unwrap();
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    child
}

/// Waits for `child` at most `limit`.
fn wait(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "still running after {limit:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The start time of process `pid` (`/proc/<pid>/stat` field 22).
fn start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    rest.split_whitespace().nth(19).unwrap().parse().unwrap()
}

#[test]
fn the_description_matches_what_was_found() {
    let support = CgroupSupport::detect();
    let line = support.describe();
    eprintln!("cgroups: {line}");
    assert_eq!(line.starts_with("none: "), support.hierarchies().is_empty());
    if support.memory() {
        assert!(line.contains("memory"), "{line}");
    }
    if support.pids() {
        assert!(line.contains("pids"), "{line}");
    }
}

#[test]
fn a_tree_cannot_fork_beyond_its_task_cap() {
    let Some(support) = support("task cap", false, true) else {
        return;
    };
    let group = Cgroup::create(&support, None, Some(20)).unwrap();
    // The shell counts as one task: 19 sleeps fit, the 20th fork fails. (Without the cap the
    // loop stops at 40 and the shell exits 0.)
    let mut child = spawn_in(
        &group,
        "read go; n=0; while [ $n -lt 40 ]; do sleep 30 >/dev/null 2>&1 & n=$((n+1)); echo $n; done",
    );
    let status = wait(&mut child, Duration::from_secs(20));
    let mut stdout = String::new();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    let want: String = (1..=19).map(|n| format!("{n}\n")).collect();
    assert_eq!(stdout, want, "{stderr}");
    assert_ne!(status.code(), Some(0), "{stderr}");
    assert!(stderr.to_lowercase().contains("fork"), "{stderr}");
    assert_eq!(group.pids().unwrap().len(), 19);
    group.kill_all().unwrap();
    assert!(live(&group).is_empty());
}

#[test]
fn a_memory_hog_is_oom_killed_at_the_memory_cap() {
    let Some(support) = support("memory cap", true, false) else {
        return;
    };
    let group = Cgroup::create(&support, Some(64 << 20), None).unwrap();
    // dd fills a 256 MiB buffer: four times the cap.
    let mut child = spawn_in(
        &group,
        "read go; exec dd if=/dev/zero of=/dev/null bs=256M count=1",
    );
    let status = wait(&mut child, Duration::from_secs(20));
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    let h = support.hierarchies().iter().position(|h| h.memory).unwrap();
    let dir = &group.paths()[h];
    let events = match support.hierarchies()[h].version {
        CgroupVersion::V1 => dir.join("memory.oom_control"),
        CgroupVersion::V2 => dir.join("memory.events"),
    };
    let events = std::fs::read_to_string(events).unwrap();
    assert!(events.lines().any(|l| l == "oom_kill 1"), "{events}");
}

#[test]
fn dropping_the_group_kills_its_processes_and_removes_it() {
    let Some(support) = support("drop", false, false) else {
        return;
    };
    if support.hierarchies().is_empty() {
        eprintln!("SKIPPED drop: cgroups: {}", support.describe());
        return;
    }
    let group = Cgroup::create(&support, Some(256 << 20), Some(64)).unwrap();
    let dirs = group.paths().to_vec();
    assert!(dirs.iter().all(|d| d.is_dir()));
    let mut child = spawn_in(&group, "read go; sleep 30 & exec sleep 30");
    let started = Instant::now();
    while group.pids().unwrap().len() < 2 {
        assert!(started.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(group);
    assert_eq!(
        wait(&mut child, Duration::from_secs(5)).signal(),
        Some(libc::SIGKILL)
    );
    for dir in &dirs {
        assert!(!dir.exists(), "{} is left behind", dir.display());
    }
}

#[test]
fn kill_all_catches_processes_forked_while_it_kills() {
    let Some(support) = support("kill_all", false, true) else {
        return;
    };
    if !Path::new("/usr/bin/python3").exists() {
        eprintln!("SKIPPED kill_all: /usr/bin/python3 is not installed");
        return;
    }
    let group = Cgroup::create(&support, None, Some(64)).unwrap();
    // A forker that retries failed forks, so it keeps refilling the slots kill_all frees. Its
    // children live 1 s and it stops after 5000 forks or 5 s, so it stays bounded should the
    // cap not hold.
    let mut child = spawn_in(
        &group,
        "read go; exec /usr/bin/python3 -c '
import os, time
end, n = time.time() + 5, 0
while time.time() < end and n < 5000:
    try:
        if os.fork() == 0:
            time.sleep(1)
            os._exit(0)
        n += 1
    except OSError:
        time.sleep(0.001)
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass
'",
    );
    let started = Instant::now();
    while group.pids().unwrap().len() < 50 {
        assert!(started.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(5));
    }
    group.kill_all().unwrap();
    assert!(live(&group).is_empty());
    assert_eq!(
        wait(&mut child, Duration::from_secs(5)).signal(),
        Some(libc::SIGKILL)
    );
}

#[test]
fn groups_of_dead_creators_are_removed_at_create() {
    let Some(support) = support("stale groups", false, false) else {
        return;
    };
    if support.hierarchies().is_empty() {
        eprintln!("SKIPPED stale groups: cgroups: {}", support.describe());
        return;
    }
    // The group of a creator that dies once its group is set up: until then the group is not
    // stale, so that no other creator sweeps it away half-made (other tests of this process
    // create groups all the time).
    let mut creator = Command::new("sleep")
        .arg("30")
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let stale = format!("toolsmith-{}-{}-7", creator.id(), start_time(creator.id()));
    // Ours (alive), and a name that is not one of ours: both must stay.
    let ours = format!(
        "toolsmith-{}-{}-999999",
        std::process::id(),
        start_time(std::process::id())
    );
    let foreign = format!("toolsmith-foreign-{}", std::process::id());
    let foreign = foreign.as_str();
    let parents: Vec<&Path> = support
        .hierarchies()
        .iter()
        .map(|h| h.parent.as_path())
        .collect();
    for parent in &parents {
        for name in [stale.as_str(), ours.as_str(), foreign] {
            std::fs::create_dir(parent.join(name)).unwrap();
        }
    }
    // A process left in the stale group, as if its toolsmith was killed mid-run.
    let mut orphan = Command::new("sleep")
        .arg("30")
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    std::fs::write(
        parents[0].join(&stale).join("cgroup.procs"),
        orphan.id().to_string(),
    )
    .unwrap();
    creator.kill().unwrap();
    creator.wait().unwrap();

    let group = Cgroup::create(&support, None, None).unwrap();
    let orphan_status = wait(&mut orphan, Duration::from_secs(5));
    let mut left = Vec::new();
    for parent in &parents {
        left.push(parent.join(&stale).exists());
        for name in [ours.as_str(), foreign] {
            assert!(parent.join(name).is_dir(), "{name} was removed");
            std::fs::remove_dir(parent.join(name)).unwrap();
        }
    }
    drop(group);
    assert_eq!(orphan_status.signal(), Some(libc::SIGKILL));
    assert!(left.iter().all(|l| !l), "the stale group is left: {left:?}");
}

/// The group's processes that are still alive (not zombies waiting for their parent).
fn live(group: &Cgroup) -> Vec<u32> {
    group
        .pids()
        .unwrap()
        .into_iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| !s[s.rfind(')').unwrap() + 1..].trim_start().starts_with('Z'))
        })
        .collect()
}
