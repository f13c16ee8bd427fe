//! The built-in tools' parsers of model-written input: `edit`'s unified diffs, `grep`'s regexes,
//! `glob`'s globs (and the ignore files the walk reads), the calculator's expressions.

use serde_json::json;
use toolsmith_builtins::fuzzing;
use toolsmith_core::{ModelOutput, Tool, ToolContext};

use crate::split_nul;

/// A file's text, a NUL, a patch. The patch applied to the text must not fail in any way but
/// `TOOL_PATCH_FAILED`. And a patch that replaces the whole text (taken as the old file) by
/// the patch's bytes (taken as the new one), when both are LF-terminated lines, must apply and
/// give exactly the new text.
pub fn unified_diff(data: &[u8]) {
    let (text, patch) = split_nul(data);
    let (text, patch) = (
        String::from_utf8_lossy(text),
        String::from_utf8_lossy(patch),
    );
    if let Err(error) = fuzzing::apply_patch(&text, &patch) {
        assert_eq!(error.code(), "TOOL_PATCH_FAILED", "{error:?}");
    }
    let lf_lines = |s: &str| !s.is_empty() && s.ends_with('\n') && !s.contains('\r');
    if lf_lines(&text) && lf_lines(&patch) {
        let (old, new): (Vec<&str>, Vec<&str>) = (text.lines().collect(), patch.lines().collect());
        let mut whole = format!(
            "--- a/f\n+++ b/f\n@@ -1,{} +1,{} @@\n",
            old.len(),
            new.len()
        );
        for line in &old {
            whole.push_str(&format!("-{line}\n"));
        }
        for line in &new {
            whole.push_str(&format!("+{line}\n"));
        }
        let applied = fuzzing::apply_patch(&text, &whole);
        assert_eq!(applied.as_deref().ok(), Some(&*patch), "{whole}");
    }
}

/// A pattern, a NUL, a file's bytes: the pattern compiled as `grep` compiles it (or refused
/// with its error codes), then searched for in the bytes as in a file: the matching lines'
/// numbers rise, within the file's lines.
pub fn grep_pattern(data: &[u8]) {
    let (pattern, haystack) = split_nul(data);
    let pattern = String::from_utf8_lossy(pattern);
    match fuzzing::grep(&pattern, haystack) {
        Ok(lines) => {
            let count = haystack.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
            assert!(lines.windows(2).all(|w| w[0] < w[1]), "{lines:?}");
            assert!(lines.iter().all(|&n| n >= 1 && n <= count), "{lines:?}");
        }
        Err(error) => {
            assert!(
                matches!(error.code(), "INVALID_INPUT" | "TOOL_GREP_FAILED"),
                "{error:?}"
            );
        }
    }
}

/// A pattern, a NUL, a path: the pattern compiled as `glob` compiles it (or refused with its
/// error codes) and matched against the path, a plain path matching itself; the whole input as
/// an ignore file's bytes, compiled as the walk compiles one, asked about the path.
pub fn glob_pattern(data: &[u8]) {
    let (pattern, path) = split_nul(data);
    let (pattern, path) = (
        String::from_utf8_lossy(pattern),
        String::from_utf8_lossy(path),
    );
    // The walk asks about paths relative to the searched directory.
    let path = path.trim_start_matches('/');
    match fuzzing::glob(&pattern, path) {
        Ok(_) => {
            let plain = |s: &str| {
                !s.is_empty()
                    && !s.starts_with("./")
                    && s.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._-/".contains(&b))
            };
            if plain(&pattern) {
                assert_eq!(
                    fuzzing::glob(&pattern, &pattern).ok(),
                    Some(true),
                    "{pattern}"
                );
            }
        }
        Err(error) => {
            assert!(
                matches!(error.code(), "INVALID_INPUT" | "TOOL_GLOB_FAILED"),
                "{error:?}"
            );
        }
    }
    for is_dir in [false, true] {
        let (_, notes) = fuzzing::ignore_file(data, path, is_dir);
        assert!(notes.lines().count() <= 11, "{notes}");
    }
}

/// An expression, through the `calculator` tool: a finite result, shown to the model as
/// `<expression> = <result>` with a number that reads back within 12 significant digits; or
/// `INVALID_INPUT` / `MATH_ERROR`.
pub fn calculator(data: &[u8]) {
    let expression = String::from_utf8_lossy(data);
    let tool = toolsmith_builtins::calculator();
    let cx = ToolContext::for_test("calculator");
    let result = futures::executor::block_on(tool.call(json!({ "expression": expression }), &cx));
    match result {
        Ok(output) => {
            let result = output.value["result"].as_f64().expect("a number");
            assert!(result.is_finite());
            let ModelOutput::Text { value: text } = &output.model else {
                panic!("{:?}", output.model);
            };
            let prefix = format!("{} = ", expression.trim());
            let shown = text
                .strip_prefix(&prefix)
                .unwrap_or_else(|| panic!("{text}"));
            let read: f64 = shown.parse().unwrap_or_else(|e| panic!("{shown}: {e}"));
            assert!(
                (read - result).abs() <= result.abs() * 1e-11,
                "{result} shown as {shown}"
            );
        }
        Err(error) => {
            assert!(
                matches!(error.code(), "INVALID_INPUT" | "MATH_ERROR"),
                "{error:?}"
            );
        }
    }
}
