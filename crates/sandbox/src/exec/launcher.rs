//! [`Launcher`] and [`HelperCommand`]: give a helper the plan.
//!
//! [`Launcher::run`] is [`Launcher::prepare`] (plan, warnings, git snapshot), the hand-over (the
//! spare helper, or a fresh one, gets the plan: see [`warm`](super::warm)), the supervisor, then
//! the channel's report and the git undo. [`Launcher::spawn`] reuses `prepare` and `channel`.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use super::capture::{self, Captured};
use super::cgroup::{Cgroup, CgroupSupport};
use super::loopback;
use super::plan::LOOPBACK_DEGRADED;
use super::rules::{AheadRules, Opened, RuleFds};
use super::tree::TreeLimits;
use super::warm::{Waiting, Warm};
use super::{Ahead, ExecError, ExecOutput, ExecRequest, GitProtection, HELPER_ARG, Plan, channel};
use crate::probe::NamespaceProbe;
use crate::{Capabilities, SandboxPolicy, git};

/// The environment variable naming the helper program explicitly.
pub const HELPER_ENV: &str = "TOOLSMITH_SANDBOX_HELPER";

/// How to start the helper: a program and the arguments before the mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperCommand {
    program: PathBuf,
    prefix: Vec<String>,
}

impl HelperCommand {
    /// The dedicated helper binary at `program` (`toolsmith-sandbox-exec`).
    pub fn new(program: impl Into<PathBuf>) -> Self {
        HelperCommand {
            program: program.into(),
            prefix: Vec::new(),
        }
    }

    /// The `toolsmith` CLI at `program`, invoked as `toolsmith __sandbox-exec …`.
    pub fn cli(program: impl Into<PathBuf>) -> Self {
        HelperCommand {
            program: program.into(),
            prefix: vec![HELPER_ARG.into()],
        }
    }

    /// The helper program.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Finds the helper: `$TOOLSMITH_SANDBOX_HELPER`; else `toolsmith-sandbox-exec` next to the
    /// current executable (or one directory up when that is cargo's `deps/`); else the current
    /// executable itself when it is named `toolsmith`.
    ///
    /// # Errors
    ///
    /// [`ExecError::Helper`] saying where it looked.
    pub fn locate() -> Result<HelperCommand, ExecError> {
        let path =
            locate_program(HELPER_ENV, "toolsmith-sandbox-exec").map_err(ExecError::Helper)?;
        Ok(if path.file_name().is_some_and(|n| n == "toolsmith") {
            HelperCommand::cli(path)
        } else {
            HelperCommand::new(path)
        })
    }

    pub(super) fn command(&self, mode: &str) -> std::process::Command {
        let mut command = std::process::Command::new(&self.program);
        command.args(&self.prefix).arg(mode).env_clear();
        command
    }

    /// Starts the helper in `run` mode (in `spare` mode with `ahead`: it prepares that much
    /// before its plan, see [`Ahead`]), its stdin the helper's end of a new channel; returns the
    /// process and the launcher's end, on which the plan is sent. The helper's end is closed here
    /// once the helper holds it, so EOF comes when the helper is gone.
    ///
    /// # Errors
    ///
    /// [`ExecError::Helper`] when the channel cannot be made or the helper cannot be started.
    pub(crate) fn start_run(
        &self,
        ahead: Option<&Ahead>,
        stdout: Stdio,
        stderr: Stdio,
    ) -> Result<(std::process::Child, UnixStream), ExecError> {
        let (ours, theirs) = channel::pair()
            .map_err(|e| ExecError::Helper(format!("cannot create the helper's channel: {e}")))?;
        let mut command = match ahead {
            Some(ahead) => {
                let mut command = self.command("spare");
                command.arg(ahead.to_arg());
                command
            }
            None => self.command("run"),
        };
        command
            .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
            .stdout(stdout)
            .stderr(stderr);
        let spawned = command.spawn();
        // The command holds the helper's end of the channel (and whatever `stdout` is): drop it.
        drop(command);
        let child = spawned.map_err(|e| {
            ExecError::Helper(format!("cannot start {}: {e}", self.program.display()))
        })?;
        Ok((child, ours))
    }

    /// Runs the helper's `probe` mode (namespaces), synchronously.
    pub(crate) fn probe(&self) -> std::io::Result<NamespaceProbe> {
        let output = self.command("probe").stdin(Stdio::null()).output()?;
        serde_json::from_slice(&output.stdout).map_err(std::io::Error::other)
    }
}

/// Finds one of toolsmith's own programs: `$<env>` when set (it must be a file); else `name`
/// next to the current executable (or one directory up when that is cargo's `deps/`, as for
/// tests); else the current executable itself when it is the `toolsmith` CLI, which serves
/// every such program through a hidden first argument.
///
/// ```
/// let err = toolsmith_sandbox::exec::locate_program("TOOLSMITH_NO_SUCH_VAR", "no-such-program")
///     .unwrap_err();
/// assert!(err.starts_with("no-such-program not found next to "), "{err}");
/// ```
///
/// # Errors
///
/// A message saying where it looked.
pub fn locate_program(env: &str, name: &str) -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os(env) {
        let path = PathBuf::from(path);
        if path.is_file() {
            return Ok(path);
        }
        return Err(format!("{env}={} is not a file", path.display()));
    }
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the current executable: {e}"))?;
    let mut dirs: Vec<&Path> = exe.parent().into_iter().collect();
    if let Some(dir) = dirs.first().copied()
        && dir.file_name().is_some_and(|n| n == "deps")
        && let Some(up) = dir.parent()
    {
        dirs.push(up);
    }
    for dir in &dirs {
        let candidate = dir.join(name);
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    if exe.file_name().is_some_and(|n| n == "toolsmith") {
        return Ok(exe);
    }
    Err(format!(
        "{name} not found next to {} (set {env})",
        exe.display()
    ))
}

/// Runs commands under a [`SandboxPolicy`] through the helper.
///
/// ```no_run
/// use toolsmith_sandbox::exec::{ExecRequest, HelperCommand, Launcher};
/// use toolsmith_sandbox::SandboxPolicy;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let launcher = Launcher::new(HelperCommand::locate()?, SandboxPolicy::new("/work/project"));
/// let out = launcher.run(&ExecRequest::new("ls", vec![], "/work/project")).await?;
/// println!("{} {}", out.exit_code, out.stdout);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Launcher {
    pub(super) helper: HelperCommand,
    policy: SandboxPolicy,
    caps: Capabilities,
    /// The root and writable paths, resolved once for git protection's inspections.
    git_paths: (PathBuf, Vec<PathBuf>),
    /// The control group of each command's whole tree.
    pub(super) tree: TreeLimits,
    /// The helper started ahead for the next launch (shared by clones).
    warm: Arc<Warm>,
    /// The Landlock rules' paths, opened once and sent with each plan.
    rules: RuleFds,
}

impl Launcher {
    /// A launcher for `policy`, probing the machine through `helper` (one short spawn).
    pub fn new(helper: HelperCommand, policy: SandboxPolicy) -> Self {
        let caps = Capabilities::detect_with(Some(&helper));
        Launcher::with_capabilities(helper, policy, caps)
    }

    /// A launcher with capabilities already detected.
    pub fn with_capabilities(
        helper: HelperCommand,
        policy: SandboxPolicy,
        caps: Capabilities,
    ) -> Self {
        let git_paths = git::resolve(&policy.root, &policy.writable_paths());
        let tree = TreeLimits::new(CgroupSupport::detect(), &policy.limits);
        Launcher {
            helper,
            policy,
            caps,
            git_paths,
            tree,
            rules: RuleFds::default(),
            warm: Arc::default(),
        }
    }

    /// The capabilities the plans are made for.
    pub fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    /// The policy.
    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    /// Runs `request` confined, with the policy's timeout and output caps.
    ///
    /// # Errors
    ///
    /// [`ExecError::Unavailable`] (fail-closed and a layer missing), [`ExecError::Helper`],
    /// [`ExecError::Setup`], [`ExecError::Spawn`]. A timeout is not an error: see
    /// [`ExecOutput::timed_out`].
    pub async fn run(&self, request: &ExecRequest) -> Result<ExecOutput, ExecError> {
        let mut prepared = self.prepare(request)?;
        let opened = self.attach_rules(&mut prepared.plan);
        let Waiting {
            mut process,
            mut channel,
            group,
            warning,
            held,
            net,
            ..
        } = self.hand_over(
            &mut prepared.plan,
            opened.as_ref(),
            prepared.loopback.as_ref().map(AsFd::as_fd),
        )?;
        // Let go once the launch is over, however it ends.
        let mut after = super::warm::LetGo::new(held, net, &self.warm.nets);
        // The helper holds its end now: EOF on the supervisor's side means it exec'd or died.
        drop(opened);
        drop(prepared.loopback.take());
        prepared.warnings.extend(warning);
        // If this future is dropped (the call was cancelled), the command still may not leave a
        // change to git behind.
        let mut cleanup = Cleanup {
            group: Some(process.id()),
            git: prepared.git,
        };
        let limits = &self.policy.limits;
        let captured = capture::supervise(&mut process, limits.timeout, limits.output_bytes).await;
        // With a pooled network namespace (a pid namespace's spare), `process` is PID 1: once
        // reaped, no process of the command is left in that namespace.
        after.reusable(&process);
        // The helper has exited (with a pid namespace, after every process of the command).
        let report = channel::collect(&mut channel);
        // Whatever is left of the tree (a `setsid` escapee without a pid namespace) dies with the
        // group, before git's state is checked. With a pid namespace nothing is left (PID 1's
        // exit took every process of it): the group is taken back once the launch is over.
        match group {
            Some(group) if prepared.plan.namespaces.pid => {
                after.group = Some((self.tree.clone(), group));
            }
            group => self.tree.recycle(group),
        }
        let undone = cleanup.git.take().map(|git| git.undo()).unwrap_or_default();
        if let Some(error) = channel::error_of(&report) {
            return Err(error);
        }
        Ok(into_output(captured?, prepared.warnings, undone))
    }

    /// Starts the spare helper now, prepared for this launcher's plans, unless one is ready or
    /// being started, and waits until it is ready (or could not be started). The first launch
    /// then finds a spare too, as every later one does when launches are not back to back;
    /// `benches/spawn.rs` measures such a launch. Returns whether a spare is ready.
    pub fn warm_up(&self) -> bool {
        let probe = ExecRequest::new("true", Vec::new(), self.policy.root.clone());
        let Ok((mut plan, _)) = Plan::build(&self.policy, &self.caps, &probe, std::iter::empty())
        else {
            // The policy fails closed here: every launch is refused, no spare is needed.
            return false;
        };
        // Bound as a launch would be: the spare's binds are made ahead.
        self.protect_git(&mut plan);
        let opened = self.attach_rules(&mut plan);
        let rules = AheadRules::of(&plan, opened.as_ref());
        self.warm
            .refill(&self.helper, &self.tree, ahead_of(&plan), rules);
        self.warm.settle()
    }

    /// Gives `plan` (with the rules' descriptors `opened` and the loopback supervisor's channel
    /// `loopback`) to a helper: the spare when there is one, it is alive and it was prepared
    /// for this plan ([`Ahead`]), else a helper started for this launch that applies the whole
    /// plan; then starts the next spare ([`warm`](super::warm)), prepared for this plan's
    /// namespaces, mounts, filter and Landlock rules.
    ///
    /// A spare restricted ahead with exactly this plan's rules, on the same inodes
    /// ([`AheadRules::same`]), is told so ([`Plan::landlock_ahead`]) and gets no rule
    /// descriptors; a spare restricted with other rules is not used; a fresh helper gets them
    /// and builds the ruleset from the plan.
    ///
    /// # Errors
    ///
    /// [`ExecError::Helper`] when no helper can be started; [`ExecError::Setup`] when it cannot
    /// be moved into its control group or given its plan.
    fn hand_over(
        &self,
        plan: &mut Plan,
        opened: Option<&Arc<Opened>>,
        loopback: Option<BorrowedFd<'_>>,
    ) -> Result<Waiting, ExecError> {
        let ahead = ahead_of(plan);
        let rules = AheadRules::of(plan, opened);
        let spare = self
            .warm
            .take()
            .and_then(|spare| self.usable(spare, ahead.as_ref(), rules.as_ref()))
            .and_then(|(spare, digest)| self.send(spare, plan, opened, loopback, digest).ok());
        let helper = match spare {
            Some(spare) => spare,
            None => {
                let fresh = Waiting::start_on_launcher_thread(&self.helper, &self.tree)?;
                self.send(fresh, plan, opened, loopback, None)
                    .map_err(|e| ExecError::Setup(format!("sending the plan to the helper: {e}")))?
            }
        };
        self.warm.refill(&self.helper, &self.tree, ahead, rules);
        Ok(helper)
    }

    /// `spare`, when it may take a plan prepared as `ahead` with the Landlock rules `rules`, and
    /// the digest of the rules it restricted itself with, if any ([`Waiting::built`]): it applied
    /// nothing ahead, or what `ahead` says; it was given no rules, or exactly `rules`; it is
    /// alive (a spare killed while it waited, or whose PID 1 lost its parent before
    /// `PR_SET_PDEATHSIG`, is not); and its binds still hold ([`Ahead::binds_hold`]). Otherwise
    /// it is discarded: killed, its group taken back.
    fn usable(
        &self,
        spare: Waiting,
        ahead: Option<&Ahead>,
        rules: Option<&AheadRules>,
    ) -> Option<(Waiting, Option<u64>)> {
        let digest = spare.built(rules);
        if spare.serves(ahead)
            && (spare.rules.is_none() || digest.is_some())
            && !spare.process.exited()
            && (spare.ahead.as_ref()).is_none_or(|a| a.binds_hold(spare.process.id()))
        {
            return Some((spare, digest));
        }
        self.discard(spare);
        None
    }

    /// Kills `helper` and takes its group back.
    fn discard(&self, helper: Waiting) {
        let Waiting { process, group, .. } = helper;
        drop(process);
        self.tree.recycle(group);
    }

    /// Sends `plan` to `helper`, with the rules' descriptors and `loopback`; on failure (it
    /// died: `EPIPE`) kills it and takes its group back. With `ahead`, the digest of the rules
    /// `helper` restricted itself with ([`Waiting::built`]), the plan says so
    /// ([`Plan::landlock_ahead`]) and goes without its rules and their descriptors, naming them
    /// by their digest: ~5 of its ~5.7 KB not serialised here nor parsed by the helper.
    fn send(
        &self,
        helper: Waiting,
        plan: &mut Plan,
        opened: Option<&Arc<Opened>>,
        loopback: Option<BorrowedFd<'_>>,
        ahead: Option<u64>,
    ) -> std::io::Result<Waiting> {
        plan.landlock_ahead = ahead.is_some();
        plan.landlock_digest = ahead;
        let rules = ahead.and_then(|_| plan.landlock.take());
        let json = serde_json::to_vec(&*plan).map_err(std::io::Error::other);
        if rules.is_some() {
            plan.landlock = rules;
        }
        let json = json?;
        let mut fds = match opened {
            Some(opened) if !plan.landlock_ahead => opened.fds(),
            _ => Vec::new(),
        };
        fds.extend(loopback);
        match channel::send_plan(&helper.channel, &json, &fds) {
            Ok(()) => Ok(helper),
            Err(e) => {
                self.discard(helper);
                Err(e)
            }
        }
    }

    /// The plan for `request`, its warnings, and the git snapshot to undo changes against.
    ///
    /// # Errors
    ///
    /// [`ExecError::Unavailable`] (fail-closed and a layer missing).
    pub(crate) fn prepare(&self, request: &ExecRequest) -> Result<Prepared, ExecError> {
        let (mut plan, mut warnings) = Plan::build(&self.policy, &self.caps, request, utf8_vars())?;
        warnings.extend(self.tree.warning(self.caps.running_as_root));
        let git = self.protect_git(&mut plan);
        let loopback = match plan.seccomp.as_mut().filter(|s| s.mediate_loopback) {
            Some(seccomp) => loopback::supervise()
                .inspect_err(|e| {
                    seccomp.mediate_loopback = false;
                    warnings.push(format!(
                        "{LOOPBACK_DEGRADED}: the supervisor could not be started: {e}"
                    ));
                })
                .ok(),
            None => None,
        };
        Ok(Prepared {
            plan,
            warnings,
            git,
            loopback,
        })
    }

    /// Git protection's snapshot of the workspace now, when the policy protects git, with its
    /// binds added to `plan`.
    fn protect_git(&self, plan: &mut Plan) -> Option<GitProtection> {
        let git = self.policy.protect_git.then(|| {
            let (root, writable) = &self.git_paths;
            GitProtection::inspect_resolved(root.clone(), writable.clone())
        })?;
        plan.protect_git(&git);
        Some(git)
    }

    /// Sends the Landlock rules' paths as descriptors (see [`RuleFds`]): fills
    /// `plan.landlock.inherited` and returns the opening to send. Call it on the final plan.
    pub(crate) fn attach_rules(&self, plan: &mut Plan) -> Option<Arc<Opened>> {
        plan.landlock
            .as_mut()
            .map(|landlock| self.rules.attach(landlock))
    }
}

/// What a spare can apply ahead of `plan` on this machine ([`Ahead::of`]): nothing when the
/// plan has binds and the kernel cannot say whether a spare's binds still hold.
fn ahead_of(plan: &Plan) -> Option<Ahead> {
    Ahead::of(plan).filter(|ahead| ahead.mounts.binds.is_empty() || Ahead::can_check_binds())
}

/// Moves the helper (`pid`) into the tree's control group. Call it before the plan is written:
/// until then the helper only waits on its stdin, so nothing of the tree is outside.
///
/// # Errors
///
/// [`ExecError::Setup`] when the move fails (the caller kills the helper).
pub(crate) fn enter_group(group: Option<&Cgroup>, pid: Option<u32>) -> Result<(), ExecError> {
    if let (Some(group), Some(pid)) = (group, pid) {
        group.add(pid).map_err(|e| {
            ExecError::Setup(format!("moving the command into its control group: {e}"))
        })?;
    }
    Ok(())
}

/// A plan ready to run ([`Launcher::prepare`]).
#[derive(Debug)]
pub(crate) struct Prepared {
    /// What the helper applies.
    pub(crate) plan: Plan,
    /// Layers not enforced, for the result.
    pub(crate) warnings: Vec<String>,
    /// The git snapshot taken before the command (protection on), to
    /// [`undo`](GitProtection::undo) once every process of it is gone.
    pub(crate) git: Option<GitProtection>,
    /// The loopback supervisor's channel, sent last with the plan, when `connect` is mediated
    /// ([`loopback`](super::loopback)); close it once sent.
    pub(crate) loopback: Option<OwnedFd>,
}

/// What a cancelled run still does when its future is dropped: kill the command's process group
/// (the supervisor's own guard does too; this one must not depend on drop order), then undo
/// what the command changed in git's state.
struct Cleanup {
    group: Option<u32>,
    git: Option<GitProtection>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(git) = self.git.take() {
            capture::kill_group(self.group);
            git.undo();
        }
    }
}

/// The runtime's environment variables that are valid UTF-8 (`std::env::vars` would panic).
pub(super) fn utf8_vars() -> impl Iterator<Item = (String, String)> {
    std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
}

/// Turns the capture into the result.
fn into_output(captured: Captured, warnings: Vec<String>, undone: Vec<String>) -> ExecOutput {
    let (stdout, cut_out) = capture::utf8_prefix(&captured.stdout, captured.cap);
    let (stderr, cut_err) = capture::utf8_prefix(&captured.stderr, captured.cap);
    ExecOutput {
        exit_code: captured.code.unwrap_or(1),
        signal: captured.signal.map(capture::signal_name),
        stdout,
        stderr,
        truncated: cut_out || cut_err,
        total_bytes: captured.total_bytes,
        timed_out: captured.timed_out,
        warnings,
        undone,
    }
}
