//! The cursor against serde_json: what it accepts, serde accepts, and reads the same way.

use std::borrow::Cow;

use proptest::prelude::*;
use serde::de::IgnoredAny;

use super::*;

/// Skips one whole text as a value, as an unknown field's value is skipped.
fn skips(text: &str) -> bool {
    let mut cursor = Cursor::new(text);
    cursor.skip_value().and_then(|()| cursor.end()).is_some()
}

fn string(text: &str) -> Option<Cow<'_, str>> {
    let mut cursor = Cursor::new(text);
    let value = cursor.string()?;
    cursor.end()?;
    Some(value)
}

fn u64_of(text: &str) -> Option<u64> {
    let mut cursor = Cursor::new(text);
    let value = cursor.u64()?;
    cursor.end()?;
    Some(value)
}

#[test]
fn walks_an_object_by_keys() {
    let text = r#" { "a" : 1 , "b":"x","c" :null,"d":[1,{"e":[]}],"f":true } "#;
    let mut cursor = Cursor::new(text);
    let mut keys = Vec::new();
    let mut b = None;
    cursor
        .object(|cursor, key| {
            keys.push(String::from_utf8(key.to_vec()).unwrap());
            match key {
                b"a" => cursor.u64().map(|n| assert_eq!(n, 1)),
                b"b" => cursor.string().map(|s| b = Some(s)),
                b"c" => cursor.null(),
                b"f" => cursor.bool().map(|v| assert!(v)),
                _ => cursor.skip_value(),
            }
        })
        .unwrap();
    cursor.end().unwrap();
    assert_eq!(keys, ["a", "b", "c", "d", "f"]);
    assert!(matches!(b, Some(Cow::Borrowed("x"))));
}

#[test]
fn arrays_and_empty_containers() {
    let mut cursor = Cursor::new("[ 1, 2 ,3 ]");
    let mut seen = Vec::new();
    cursor
        .array(|cursor| cursor.u64().map(|n| seen.push(n)))
        .unwrap();
    assert_eq!(seen, [1, 2, 3]);
    assert!(Cursor::new("{}").object(|_, _| None).is_some());
    assert!(Cursor::new("[ ]").array(|_| None).is_some());
    // A member the caller declines stops the walk.
    assert!(Cursor::new(r#"{"a":1}"#).object(|_, _| None).is_none());
}

#[test]
fn nullable_reads_null_as_none() {
    let mut cursor = Cursor::new("[null, \"x\"]");
    let mut seen = Vec::new();
    cursor
        .array(|cursor| cursor.nullable(Cursor::string).map(|s| seen.push(s)))
        .unwrap();
    assert_eq!(seen, [None, Some(Cow::Borrowed("x"))]);
    assert!(Cursor::new("nul").nullable(Cursor::string).is_none());
}

#[test]
fn declines_malformed_containers() {
    for text in [
        "{",
        "[",
        "{,}",
        "[,]",
        "[1,]",
        r#"{"a":1,}"#,
        r#"{"a" 1}"#,
        r#"{a:1}"#,
        "{1:2}",
        r#"{"a":1 "b":2}"#,
        "[1 2]",
        r#"{"a":}"#,
        "]",
        "}",
        "",
        " ",
        "nulll",
        "tru",
        "[01]",
    ] {
        assert!(!skips(text), "{text:?}");
        assert!(
            serde_json::from_str::<IgnoredAny>(text).is_err(),
            "{text:?}"
        );
    }
}

#[test]
fn declines_trailing_text() {
    assert!(!skips("{} {}"));
    assert!(!skips("1 2"));
    assert!(skips(" {} \n\t\r"));
    // Only JSON's four whitespace bytes are whitespace.
    assert!(!skips("{}\u{a0}"));
    assert!(!skips("\u{c}{}"));
}

#[test]
fn strings_borrow_unless_escaped() {
    assert!(matches!(string(r#""abc""#), Some(Cow::Borrowed("abc"))));
    assert!(matches!(string(r#""""#), Some(Cow::Borrowed(""))));
    assert!(matches!(
        string(r#""日本 é 😀""#),
        Some(Cow::Borrowed("日本 é 😀"))
    ));
    let escaped = string(r#""a\"b\\c\/d\b\f\n\r\te""#).unwrap();
    assert!(matches!(escaped, Cow::Owned(_)));
    assert_eq!(escaped, "a\"b\\c/d\u{8}\u{c}\n\r\te");
    assert_eq!(string(r#""\u00e9\u0000\uFFFF""#).unwrap(), "é\0\u{ffff}");
    assert_eq!(string(r#""x\ud83d\ude00y""#).unwrap(), "x😀y");
    assert_eq!(string(r#""\uD83D\uDE00""#).unwrap(), "😀");
}

#[test]
fn strings_decline_what_serde_rejects_or_might() {
    for text in [
        "\"abc",        // unterminated
        "\"a\\\"",      // unterminated after an escape
        "\"a\nb\"",     // raw control character
        "\"a\u{1f}b\"", // raw control character
        r#""\x""#,      // unknown escape
        r#""\u12""#,    // short \u
        r#""\u12g4""#,  // not hex
        r#""\ud83d""#,  // lone leading surrogate
        r#""\ud83dx""#,
        r#""\ud83d\n""#,
        r#""\ud83d\u0041""#,
        r#""\ude00""#, // lone trailing surrogate
        "'a'",
    ] {
        assert!(string(text).is_none(), "{text:?}");
        assert!(serde_json::from_str::<String>(text).is_err(), "{text:?}");
    }
    // Skipped strings are checked the same way (serde skips some of these, which is fine:
    // declining only costs the fallback).
    assert!(!skips("\"a\nb\""));
    assert!(!skips(r#""\x""#));
    assert!(skips(r#""a\"b\u00e9""#));
}

#[test]
fn keys_with_escapes_decline() {
    let mut cursor = Cursor::new(r#"{"\u0069d":1}"#);
    assert!(cursor.object(|c, _| c.skip_value()).is_none());
}

#[test]
fn integers() {
    assert_eq!(u64_of("0"), Some(0));
    assert_eq!(u64_of(" 42 "), Some(42));
    assert_eq!(u64_of("18446744073709551615"), Some(u64::MAX));
    for text in [
        "18446744073709551616",
        "-0",
        "-1",
        "01",
        "1.0",
        "1e2",
        "1E2",
        "",
        "x",
        "\"1\"",
    ] {
        assert!(u64_of(text).is_none(), "{text:?}");
        assert!(serde_json::from_str::<u64>(text).is_err(), "{text:?}");
    }
}

#[test]
fn numbers_skip_in_json_grammar() {
    for text in [
        "0",
        "-0",
        "12",
        "-12",
        "1.5",
        "-0.0e+0",
        "1E5",
        "1e-5",
        "1e999",
        "0.000001",
        "123456789012345678901234567890",
    ] {
        assert!(skips(text), "{text:?}");
        assert!(serde_json::from_str::<IgnoredAny>(text).is_ok(), "{text:?}");
    }
    for text in [
        "-", "+1", ".5", "1.", "1.e5", "1e", "1e+", "00", "-01", "0x10", "1_000", "NaN",
        "Infinity", "--1",
    ] {
        assert!(!skips(text), "{text:?}");
        assert!(
            serde_json::from_str::<IgnoredAny>(text).is_err(),
            "{text:?}"
        );
    }
}

#[test]
fn nesting_is_bounded() {
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert!(skips(&deep(MAX_SKIP_DEPTH)));
    assert!(!skips(&deep(MAX_SKIP_DEPTH + 1)));
}

#[test]
fn seen_catches_repeats() {
    let mut seen = Seen::default();
    assert!(seen.first(0).is_some());
    assert!(seen.first(7).is_some());
    assert!(seen.first(0).is_none());
    assert!(seen.first(7).is_none());
}

/// Pieces of JSON-like text, mostly valid, some not: concatenated at random they make texts
/// near the boundary of what serde accepts.
fn piece() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        " ",
        "\n",
        "\"a\"",
        "\"k\":",
        "\"\\u00e9\"",
        "\"\\ud83d\"",
        "\"\\ude00\\ud83d\"",
        "\"\\ud83d\\ude00\"",
        "\"\\n\"",
        "\"\\x\"",
        "\"é\"",
        "\"",
        "\\",
        "null",
        "nul",
        "true",
        "false",
        "0",
        "-",
        "1",
        "01",
        "1.5",
        "1e3",
        "1.",
        "e",
        "-0",
        "18446744073709551616",
        "\t",
        "\u{1}",
        "x",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// The word-at-a-time scan stops where a byte-at-a-time one does, from any offset.
    #[test]
    fn plain_end_finds_the_first_special_byte(
        text in "[a-z\"\\\\\u{0}-\u{1f}\u{7f}é😀]{0,40}",
        from in 0usize..40,
    ) {
        let bytes = text.as_bytes();
        let from = from.min(bytes.len());
        let naive = bytes[from..]
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
            .map_or(bytes.len(), |i| from + i);
        prop_assert_eq!(plain_end(bytes, from), naive);
    }

    /// What the cursor skips, serde skips.
    #[test]
    fn skip_accepts_only_what_serde_accepts(pieces in prop::collection::vec(piece(), 1..24)) {
        let text = pieces.concat();
        if skips(&text) {
            prop_assert!(
                serde_json::from_str::<IgnoredAny>(&text).is_ok(),
                "the cursor skipped what serde rejects: {text}"
            );
        }
    }

    /// A string the cursor reads is the string serde reads.
    #[test]
    fn strings_read_as_serde_reads_them(
        body in prop::collection::vec(
            prop_oneof![
                "[a-z é日😀]{0,4}",
                prop::sample::select(vec![
                    "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u00e9",
                    "\\u0000", "\\uD83D\\uDE00", "\\ud83d", "\\ude00", "\\u12", "\\q", "\"",
                    "\u{1f}", "\\",
                ]).prop_map(str::to_owned),
            ],
            0..8,
        )
    ) {
        let text = format!("\"{}\"", body.concat());
        if let Some(read) = string(&text) {
            let serde: String = serde_json::from_str(&text)
                .map_err(|e| TestCaseError::fail(format!("{e}: serde rejects {text}")))?;
            prop_assert_eq!(read, serde);
        }
    }

    /// An integer the cursor reads is the `u64` serde reads.
    #[test]
    fn integers_read_as_serde_reads_them(text in "-?[0-9]{0,22}(\\.[0-9]?)?([eE][-+]?[0-9]?)?") {
        if let Some(value) = u64_of(&text) {
            prop_assert_eq!(Some(value), serde_json::from_str::<u64>(&text).ok());
        }
    }
}
