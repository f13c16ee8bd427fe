//! Secrets off the command line: the API key and secret variables from a file, standard input
//! or the environment, and a warning when one is given on the command line anyway.
//!
//! A process's command line can be read by every local user (`ps`, `/proc/PID/cmdline`) and by
//! the commands the agent runs, so a secret given there is not secret. Contract:
//!
//! - API key: the provider's environment variable (`OPENAI_API_KEY`, …), `--api-key-file FILE`
//!   (the whole file less one trailing line end), or `--api-key -` (one line read from
//!   standard input; on a terminal it is asked for without echo). `--api-key KEY` still works
//!   and prints [`API_KEY_WARNING`] on standard error.
//! - Variables: `--var NAME=VALUE`, `--var-file NAME=FILE` (the whole file less one trailing
//!   line end), else the environment variable `NAME`. A literal `--var` for a variable the
//!   config declares secret prints a warning naming the other two ways. One name given by
//!   both flags is a usage error.
//! - Errors name the flag and the file, never the value; a key must be one line of printable
//!   text (an HTTP header cannot carry anything else, and the error of one that does could
//!   echo it).

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Said on standard error when the API key is given on the command line.
pub(crate) const API_KEY_WARNING: &str = "warning: --api-key on the command line is visible to \
     other processes (ps, /proc/PID/cmdline), the agent's commands included; set the \
     provider's environment variable (such as OPENAI_API_KEY), or use --api-key-file FILE or \
     --api-key - (standard input)";

/// The warning for a secret variable given as `--var NAME=VALUE`.
pub(crate) fn var_warning(name: &str) -> String {
    format!(
        "warning: --var {name}=… puts a secret on the command line, visible to other processes \
         (ps, /proc/PID/cmdline), the agent's commands included; set the environment variable \
         {name} or use --var-file {name}=FILE"
    )
}

/// `--var-file NAME=FILE`.
pub(crate) fn parse_var_file(text: &str) -> Result<(String, PathBuf), String> {
    match text.split_once('=') {
        Some((name, file)) if !name.is_empty() && !file.is_empty() => {
            Ok((name.to_string(), PathBuf::from(file)))
        }
        _ => Err("expected NAME=FILE".to_string()),
    }
}

/// The API key the flags give: `--api-key-file`, `--api-key -`, or `--api-key KEY` (with
/// [`API_KEY_WARNING`] printed); `None` when neither flag is given (the provider reads its
/// environment variable).
///
/// # Errors
///
/// A usage error's message: an unreadable file, an empty key, or one that is not a single line
/// of printable text.
pub(crate) fn api_key(flag: Option<&str>, file: Option<&Path>) -> Result<Option<String>, String> {
    let (source, key) = match (flag, file) {
        (_, Some(file)) => {
            let source = format!("--api-key-file {}", file.display());
            let key = read_file(file).map_err(|e| format!("{source}: {e}"))?;
            (source, key)
        }
        (Some("-"), None) => {
            let key = read_stdin_line("API key: ")
                .map_err(|e| format!("--api-key -: reading standard input: {e}"))?;
            ("--api-key -".to_string(), key)
        }
        (Some(key), None) => {
            eprintln!("{API_KEY_WARNING}");
            ("--api-key".to_string(), key.to_string())
        }
        (None, None) => return Ok(None),
    };
    if key.is_empty() {
        return Err(format!("{source}: the key is empty"));
    }
    if key.chars().any(char::is_control) {
        return Err(format!(
            "{source}: the key must be one line of printable text (it holds a line break or \
             another control character)"
        ));
    }
    Ok(Some(key))
}

/// The values of `--var-file NAME=FILE` flags, read.
///
/// # Errors
///
/// A usage error's message naming the flag and file (never the contents).
pub(crate) fn var_files(files: &[(String, PathBuf)]) -> Result<Vec<(String, String)>, String> {
    files
        .iter()
        .map(|(name, file)| {
            read_file(file)
                .map(|value| (name.clone(), value))
                .map_err(|e| format!("--var-file {name}={}: {e}", file.display()))
        })
        .collect()
}

/// A file's text less one trailing line end (`\n` or `\r\n`).
fn read_file(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read the file: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|_| "the file is not UTF-8 text".to_string())?;
    Ok(strip_line_end(text))
}

/// `text` less one trailing `\n` or `\r\n`.
fn strip_line_end(mut text: String) -> String {
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    text
}

/// One line from standard input, less its line end. On a terminal, `prompt` is shown on
/// standard error first and the typed line is not echoed (`stty -echo` around the read; when
/// `stty` is missing the line is echoed).
fn read_stdin_line(prompt: &str) -> std::io::Result<String> {
    let stdin = std::io::stdin();
    let terminal = stdin.is_terminal();
    let mut hidden = false;
    if terminal {
        // Echo off before the prompt shows: what is typed after it is never echoed.
        hidden = stty("-echo");
        let mut stderr = std::io::stderr();
        let _ = write!(stderr, "{prompt}");
        let _ = stderr.flush();
    }
    let mut line = String::new();
    let read = stdin.lock().read_line(&mut line);
    if hidden {
        stty("echo");
        eprintln!();
    }
    read?;
    Ok(strip_line_end(line))
}

/// Runs `stty SETTING` on the terminal standard input is: whether it worked.
fn stty(setting: &str) -> bool {
    Command::new("stty")
        .arg(setting)
        .stdin(Stdio::inherit())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_trailing_line_end_is_removed_and_nothing_else() {
        for (text, expected) in [
            ("sk-1\n", "sk-1"),
            ("sk-1\r\n", "sk-1"),
            ("sk-1", "sk-1"),
            ("sk-1\n\n", "sk-1\n"),
            (" sk-1 \n", " sk-1 "),
            ("", ""),
        ] {
            assert_eq!(strip_line_end(text.into()), expected, "{text:?}");
        }
    }

    #[test]
    fn a_key_file_is_read_and_bad_keys_are_refused_without_echoing_them() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("key");
        std::fs::write(&file, "sk-from-file\n").unwrap();
        assert_eq!(
            api_key(None, Some(&file)).unwrap().as_deref(),
            Some("sk-from-file")
        );
        std::fs::write(&file, "sk-line-one\nsk-line-two\n").unwrap();
        let err = api_key(None, Some(&file)).unwrap_err();
        assert_eq!(
            err,
            format!(
                "--api-key-file {}: the key must be one line of printable text (it holds a \
                 line break or another control character)",
                file.display()
            )
        );
        std::fs::write(&file, "\n").unwrap();
        let err = api_key(None, Some(&file)).unwrap_err();
        assert_eq!(
            err,
            format!("--api-key-file {}: the key is empty", file.display())
        );
        std::fs::write(&file, [0xff, 0xfe]).unwrap();
        let err = api_key(None, Some(&file)).unwrap_err();
        assert_eq!(
            err,
            format!(
                "--api-key-file {}: the file is not UTF-8 text",
                file.display()
            )
        );
        let missing = dir.path().join("missing");
        let err = api_key(None, Some(&missing)).unwrap_err();
        assert!(
            err.starts_with(&format!(
                "--api-key-file {}: cannot read the file: ",
                missing.display()
            )),
            "{err}"
        );
        assert_eq!(api_key(None, None).unwrap(), None);
    }

    #[test]
    fn var_files_are_read_by_name_and_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "line one\nline two\n").unwrap();
        let values = var_files(&[("TOKEN".into(), file.clone())]).unwrap();
        assert_eq!(values, [("TOKEN".to_string(), "line one\nline two".into())]);
        let missing = dir.path().join("nope");
        let err = var_files(&[("TOKEN".into(), missing.clone())]).unwrap_err();
        assert!(
            err.starts_with(&format!(
                "--var-file TOKEN={}: cannot read",
                missing.display()
            )),
            "{err}"
        );
        assert_eq!(
            parse_var_file("TOKEN=/run/secrets/token").unwrap(),
            ("TOKEN".to_string(), PathBuf::from("/run/secrets/token"))
        );
        for bad in ["TOKEN", "=file", "TOKEN="] {
            assert_eq!(parse_var_file(bad).unwrap_err(), "expected NAME=FILE");
        }
    }
}
