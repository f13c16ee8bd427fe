//! The `bash` tool's network guard (the latest version of Smithers' guard), checked before spawning
//! when the policy's network is off.
//!
//! It is a denylist and can be bypassed (`/usr/bin/env curl`, `python3 -c …`); the kernel
//! sandbox is what actually enforces "no network". The guard exists to give the model a clear,
//! early message for the obvious cases.
//!
//! Rules:
//! - Only **executables** are judged: the basename of `cmd`, and the basename of the first
//!   whitespace token of `cmd` (so `cmd = "curl https://x"` is caught).
//! - An argument whose whole value, or the value half of `--flag=URL`, starts with `http://` or
//!   `https://` must point at a loopback host (`localhost`, `*.localhost`, `127.x.x.x`, `::1`,
//!   `[::1]`, `0.0.0.0`). `localhost.evil.com` is remote.
//! - `curl` and `wget` run only when they have at least one URL argument and all are loopback.
//! - `npm`, `bun` and `pip` are always blocked.
//! - `git`: the subcommand (after the global flags `-C -c --exec-path --git-dir --namespace
//!   --work-tree` and their values, and any other option) must not be `push`, `pull`, `fetch`,
//!   `clone` or `remote` (`TOOL_GIT_REMOTE_DISABLED`).
//! - `sh bash zsh dash ash ksh` with `-c` (or a cluster such as `-lc`): the payload is split on
//!   newline, `;`, `&`, `|`, backtick, `(` and `)`; leading `VAR=x` assignments are stripped and
//!   each command position is checked by the same rules.

use serde_json::json;
use toolsmith_core::ToolError;

const ALWAYS_BLOCKED: [&str; 3] = ["npm", "bun", "pip"];
const DOWNLOADERS: [&str; 2] = ["curl", "wget"];
const SHELLS: [&str; 6] = ["sh", "bash", "zsh", "dash", "ash", "ksh"];
const GIT_VALUE_FLAGS: [&str; 6] = [
    "-C",
    "-c",
    "--exec-path",
    "--git-dir",
    "--namespace",
    "--work-tree",
];
const GIT_REMOTE: [&str; 5] = ["push", "pull", "fetch", "clone", "remote"];
const HINT: &str =
    "Network access is disabled for commands; the user can enable it with allowNetwork.";

/// Checks `cmd` with `args` (only call it when the network is off).
///
/// # Errors
///
/// `TOOL_NETWORK_DISABLED` or `TOOL_GIT_REMOTE_DISABLED`, with a hint mentioning `allowNetwork`.
pub fn check(cmd: &str, args: &[String]) -> Result<(), ToolError> {
    let mut words: Vec<String> = cmd.split_whitespace().map(String::from).collect();
    if words.is_empty() {
        return Ok(());
    }
    words.extend(args.iter().cloned());
    let whole = basename(cmd.trim());
    check_words(&words, Some(whole), 0)
}

/// Checks one command position: `words[0]` is the executable.
fn check_words(words: &[String], extra_name: Option<&str>, depth: usize) -> Result<(), ToolError> {
    let Some(first) = words.first() else {
        return Ok(());
    };
    let mut names = vec![basename(first)];
    if let Some(extra) = extra_name
        && extra != names[0]
    {
        names.push(extra);
    }
    let rest = &words[1..];
    for name in &names {
        if ALWAYS_BLOCKED.contains(name) {
            return Err(network_disabled(
                &format!("`{name}` needs the network"),
                words,
            ));
        }
    }
    let urls: Vec<&str> = rest.iter().filter_map(|a| url_value(a)).collect();
    if let Some(remote) = urls.iter().find(|u| !is_loopback_url(u)) {
        return Err(network_disabled(
            &format!("`{remote}` is not a loopback address"),
            words,
        ));
    }
    for name in &names {
        if DOWNLOADERS.contains(name) && urls.is_empty() {
            return Err(network_disabled(
                &format!("`{name}` may only fetch http(s) URLs on loopback"),
                words,
            ));
        }
    }
    if names.contains(&"git")
        && let Some(sub) = git_subcommand(rest)
        && GIT_REMOTE.contains(&sub)
    {
        return Err(ToolError::new(
            "TOOL_GIT_REMOTE_DISABLED",
            format!("Git remote operations are disabled: `git {sub}`. {HINT}"),
        )
        .with_details(json!({ "command": words, "subcommand": sub })));
    }
    if depth < 4
        && names.iter().any(|n| SHELLS.contains(n))
        && let Some(payload) = shell_payload(rest)
    {
        for segment in payload.split(['\n', ';', '&', '|', '`', '(', ')']) {
            let tokens: Vec<String> = segment
                .split_whitespace()
                .map(|t| t.trim_matches(['"', '\'']).to_string())
                .skip_while(|t| is_assignment(t))
                .collect();
            check_words(&tokens, None, depth + 1)?;
        }
    }
    Ok(())
}

fn network_disabled(reason: &str, words: &[String]) -> ToolError {
    ToolError::new(
        "TOOL_NETWORK_DISABLED",
        format!("Network access is disabled: {reason}. {HINT}"),
    )
    .with_details(json!({ "command": words }))
}

/// The last path component.
fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// `VAR=value` (a shell assignment prefix).
fn is_assignment(token: &str) -> bool {
    let Some((name, _)) = token.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The URL an argument carries: its whole value, or the value half of `--flag=URL`.
fn url_value(arg: &str) -> Option<&str> {
    let value = if arg.starts_with('-') {
        arg.split_once('=').map_or(arg, |(_, v)| v)
    } else {
        arg
    };
    let lower = value.get(..8).unwrap_or(value).to_ascii_lowercase();
    (lower.starts_with("http://") || lower.starts_with("https://")).then_some(value)
}

/// Whether an http(s) URL's host is loopback.
fn is_loopback_url(url: &str) -> bool {
    let after = url.split_once("://").map_or("", |(_, rest)| rest);
    let authority = after.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(bracketed) = host_port.strip_prefix('[') {
        bracketed.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    let host = host.to_ascii_lowercase();
    host == "localhost"
        || host.ends_with(".localhost")
        || host == "::1"
        || host == "0.0.0.0"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.octets()[0] == 127)
}

/// The git subcommand after the global options.
fn git_subcommand(args: &[String]) -> Option<&str> {
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        if GIT_VALUE_FLAGS.contains(&arg) {
            i += 2;
        } else if arg.starts_with('-') {
            i += 1;
        } else {
            return Some(arg);
        }
    }
    None
}

/// The `-c` payload of a shell invocation: the first operand after an option cluster holding `c`.
fn shell_payload(args: &[String]) -> Option<&str> {
    let mut seen_c = false;
    for arg in args {
        if arg.starts_with('-') && !arg.starts_with("--") && !seen_c {
            if arg[1..].contains('c') {
                seen_c = true;
            }
            continue;
        }
        if seen_c {
            return Some(arg);
        }
        if !arg.starts_with('-') {
            // A script file: not inspected.
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(cmd: &str, args: &[&str]) -> Result<(), String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        check(cmd, &args).map_err(|e| e.code().to_string())
    }

    fn blocked(cmd: &str, args: &[&str]) -> String {
        verdict(cmd, args).expect_err(&format!("{cmd} {args:?} should be blocked"))
    }

    #[test]
    fn benign_commands_pass() {
        for (cmd, args) in [
            ("node", &["bundle.js"][..]),
            ("echo", &["please run npm install"]),
            ("git", &["status"]),
            (
                "git",
                &["commit", "-m", "fetch the thing, see https://example.com"],
            ),
            ("git", &["-C", "push", "status"]),
            ("ls", &["-la"]),
            ("curl", &["http://127.0.0.1:8080"]),
            ("curl", &["-s", "http://localhost:3000/health"]),
            ("wget", &["http://api.localhost/x", "--header=x"]),
            ("curl", &["http://[::1]:8080/"]),
            ("curl", &["--url=http://0.0.0.0:9/"]),
            ("sh", &["-c", "ls; echo hi | wc -l"]),
            ("bash", &["script.sh", "curl"]),
        ] {
            assert_eq!(verdict(cmd, args), Ok(()), "{cmd} {args:?}");
        }
    }

    #[test]
    fn network_commands_are_blocked() {
        for (cmd, args) in [
            ("curl", &["https://example.com"][..]),
            ("curl", &[]),
            ("curl", &["127.0.0.1:8080"]),
            ("/usr/bin/wget", &["http://localhost.evil.com/"]),
            ("curl", &["http://localhost:1/", "https://example.com"]),
            ("npm", &["install"]),
            ("bun", &["x"]),
            ("pip", &["install", "x"]),
            ("curl https://x", &[]),
            ("python3", &["fetch.py", "https://example.com/data"]),
            ("node", &["--target=https://example.com"]),
            ("sh", &["-c", "ls; curl x.com"]),
            ("bash", &["-lc", "FOO=1 BAR=2 npm install"]),
            ("sh", &["-c", "echo $(wget http://evil.com)"]),
            ("zsh", &["-c", "true && `curl evil.com`"]),
        ] {
            assert_eq!(
                blocked(cmd, args),
                "TOOL_NETWORK_DISABLED",
                "{cmd} {args:?}"
            );
        }
    }

    #[test]
    fn git_remote_verbs_are_blocked() {
        for args in [
            &["push"][..],
            &["-C", "x", "push"],
            &["-c", "user.name=x", "fetch", "origin"],
            &["--git-dir", ".git", "--work-tree", ".", "pull"],
            &["clone", "repo"],
            &["remote", "-v"],
        ] {
            assert_eq!(blocked("git", args), "TOOL_GIT_REMOTE_DISABLED", "{args:?}");
        }
        assert_eq!(
            blocked("sh", &["-c", "cd x && git push"]),
            "TOOL_GIT_REMOTE_DISABLED"
        );
    }

    #[test]
    fn messages_mention_allow_network() {
        let err = check("curl", &["https://example.com".into()]).unwrap_err();
        assert!(err.message().contains("allowNetwork"), "{}", err.message());
        let err = check("git", &["push".into()]).unwrap_err();
        assert!(err.message().contains("allowNetwork"), "{}", err.message());
    }

    #[test]
    fn loopback_hosts() {
        for url in [
            "http://localhost",
            "http://LOCALHOST:80/x",
            "https://a.b.localhost/",
            "http://127.1.2.3:9",
            "http://[::1]/",
            "http://0.0.0.0:8000",
            "http://user@127.0.0.1/",
        ] {
            assert!(is_loopback_url(url), "{url}");
        }
        for url in [
            "http://localhost.evil.com",
            "http://127.0.0.1.evil.com/",
            "https://example.com",
            "http://evil.com@x.com/",
            "http://10.0.0.1/",
        ] {
            assert!(!is_loopback_url(url), "{url}");
        }
    }
}
