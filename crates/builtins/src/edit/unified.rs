//! Applying a single-file unified diff the way jsdiff's `applyPatch` does with its defaults:
//! exact context (fuzz 0), hunks in order, each searched outward from its header line, line
//! endings auto-converted, `\ No newline at end of file` honoured, headers ignored.

/// Why a patch did not apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchError {
    /// The patch names more than one file.
    MultipleFiles,
    /// The patch is malformed or has no hunks.
    Malformed(String),
    /// Hunk `n` (1-based) matched nowhere.
    HunkFailed(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Context,
    Delete,
    Insert,
}

#[derive(Debug)]
struct Line<'a> {
    op: Op,
    text: &'a str,
    /// Followed by `\ No newline at end of file`.
    no_newline: bool,
}

#[derive(Debug)]
struct Hunk<'a> {
    old_start: usize,
    old_len: usize,
    lines: Vec<Line<'a>>,
}

/// Parses `@@ -a[,b] +c[,d] @@`.
fn parse_header(line: &str) -> Option<(usize, usize, usize)> {
    let rest = line.strip_prefix("@@ -")?;
    let (old, rest) = rest.split_once(' ')?;
    let new = rest.strip_prefix('+')?.split(' ').next()?;
    let range = |s: &str| -> Option<(usize, usize)> {
        match s.split_once(',') {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => Some((s.parse().ok()?, 1)),
        }
    };
    let (old_start, old_len) = range(old)?;
    let (_, new_len) = range(new)?;
    Some((old_start, old_len, new_len))
}

fn parse(patch: &str) -> Result<Vec<Hunk<'_>>, PatchError> {
    let mut lines: Vec<&str> = patch
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    if lines.last() == Some(&"") {
        lines.pop(); // the patch's final newline, not an empty context line
    }
    let mut hunks = Vec::new();
    let mut files = 0usize;
    // Whether the current file section already has a header (so `+++` after `---` or a `---`
    // after `Index:` belongs to the same file).
    let mut in_header = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with("@@") {
            in_header = false;
            let (old_start, mut old_left, mut new_left) = parse_header(line)
                .ok_or_else(|| PatchError::Malformed(format!("bad hunk header: {line}")))?;
            if files == 0 {
                files = 1;
            }
            let mut hunk = Hunk {
                old_start,
                old_len: old_left,
                lines: Vec::new(),
            };
            i += 1;
            while old_left > 0 || new_left > 0 {
                let Some(&body) = lines.get(i) else {
                    return Err(PatchError::Malformed(format!(
                        "hunk {} is shorter than its header says",
                        hunks.len() + 1
                    )));
                };
                let (op, text) = match body.as_bytes().first() {
                    None => (Op::Context, ""),
                    Some(b' ') => (Op::Context, &body[1..]),
                    Some(b'-') => (Op::Delete, &body[1..]),
                    Some(b'+') => (Op::Insert, &body[1..]),
                    Some(b'\\') => {
                        if let Some(last) = hunk.lines.last_mut() {
                            last.no_newline = true;
                        }
                        i += 1;
                        continue;
                    }
                    Some(_) => {
                        return Err(PatchError::Malformed(format!(
                            "unexpected line in hunk {}: {body}",
                            hunks.len() + 1
                        )));
                    }
                };
                let (old_used, new_used) = match op {
                    Op::Context => (1, 1),
                    Op::Delete => (1, 0),
                    Op::Insert => (0, 1),
                };
                if old_used > old_left || new_used > new_left {
                    return Err(PatchError::Malformed(format!(
                        "hunk {} is longer than its header says",
                        hunks.len() + 1
                    )));
                }
                old_left -= old_used;
                new_left -= new_used;
                hunk.lines.push(Line {
                    op,
                    text,
                    no_newline: false,
                });
                i += 1;
            }
            if let Some(marker) = lines.get(i)
                && marker.starts_with('\\')
            {
                if let Some(last) = hunk.lines.last_mut() {
                    last.no_newline = true;
                }
                i += 1;
            }
            if let Some(extra) = lines.get(i)
                && (extra.starts_with(['+', ' '])
                    || (extra.starts_with('-')
                        && !lines.get(i + 1).is_some_and(|n| n.starts_with("+++ "))))
            {
                return Err(PatchError::Malformed(format!(
                    "hunk {} is longer than its header says",
                    hunks.len() + 1
                )));
            }
            hunks.push(hunk);
            continue;
        }
        let starts_file = line.starts_with("diff --git ")
            || line.starts_with("Index: ")
            || (line.starts_with("--- ")
                && lines
                    .get(i + 1)
                    .is_some_and(|next| next.starts_with("+++ ")));
        if starts_file {
            if !in_header {
                files += 1;
                in_header = true;
            }
            if line.starts_with("--- ") {
                i += 1; // the `+++` line
            }
        }
        if files > 1 {
            return Err(PatchError::MultipleFiles);
        }
        i += 1;
    }
    if hunks.is_empty() {
        return Err(PatchError::Malformed("the patch has no hunks".into()));
    }
    Ok(hunks)
}

/// A line of the file: its text and its terminator (`"\n"`, `"\r\n"` or `""` for a last line
/// without one).
fn split_lines(text: &str) -> Vec<(&str, &str)> {
    let mut lines = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        match rest.find('\n') {
            Some(end) => {
                let line = &rest[..end];
                lines.push(match line.strip_suffix('\r') {
                    Some(body) => (body, "\r\n"),
                    None => (line, "\n"),
                });
                rest = &rest[end + 1..];
            }
            None => {
                lines.push((rest, ""));
                rest = "";
            }
        }
    }
    lines
}

/// Applies `patch` to `text`, keeping the file's line endings.
pub fn apply(text: &str, patch: &str) -> Result<String, PatchError> {
    let hunks = parse(patch)?;
    let file = split_lines(text);
    let hashes = LineHashes::new(&file);
    let crlf = file.iter().filter(|(_, eol)| *eol == "\r\n").count();
    let lf = file.iter().filter(|(_, eol)| *eol == "\n").count();
    let eol = if crlf > lf { "\r\n" } else { "\n" };

    let mut out: Vec<(&str, &str)> = Vec::new();
    let mut next = 0usize; // the first file line not yet copied
    // How far the previous hunk landed from its header. In i128: a header's line number is any
    // usize the patch says (`@@ -9223372036854775809 …`), and isize arithmetic on it overflowed.
    let mut shift: i128 = 0;
    for (index, hunk) in hunks.iter().enumerate() {
        let old: Vec<&str> = hunk
            .lines
            .iter()
            .filter(|l| l.op != Op::Insert)
            .map(|l| l.text)
            .collect();
        let header = if hunk.old_len == 0 {
            hunk.old_start
        } else {
            hunk.old_start.saturating_sub(1)
        };
        let max = file.len().checked_sub(old.len()).filter(|&max| max >= next);
        let at = max.and_then(|max| {
            let expected = (header as i128 + shift).clamp(next as i128, max as i128);
            find(&file, &hashes, &old, expected as usize, next, max)
        });
        let Some(at) = at else {
            return Err(PatchError::HunkFailed(index + 1));
        };
        shift = at as i128 - header as i128;
        out.extend_from_slice(&file[next..at]);
        let mut consumed = at;
        for line in &hunk.lines {
            match line.op {
                Op::Delete => consumed += 1,
                Op::Context => {
                    let original = file[consumed].1;
                    let ending = if line.no_newline { "" } else { original };
                    out.push((file[consumed].0, ending));
                    consumed += 1;
                }
                Op::Insert => out.push((line.text, if line.no_newline { "" } else { eol })),
            }
        }
        next = consumed;
    }
    out.extend_from_slice(&file[next..]);

    let mut result = String::with_capacity(text.len());
    let last = out.len().saturating_sub(1);
    for (i, (line, ending)) in out.iter().enumerate() {
        result.push_str(line);
        // Only the last line may lack a terminator.
        result.push_str(if ending.is_empty() && i != last {
            eol
        } else {
            ending
        });
    }
    Ok(result)
}

/// Hashes of the file's lines, keyed per process, and their running polynomial sums, so that
/// whether a run of lines can equal a hunk's is known in constant time.
///
/// Comparing a hunk line by line at every candidate position cost positions × hunk lines: a
/// hunk of 60 000 identical context lines against a file of 100 000 (both within the default
/// 200 000-byte limits) took 2·10⁹ comparisons, and within the largest limits (10 MiB) hours,
/// an edit call that never returned. With the hashes each position costs one comparison of two
/// numbers, and lines are compared only where the hashes agree (a real match, barring a 2⁻⁶⁴
/// accident: the keys are random, so a patch cannot be written to collide).
struct LineHashes {
    state: std::hash::RandomState,
    /// The multiplier of the polynomial sums (odd, random).
    base: u64,
    /// `prefix[i]`: the sum over the first `i` lines.
    prefix: Vec<u64>,
}

impl LineHashes {
    fn new(file: &[(&str, &str)]) -> Self {
        use std::hash::BuildHasher;
        let state = std::hash::RandomState::new();
        let base = state.hash_one("base") | 1;
        let mut prefix = Vec::with_capacity(file.len() + 1);
        prefix.push(0u64);
        let mut sum = 0u64;
        for (line, _) in file {
            sum = sum.wrapping_mul(base).wrapping_add(state.hash_one(line));
            prefix.push(sum);
        }
        LineHashes {
            state,
            base,
            prefix,
        }
    }

    /// The sum of `lines`, and `base` to the power of their count.
    fn of(&self, lines: &[&str]) -> (u64, u64) {
        use std::hash::BuildHasher;
        let mut sum = 0u64;
        let mut power = 1u64;
        for line in lines {
            sum = sum
                .wrapping_mul(self.base)
                .wrapping_add(self.state.hash_one(line));
            power = power.wrapping_mul(self.base);
        }
        (sum, power)
    }

    /// The sum of the file's lines `at..at + len`, given `power` = `base`^`len`.
    fn window(&self, at: usize, len: usize, power: u64) -> u64 {
        self.prefix[at + len].wrapping_sub(self.prefix[at].wrapping_mul(power))
    }
}

/// The position in `min..=max` nearest `expected` (trying forward first at each distance) where
/// `old` matches the file line for line.
fn find(
    file: &[(&str, &str)],
    index: &LineHashes,
    old: &[&str],
    expected: usize,
    min: usize,
    max: usize,
) -> Option<usize> {
    let (target, power) = index.of(old);
    let matches = |at: usize| {
        index.window(at, old.len(), power) == target
            && old.iter().zip(&file[at..]).all(|(o, (f, _))| o == f)
    };
    let mut distance = 0usize;
    loop {
        let forward = expected.checked_add(distance).filter(|&p| p <= max);
        let backward = expected.checked_sub(distance).filter(|&p| p >= min);
        if forward.is_none() && backward.is_none() {
            return None;
        }
        if let Some(p) = forward
            && matches(p)
        {
            return Some(p);
        }
        if distance > 0
            && let Some(p) = backward
            && matches(p)
        {
            return Some(p);
        }
        distance += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n";

    #[test]
    fn applies_at_the_header_line() {
        let patch = "--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n two\n-three\n+THREE\n four\n";
        assert_eq!(apply(BASE, patch).unwrap(), BASE.replace("three", "THREE"));
    }

    #[test]
    fn tolerates_wrong_line_numbers_both_ways() {
        for start in ["1", "8", "40"] {
            let patch = format!("@@ -{start},3 +{start},3 @@\n six\n-seven\n+SEVEN\n eight\n");
            assert_eq!(
                apply(BASE, &patch).unwrap(),
                BASE.replace("seven", "SEVEN"),
                "{start}"
            );
        }
    }

    #[test]
    fn multi_hunk_with_later_hunks_after_earlier_ones() {
        let patch = "@@ -1,2 +1,3 @@\n one\n+one-and-a-half\n two\n@@ -9,2 +10,1 @@\n nine\n-ten\n";
        assert_eq!(
            apply(BASE, patch).unwrap(),
            "one\none-and-a-half\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\n"
        );
        // The second hunk's context only occurs before the first hunk: it must not go back.
        let patch = "@@ -5,1 +5,1 @@\n-five\n+FIVE\n@@ -1,1 +1,1 @@\n-one\n+ONE\n";
        assert_eq!(apply(BASE, patch), Err(PatchError::HunkFailed(2)));
    }

    #[test]
    fn a_hunk_with_no_room_left_after_the_previous_one_fails() {
        let patch = "@@ -3,1 +3,1 @@\n-c\n+C\n@@ -2,2 +2,2 @@\n b\n-c\n+x\n";
        assert_eq!(apply("a\nb\nc\n", patch), Err(PatchError::HunkFailed(2)));
    }

    #[test]
    fn context_must_match_exactly() {
        let patch = "@@ -2,3 +2,3 @@\n two\n-three\n+THREE\n fourr\n";
        assert_eq!(apply(BASE, patch), Err(PatchError::HunkFailed(1)));
        let patch = "@@ -2,2 +2,1 @@\n two\n-thre\n";
        assert_eq!(apply(BASE, patch), Err(PatchError::HunkFailed(1)));
    }

    #[test]
    fn line_endings_are_converted_both_ways() {
        let crlf = "a\r\nb\r\nc\r\n";
        let patch = "@@ -1,3 +1,4 @@\n a\n-b\n+B\n+B2\n c\n";
        assert_eq!(apply(crlf, patch).unwrap(), "a\r\nB\r\nB2\r\nc\r\n");
        let lf = "a\nb\nc\n";
        let patch = "@@ -1,3 +1,3 @@\r\n a\r\n-b\r\n+B\r\n c\r\n";
        assert_eq!(apply(lf, patch).unwrap(), "a\nB\nc\n");
    }

    #[test]
    fn no_newline_at_end_of_file() {
        let patch = "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n";
        assert_eq!(apply("a\nb", patch).unwrap(), "a\nb\n");
        let patch = "@@ -1,2 +1,2 @@\n a\n-b\n+c\n\\ No newline at end of file\n";
        assert_eq!(apply("a\nb\n", patch).unwrap(), "a\nc");
        let patch = "@@ -1,1 +1,2 @@\n-a\n\\ No newline at end of file\n+a\n+b\n";
        assert_eq!(apply("a", patch).unwrap(), "a\nb\n");
    }

    #[test]
    fn a_blank_context_line_without_its_space_still_counts() {
        let patch = "@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n";
        assert_eq!(apply("a\n\nb\n", patch).unwrap(), "a\n\nc\n");
    }

    #[test]
    fn insertion_into_an_empty_file() {
        let patch = "--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+x\n+y\n";
        assert_eq!(apply("", patch).unwrap(), "x\ny\n");
    }

    #[test]
    fn a_deleted_line_that_looks_like_a_header() {
        let patch = "@@ -1,2 +1,1 @@\n--- not a header\n keep\n";
        assert_eq!(apply("-- not a header\nkeep\n", patch).unwrap(), "keep\n");
    }

    #[test]
    fn multiple_files_are_refused() {
        let patch =
            "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(apply("a\n", patch), Err(PatchError::MultipleFiles));
        let patch = "diff --git a/x b/x\nindex 1..2\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n\
            diff --git a/y b/y\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(apply("a\n", patch), Err(PatchError::MultipleFiles));
        // One file with every kind of header is fine.
        let patch = "Index: x\n===\ndiff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(apply("a\n", patch).unwrap(), "b\n");
    }

    #[test]
    fn malformed_patches() {
        assert!(matches!(
            apply("a\n", "nothing here"),
            Err(PatchError::Malformed(_))
        ));
        assert!(matches!(
            apply("a\n", "@@ -1,2 +1,2 @@\n a\n"),
            Err(PatchError::Malformed(_))
        ));
        assert!(matches!(
            apply("a\n", "@@ -1,1 +1,1 @@\n a\n-b\n+c\n"),
            Err(PatchError::Malformed(_))
        ));
    }

    /// A hunk of 60 000 identical context lines that matches nowhere, against 100 000 lines
    /// (within the default 200 000-byte limits): 40 000 candidate positions, each once a
    /// 60 000-line comparison. Fails at once now; the old search took about a minute in a debug
    /// build.
    #[test]
    fn a_long_hunk_that_matches_nowhere_fails_quickly() {
        let file = "a\n".repeat(100_000);
        let patch = format!("@@ -1,60001 +1,60001 @@\n{} b\n", " a\n".repeat(60_000));
        assert_eq!(apply(&file, &patch), Err(PatchError::HunkFailed(1)));
        // And one that matches at the far end is found there.
        let file = format!("{}b\n", "a\n".repeat(100_000));
        let patch = "@@ -1,3 +1,3 @@\n a\n a\n-b\n+c\n";
        assert_eq!(
            apply(&file, patch).unwrap(),
            format!("{}c\n", "a\n".repeat(100_000))
        );
    }

    /// Line numbers past `isize::MAX` in headers are only wrong line numbers: the hunk is
    /// searched for from the nearest end, never an arithmetic overflow.
    #[test]
    fn huge_line_numbers_in_headers() {
        let patch = "@@ -9223372036854775809,1 +1,1 @@\n-a\n+b\n\
            @@ -18446744073709551615,1 +18446744073709551615,1 @@\n-c\n+d\n";
        assert_eq!(apply("a\nc\n", patch).unwrap(), "b\nd\n");
        let patch = "@@ -1,18446744073709551615 +1,1 @@\n-a\n";
        assert_eq!(
            apply("a\n", patch),
            Err(PatchError::Malformed(
                "hunk 1 is shorter than its header says".into()
            ))
        );
        let patch = "@@ -99999999999999999999999,1 +1,1 @@\n-a\n+b\n";
        assert_eq!(
            apply("a\n", patch),
            Err(PatchError::Malformed(
                "bad hunk header: @@ -99999999999999999999999,1 +1,1 @@".into()
            ))
        );
    }
}
