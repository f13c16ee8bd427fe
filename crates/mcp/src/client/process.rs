//! Starting a stdio server: as a plain child process, or inside toolsmith's sandbox.
//!
//! **Plain.** The program runs with a minimal environment — what the official SDKs pass
//! (`HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM`, `USER`) and the locale, plus the entry's `env` —
//! never the whole of toolsmith's (API keys live there). Its stderr is kept (the last 8 KiB)
//! to say why it died; it is killed when the client is dropped.
//!
//! **Sandboxed** (`"sandbox": {"root", "network"}`): through the sandbox launcher, as `bash`
//! runs: namespaces, Landlock (write only beneath `root`), seccomp, rlimits and a control group
//! for the whole tree (2 GiB, 1 024 tasks), reads limited to the system's paths, the root and
//! the entry's `read` list, network off unless the entry turns it on, the
//! sandbox's environment policy plus the entry's `env`. The launcher's socket to the program is
//! both its stdin and its stdout. `RLIMIT_DATA` is lifted (a JavaScript engine reserves more
//! address space than it uses); the control group bounds memory instead.

use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use toolsmith_config::{McpSandbox, McpServerEntry};
use toolsmith_sandbox::exec::{ExecRequest, HelperCommand, Launcher, SandboxedChild, SpawnRequest};
use toolsmith_sandbox::{NetworkPolicy, ReadPolicy, SandboxPolicy};

use super::McpError;

/// The variables a plain stdio server inherits (the official SDKs' list, and the locale).
const INHERITED: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TZ",
    "TMPDIR",
];

/// How much of a plain server's stderr is kept.
const STDERR_KEPT: usize = 8 * 1024;

/// A started server's two ends.
pub(crate) struct Started {
    pub(crate) read: Box<dyn AsyncRead + Send + Unpin>,
    pub(crate) write: Box<dyn AsyncWrite + Send + Unpin>,
    pub(crate) process: ServerProcess,
}

/// The server's process, kept alive as long as the client (dropping it kills the server).
pub(crate) enum ServerProcess {
    Plain {
        child: Mutex<tokio::process::Child>,
        stderr: Arc<Mutex<VecDeque<u8>>>,
        /// The task reading stderr, done at its end.
        reader: Mutex<Option<tokio::task::JoinHandle<()>>>,
    },
    Sandboxed(Mutex<Option<SandboxedChild>>),
}

impl std::fmt::Debug for ServerProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerProcess::Plain { .. } => f.write_str("ServerProcess::Plain"),
            ServerProcess::Sandboxed(_) => f.write_str("ServerProcess::Sandboxed"),
        }
    }
}

impl ServerProcess {
    /// Why the server is gone, after its connection failed — `ended with exit status: 3; its
    /// stderr ends: …` —; `None` when it still runs (the failure was the connection's own).
    pub(crate) async fn ended(&self) -> Option<String> {
        match self {
            ServerProcess::Plain {
                child,
                stderr,
                reader,
            } => {
                // It may be a moment behind its closed stdout.
                let mut status = None;
                for _ in 0..10 {
                    status = child
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .try_wait()
                        .ok()
                        .flatten();
                    if status.is_some() {
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                let status = status?;
                // Its last words: the reader ends at the pipe's end.
                let reading = reader.lock().unwrap_or_else(PoisonError::into_inner).take();
                if let Some(reading) = reading {
                    let _ =
                        tokio::time::timeout(std::time::Duration::from_millis(200), reading).await;
                }
                let tail: Vec<u8> = stderr
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .iter()
                    .copied()
                    .collect();
                Some(describe(
                    &status.to_string(),
                    &String::from_utf8_lossy(&tail),
                ))
            }
            ServerProcess::Sandboxed(slot) => {
                // `finish` gives a program that is ending a moment to exit, then kills its tree.
                let child = slot.lock().unwrap_or_else(PoisonError::into_inner).take()?;
                let ended = tokio::task::spawn_blocking(move || child.finish())
                    .await
                    .ok()?;
                let mut text = describe(&ended.describe(), &ended.stderr);
                if let Some(error) = ended.error {
                    text = format!("the sandbox could not start it: {error}; {text}");
                }
                Some(text)
            }
        }
    }
}

fn describe(status: &str, stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        format!("ended with {status}")
    } else {
        format!("ended with {status}; its stderr ends: {stderr}")
    }
}

/// Starts a stdio server (see the [module docs](self)).
pub(crate) fn start(entry: &McpServerEntry) -> Result<Started, McpError> {
    let toolsmith_config::McpTransport::Stdio {
        command,
        args,
        env,
        cwd,
        sandbox,
    } = &entry.transport
    else {
        unreachable!("start is called for stdio servers");
    };
    match sandbox {
        Some(sandbox) => start_sandboxed(entry, command, args, env, cwd.as_deref(), sandbox),
        None => start_plain(entry, command, args, env, cwd.as_deref()),
    }
}

fn start_plain(
    entry: &McpServerEntry,
    command: &str,
    args: &[String],
    env: &[(String, String)],
    cwd: Option<&Path>,
) -> Result<Started, McpError> {
    let mut process = tokio::process::Command::new(command);
    process
        .args(args)
        .env_clear()
        .envs(
            INHERITED
                .iter()
                .filter_map(|k| std::env::var(k).ok().map(|v| (*k, v))),
        )
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(cwd) = cwd {
        process.current_dir(cwd);
    }
    let mut child = process
        .spawn()
        .map_err(|e| McpError::start(&entry.name, format!("cannot start {command}: {e}")))?;
    let stdin = child.stdin.take().expect("piped");
    let stdout = child.stdout.take().expect("piped");
    let tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_KEPT)));
    let reader = child.stderr.take().map(|mut stderr| {
        let tail = Arc::clone(&tail);
        let server = entry.name.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                tracing::debug!(server = %server, stderr = %String::from_utf8_lossy(&buf[..n]).trim_end(), "MCP server");
                let mut kept = tail.lock().unwrap_or_else(PoisonError::into_inner);
                kept.extend(&buf[..n]);
                let excess = kept.len().saturating_sub(STDERR_KEPT);
                kept.drain(..excess);
            }
        })
    });
    Ok(Started {
        read: Box::new(stdout),
        write: Box::new(stdin),
        process: ServerProcess::Plain {
            child: Mutex::new(child),
            stderr: tail,
            reader: Mutex::new(reader),
        },
    })
}

fn start_sandboxed(
    entry: &McpServerEntry,
    command: &str,
    args: &[String],
    env: &[(String, String)],
    cwd: Option<&Path>,
    sandbox: &McpSandbox,
) -> Result<Started, McpError> {
    let fail = |message: String| McpError::start(&entry.name, message);
    let root = sandbox
        .root
        .canonicalize()
        .map_err(|e| fail(format!("the sandbox root {}: {e}", sandbox.root.display())))?;
    let mut policy = SandboxPolicy::new(&root);
    policy.network = if sandbox.network {
        NetworkPolicy::Full
    } else {
        NetworkPolicy::Off
    };
    policy.limits.data_bytes = None;
    if let ReadPolicy::Allowlist(paths) = &mut policy.read {
        paths.extend(sandbox.read.iter().cloned());
    }
    policy.env.allow.push("HOME".into());
    policy.env.set.extend(env.iter().cloned());
    policy
        .validate()
        .map_err(|e| fail(format!("the sandbox policy: {e}")))?;
    let helper = HelperCommand::locate().map_err(|e| fail(e.to_string()))?;
    let launcher = Launcher::new(helper, policy);
    let cwd = cwd.map_or_else(|| root.clone(), Path::to_path_buf);
    let request = SpawnRequest::new(ExecRequest::new(command, args.to_vec(), cwd)).with_stdin();
    let child = launcher
        .spawn(&request)
        .map_err(|e| fail(format!("the sandbox: {e}")))?;
    for warning in child.warnings() {
        tracing::warn!(server = %entry.name, "{warning}");
    }
    let channel = child
        .channel()
        .try_clone()
        .and_then(|c| {
            c.set_nonblocking(true)?;
            tokio::net::UnixStream::from_std(c)
        })
        .map_err(|e| fail(format!("the server's channel: {e}")))?;
    let (read, write) = channel.into_split();
    Ok(Started {
        read: Box::new(read),
        write: Box::new(write),
        process: ServerProcess::Sandboxed(Mutex::new(Some(child))),
    })
}
