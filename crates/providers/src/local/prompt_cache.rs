//! The evaluated start of the prompt, kept on disk across processes.
//!
//! Every request with the same system text and tools begins with the same several hundred
//! tokens: the instructions, the tool list and the worked examples
//! ([`super::prompt::build_split`]). Evaluating them is most of a fresh process's first turn
//! (about 2 s for 800 tokens on two cores), and the engine's in-memory cache only helps the
//! turns after it. So after evaluating that start once, the engine saves its sequence's KV
//! state here, and a later process (or another context in this one) restores it in
//! milliseconds instead of evaluating it again.
//!
//! **What a file may be used for.** A file is named by a SHA-256 of everything the state
//! depends on (the model file, the context's settings, the running program's file, since a
//! state is only meaningful to the llama.cpp build that wrote it) and of the tokens it holds.
//! It carries those tokens and a SHA-256 of its whole contents. A file that is short, altered,
//! for other tokens or for another model, program or setting is deleted and never given to
//! llama.cpp: only bytes that this program got from llama.cpp for this model and these settings
//! are restored. Restored or evaluated, the state is the same bytes, and the engine evaluates
//! the shared start in the same batches either way, so a turn's tokens do not depend on
//! whether the cache was used.
//!
//! **Failure.** The cache can make a turn faster, never fail it: a file that cannot be read,
//! checked, restored or written is logged (`tracing`, level `warn`) and the prompt is evaluated
//! as if there were no cache. Writes go to a temporary file renamed into place, so concurrent
//! processes see a whole file or none. The newest [`KEEP`] files are kept (about 13 MB each
//! for the default model's 800-token start).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::session::LlamaStateSeqFlags;
use llama_cpp_2::token::LlamaToken;
use sha2::{Digest, Sha256};

/// The first bytes of a file, and the format's version.
const MAGIC: &[u8; 8] = b"tskvst\x00\x01";

/// How many files a cache directory keeps (the most recently used).
pub(crate) const KEEP: usize = 8;

/// Shared starts shorter than this are not worth a file.
pub(crate) const MIN_TOKENS: usize = 64;

/// The sequence every turn uses.
const SEQ: i32 = 0;

/// The file extension of saved states.
const EXTENSION: &str = "kvstate";

/// A directory of saved prompt states for one model, context and program.
#[derive(Debug)]
pub(crate) struct PromptCache {
    dir: PathBuf,
    /// SHA-256 of what a state depends on besides its tokens.
    identity: [u8; 32],
}

impl PromptCache {
    /// The cache in `dir` for the model at `model` and a context described by `settings`;
    /// `None` (no cache) when the model's or the program's file cannot be identified.
    pub(crate) fn new(dir: PathBuf, model: &Path, settings: &str) -> Option<Self> {
        let program = std::env::current_exe().ok()?;
        let mut identity = Sha256::new();
        identity.update(MAGIC);
        for file in [model, program.as_path()] {
            let file = fs::canonicalize(file).ok()?;
            let meta = fs::metadata(&file).ok()?;
            let modified = meta
                .modified()
                .ok()?
                .duration_since(UNIX_EPOCH)
                .ok()?
                .as_nanos();
            identity.update(file.as_os_str().as_encoded_bytes());
            identity.update([0]);
            identity.update(meta.len().to_le_bytes());
            identity.update(modified.to_le_bytes());
        }
        identity.update(settings.as_bytes());
        Some(PromptCache {
            dir,
            identity: identity.finalize().into(),
        })
    }

    /// The file that holds the state after `tokens`.
    fn path_for(&self, tokens: &[LlamaToken]) -> PathBuf {
        let mut name = Sha256::new();
        name.update(self.identity);
        name.update(token_bytes(tokens));
        let hex: String = name.finalize().iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{hex}.{EXTENSION}"))
    }

    /// Restores the state after `tokens` into `ctx`'s (cleared) cache; whether it did. On
    /// `false` the cache is empty, as before.
    pub(crate) fn restore(&self, ctx: &mut LlamaContext<'_>, tokens: &[LlamaToken]) -> bool {
        let path = self.path_for(tokens);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return false,
            Err(err) => {
                tracing::warn!("prompt cache: {} could not be read: {err}", path.display());
                return false;
            }
        };
        let Some(state) = self.check(&bytes, tokens) else {
            tracing::warn!(
                "prompt cache: {} is damaged or not this cache's; deleted",
                path.display()
            );
            let _ = fs::remove_file(&path);
            return false;
        };
        ctx.clear_kv_cache();
        // SAFETY: `check` verified the SHA-256 of the whole file, and the file's name and
        // identity tie it to this model file, these context settings and this program's file:
        // `state` is byte for byte what `save` got from llama.cpp's `state_seq_get_data_ext`
        // in this program for a context like this one, which is the valid state data that
        // `state_seq_set_data_ext` requires.
        #[allow(unsafe_code)]
        let restored =
            unsafe { ctx.state_seq_set_data_ext(state, SEQ, LlamaStateSeqFlags::empty()) };
        if !restored {
            ctx.clear_kv_cache();
            tracing::warn!(
                "prompt cache: llama.cpp did not accept {}; deleted",
                path.display()
            );
            let _ = fs::remove_file(&path);
            return false;
        }
        // Recently used files are the ones eviction keeps.
        if let Ok(file) = fs::File::options().append(true).open(&path) {
            let _ = file.set_modified(SystemTime::now());
        }
        true
    }

    /// The state in a file's `bytes`, if the file is whole, this cache's, and holds `tokens`.
    fn check<'b>(&self, bytes: &'b [u8], tokens: &[LlamaToken]) -> Option<&'b [u8]> {
        let (body, digest) = bytes.split_at_checked(bytes.len().checked_sub(32)?)?;
        if Sha256::digest(body).as_slice() != digest {
            return None;
        }
        let rest = body.strip_prefix(MAGIC.as_slice())?;
        let rest = rest.strip_prefix(self.identity.as_slice())?;
        let (count, rest) = rest.split_at_checked(4)?;
        let count = u32::from_le_bytes(count.try_into().ok()?) as usize;
        let (held, rest) = rest.split_at_checked(count.checked_mul(4)?)?;
        if count != tokens.len() || held != token_bytes(tokens).as_slice() {
            return None;
        }
        let (length, state) = rest.split_at_checked(8)?;
        let length = u64::from_le_bytes(length.try_into().ok()?);
        (length == state.len() as u64 && !state.is_empty()).then_some(state)
    }

    /// Saves the state of `ctx`'s cache, which holds exactly `tokens`, replacing the file for
    /// them; then keeps the newest [`KEEP`] files. Failures are logged and otherwise ignored.
    pub(crate) fn save(&self, ctx: &LlamaContext<'_>, tokens: &[LlamaToken]) {
        let flags = LlamaStateSeqFlags::empty();
        let size = ctx.state_seq_get_size_ext(SEQ, flags);
        let mut state = vec![0u8; size];
        // SAFETY: `state` has the size llama.cpp just reported for this sequence's state with
        // these flags, and nothing runs on the context in between (the engine's thread owns it).
        #[allow(unsafe_code)]
        let written = unsafe { ctx.state_seq_get_data_ext(state.as_mut_ptr(), SEQ, flags) };
        if written != size || size == 0 {
            tracing::warn!("prompt cache: llama.cpp wrote {written} of {size} state bytes");
            return;
        }
        let file = self.encode(tokens, &state);
        let path = self.path_for(tokens);
        if let Err(err) = write_atomically(&self.dir, &path, &file) {
            tracing::warn!(
                "prompt cache: {} could not be written: {err}",
                path.display()
            );
            return;
        }
        self.evict();
    }

    /// A file's bytes: the magic, the identity, the tokens, the state, and a SHA-256 of them.
    fn encode(&self, tokens: &[LlamaToken], state: &[u8]) -> Vec<u8> {
        let mut file = Vec::with_capacity(state.len() + tokens.len() * 4 + 96);
        file.extend_from_slice(MAGIC);
        file.extend_from_slice(&self.identity);
        file.extend_from_slice(&(tokens.len() as u32).to_le_bytes());
        file.extend_from_slice(&token_bytes(tokens));
        file.extend_from_slice(&(state.len() as u64).to_le_bytes());
        file.extend_from_slice(state);
        let digest = Sha256::digest(&file);
        file.extend_from_slice(&digest);
        file
    }

    /// Deletes all but the [`KEEP`] most recently used files.
    fn evict(&self) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        let mut files: Vec<(SystemTime, PathBuf)> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == EXTENSION))
            .filter_map(|p| Some((fs::metadata(&p).ok()?.modified().ok()?, p)))
            .collect();
        files.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
        for (_, old) in files.into_iter().skip(KEEP) {
            let _ = fs::remove_file(old);
        }
    }
}

/// The tokens as little-endian bytes.
fn token_bytes(tokens: &[LlamaToken]) -> Vec<u8> {
    tokens.iter().flat_map(|t| t.0.to_le_bytes()).collect()
}

/// Writes `bytes` to a temporary file in `dir` and renames it to `path`.
fn write_atomically(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    let temporary = dir.join(format!(
        ".{}-{:016x}.tmp",
        std::process::id(),
        fastrand::u64(..)
    ));
    let result = fs::File::create(&temporary)
        .and_then(|mut file| file.write_all(bytes))
        .and_then(|()| fs::rename(&temporary, path));
    if result.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(dir: &Path, settings: &str) -> PromptCache {
        let model = dir.join("model.gguf");
        if !model.exists() {
            fs::write(&model, b"GGUF").unwrap();
        }
        PromptCache::new(dir.join("cache"), &model, settings).unwrap()
    }

    fn tokens(n: i32) -> Vec<LlamaToken> {
        (0..n).map(LlamaToken::new).collect()
    }

    #[test]
    fn a_whole_file_gives_back_its_state_for_its_tokens_only() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache(dir.path(), "n_ctx=4096");
        let file = cache.encode(&tokens(100), b"state bytes");
        assert_eq!(cache.check(&file, &tokens(100)), Some(&b"state bytes"[..]));
        assert_eq!(cache.check(&file, &tokens(99)), None);
        let mut other = tokens(100);
        other[50] = LlamaToken::new(7);
        assert_eq!(cache.check(&file, &other), None);
    }

    #[test]
    fn a_damaged_or_short_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache(dir.path(), "n_ctx=4096");
        let file = cache.encode(&tokens(100), &[9; 1000]);
        for at in [0, 9, 50, 500, file.len() - 1] {
            let mut damaged = file.clone();
            damaged[at] ^= 1;
            assert_eq!(cache.check(&damaged, &tokens(100)), None, "byte {at}");
        }
        for len in [0, 31, 32, 100, file.len() - 1] {
            assert_eq!(cache.check(&file[..len], &tokens(100)), None, "{len} bytes");
        }
        // A file whose digest is right but whose state length is not.
        let mut body = file[..file.len() - 32].to_vec();
        body.push(0);
        let digest = Sha256::digest(&body);
        body.extend_from_slice(&digest);
        assert_eq!(cache.check(&body, &tokens(100)), None);
    }

    #[test]
    fn another_models_or_settings_file_is_refused_even_under_the_right_name() {
        let dir = tempfile::tempdir().unwrap();
        let ours = cache(dir.path(), "n_ctx=4096");
        let theirs = cache(dir.path(), "n_ctx=2048");
        assert_ne!(ours.path_for(&tokens(10)), theirs.path_for(&tokens(10)));
        let file = theirs.encode(&tokens(10), b"state");
        assert_eq!(ours.check(&file, &tokens(10)), None);

        // The model file changing (its length here) changes the identity too.
        fs::write(dir.path().join("model.gguf"), b"GGUF, another one").unwrap();
        let changed = cache(dir.path(), "n_ctx=4096");
        assert_ne!(ours.path_for(&tokens(10)), changed.path_for(&tokens(10)));
    }

    #[test]
    fn only_the_newest_files_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache(dir.path(), "");
        let now = SystemTime::now();
        for i in 0..(KEEP as i32 + 3) {
            let path = cache.path_for(&tokens(i + 1));
            write_atomically(&cache.dir, &path, b"x").unwrap();
            let age = std::time::Duration::from_secs(100 - i as u64);
            fs::File::options()
                .append(true)
                .open(&path)
                .unwrap()
                .set_modified(now - age)
                .unwrap();
        }
        fs::write(cache.dir.join("unrelated.txt"), b"kept").unwrap();
        cache.evict();
        let left: Vec<_> = fs::read_dir(&cache.dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(left.len(), KEEP + 1, "{left:?}");
        for i in 0..3 {
            assert!(
                !cache.path_for(&tokens(i + 1)).exists(),
                "oldest {i} evicted"
            );
        }
        assert!(cache.path_for(&tokens(KEEP as i32 + 3)).exists());
        assert!(cache.dir.join("unrelated.txt").exists());
    }
}
