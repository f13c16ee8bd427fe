//! Bounds on the patterns `grep` and `glob` compile: the model's pattern, and each line of the
//! ignore files the walk reads (the model can write those too).
//!
//! globset parses and translates nested alternations (`{a,{b,{c,…}}}`) recursively: 10 000
//! nested `{` overflowed the stack, which aborts the whole process rather than fail the call.
//! The regex crate's own parser is not recursive and refuses more than 250 levels itself, but
//! the same bound applies to both, so that a model gets one clear `INVALID_INPUT` from either
//! tool before any library sees the pattern.

use toolsmith_core::ToolError;

/// The longest pattern accepted, in characters (as long as the calculator's expressions; a
/// pattern a model writes by hand is far shorter, an alternation of a hundred words is ~1 000).
pub(crate) const MAX_PATTERN_CHARS: usize = 10_000;

/// The deepest bracket nesting accepted. Deeper than any pattern written by hand (three or four
/// levels), far below the depth that overflowed globset's recursion on a 2 MiB thread stack
/// (thousands) and below the regex crate's own limit (250).
pub(crate) const MAX_PATTERN_NESTING: usize = 64;

/// Why a pattern is refused before it is compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TooComplex {
    /// Longer than [`MAX_PATTERN_CHARS`].
    TooLong,
    /// Nested deeper than [`MAX_PATTERN_NESTING`].
    TooDeep,
}

impl TooComplex {
    /// `INVALID_INPUT`, worded as the `bash` tool words its input limits.
    pub(crate) fn into_error(self) -> ToolError {
        ToolError::invalid_input(self.message())
    }

    /// `pattern exceeds 10000 characters.` or `pattern nests brackets more than 64 levels
    /// deep.`
    pub(crate) fn message(self) -> String {
        match self {
            TooComplex::TooLong => format!("pattern exceeds {MAX_PATTERN_CHARS} characters."),
            TooComplex::TooDeep => {
                format!("pattern nests brackets more than {MAX_PATTERN_NESTING} levels deep.")
            }
        }
    }
}

/// Checks `pattern` (a regex, a glob or an ignore-file line) against the bounds.
///
/// Nesting is counted conservatively, the same for every syntax: each `(`, `[` or `{` not
/// escaped with `\` opens a level and the next `)`, `]` or `}` closes one. A bracket that the
/// syntax treats as a literal (`[(]` in a regex) can only make the count higher, never lower,
/// so nothing deeper than the bound reaches a parser.
pub(crate) fn check(pattern: &str) -> Result<(), TooComplex> {
    if pattern.len() > MAX_PATTERN_CHARS && pattern.chars().nth(MAX_PATTERN_CHARS).is_some() {
        return Err(TooComplex::TooLong);
    }
    let bytes = pattern.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > MAX_PATTERN_NESTING {
                    return Err(TooComplex::TooDeep);
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        assert_eq!(check("src/**/*.{rs,toml}"), Ok(()));
        assert_eq!(check(r"fn\s+(\w+)\((.*)\)"), Ok(()));
        let deep = |n: usize| format!("{}a{}", "{a,".repeat(n), "}".repeat(n));
        assert_eq!(check(&deep(MAX_PATTERN_NESTING)), Ok(()));
        assert_eq!(
            check(&deep(MAX_PATTERN_NESTING + 1)),
            Err(TooComplex::TooDeep)
        );
        // Siblings do not add up; escaped brackets do not count.
        assert_eq!(check(&"(a)".repeat(1000)), Ok(()));
        assert_eq!(check(&r"\(".repeat(1000)), Ok(()));
        assert_eq!(check(&"[".repeat(10_000)), Err(TooComplex::TooDeep));
        assert_eq!(check(&"é".repeat(MAX_PATTERN_CHARS)), Ok(()));
        assert_eq!(
            check(&"é".repeat(MAX_PATTERN_CHARS + 1)),
            Err(TooComplex::TooLong)
        );
    }

    #[test]
    fn messages() {
        assert_eq!(
            TooComplex::TooLong.into_error().message(),
            "pattern exceeds 10000 characters."
        );
        let err = TooComplex::TooDeep.into_error();
        assert_eq!(
            (err.code(), err.message()),
            (
                "INVALID_INPUT",
                "pattern nests brackets more than 64 levels deep."
            )
        );
    }
}
