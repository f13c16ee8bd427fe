//! Tool names every provider accepts, from an MCP server's names.
//!
//! MCP allows 1 to 128 of `A-Z a-z 0-9 _ - . /` in a tool's name (and older servers send
//! anything); providers are narrower: OpenAI takes `^[a-zA-Z0-9_-]{1,64}$`, Anthropic the same
//! up to 128, Gemini wants a letter or `_` first and at most 64. The common ground is
//! `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`, and every name made here is in it:
//!
//! 1. `<prefix>__<tool>` (Claude Code's convention without its `mcp__`; the prefix is the
//!    server's name unless its entry says otherwise), or the tool's name alone for an empty
//!    prefix;
//! 2. every other character becomes `_`; a name that starts with a digit or `-` gets a `_` in
//!    front;
//! 3. a name longer than 64 keeps its first 55 characters, then `_` and 8 hex digits of the
//!    SHA-256 of the unshortened name (so two long names sharing 55 characters still differ);
//! 4. a name already taken (two tools that differ only in characters step 2 replaced, or a tool
//!    of another server or of the agent) gets the same hash suffix; the first comes first, in
//!    the server's order.

use sha2::{Digest, Sha256};

/// The longest name every provider accepts.
pub const MAX_NAME: usize = 64;

/// The provider-safe name of `tool` under `prefix` (steps 1 to 3 of the module docs).
///
/// ```
/// use toolsmith_mcp::client::provider_name;
///
/// assert_eq!(provider_name("fs", "read_file"), "fs__read_file");
/// assert_eq!(provider_name("", "files/read.text"), "files_read_text");
/// assert_eq!(provider_name("git", "3way"), "git__3way");
/// assert_eq!(provider_name("", "3way"), "_3way");
/// assert_eq!(provider_name("x", &"a".repeat(100)).len(), 64);
/// ```
pub fn provider_name(prefix: &str, tool: &str) -> String {
    let full = if prefix.is_empty() {
        tool.to_string()
    } else {
        format!("{prefix}__{tool}")
    };
    let mut name: String = full
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        name.insert(0, '_');
    }
    if name.len() > MAX_NAME {
        name.truncate(MAX_NAME - 9);
        name.push('_');
        name.push_str(&hash8(&full));
    }
    name
}

/// `name`, or when `taken` says it is, `name` shortened to make room for `_` and 8 hex digits
/// of the hash of `tool` (the server's own name), then numbered if even that is taken.
pub(crate) fn unique(name: String, tool: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(&name) {
        return name;
    }
    let mut base = name;
    base.truncate(MAX_NAME - 9);
    let hashed = format!("{base}_{}", hash8(tool));
    if !taken(&hashed) {
        return hashed;
    }
    base.truncate(MAX_NAME - 13);
    (2..)
        .map(|n| format!("{base}_{}_{n}", &hash8(tool)[..3]))
        .find(|candidate| !taken(candidate))
        .expect("some number is free")
}

fn hash8(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest[..4].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The common ground of the providers' rules.
    fn accepted(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= MAX_NAME
            && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn every_name_is_accepted_by_every_provider() {
        let long = "x".repeat(200);
        for (prefix, tool) in [
            ("fs", "read_file"),
            ("", "ünïcödé tool!"),
            ("", ""),
            ("", "-dash"),
            ("a", "b/c.d"),
            ("", long.as_str()),
            ("srv", long.as_str()),
        ] {
            let name = provider_name(prefix, tool);
            assert!(accepted(&name), "{prefix:?} {tool:?} -> {name:?}");
        }
    }

    #[test]
    fn long_names_sharing_a_beginning_still_differ() {
        let a = provider_name("", &format!("{}a", "x".repeat(80)));
        let b = provider_name("", &format!("{}b", "x".repeat(80)));
        assert_ne!(a, b);
        assert_eq!(a.len(), MAX_NAME);
    }

    #[test]
    fn a_taken_name_gets_a_suffix_that_is_free() {
        let taken = ["fs__a_b".to_string()];
        let name = unique(provider_name("fs", "a.b"), "a.b", |n| {
            taken.iter().any(|t| t == n)
        });
        assert_ne!(name, "fs__a_b");
        assert!(accepted(&name) && name.starts_with("fs__a_b_"), "{name}");
        let all_taken = unique("n".into(), "t", |n| !n.ends_with("_3"));
        assert!(
            all_taken.ends_with("_3") && accepted(&all_taken),
            "{all_taken}"
        );
    }
}
