//! The cursor's reads added for the Anthropic fast path.

use super::*;

#[test]
fn tokens_match_exact_bytes_only() {
    let text = r#"{"type":"ping"}"#;
    let mut cursor = Cursor::new(text);
    assert!(cursor.tokens(br#"{"type":"#).is_some());
    // A failed match consumes nothing.
    assert!(cursor.tokens(br#""pong""#).is_none());
    assert!(cursor.tokens(br#""ping"}"#).is_some());
    assert!(cursor.end().is_some());

    // No whitespace is skipped, before or inside the tokens.
    assert!(Cursor::new(r#" {"a":1}"#).tokens(b"{").is_none());
    assert!(Cursor::new(r#"{ "a":1}"#).tokens(br#"{"a""#).is_none());
    // Text shorter than the tokens.
    assert!(Cursor::new(r#"{"a""#).tokens(br#"{"a":"#).is_none());
    assert!(Cursor::new("").tokens(b"{").is_none());
    assert!(Cursor::new("").tokens(b"").is_some());
}

#[test]
fn tokens_compose_with_the_other_reads() {
    let text = r#"{"index":12,"text":"a\nb"} "#;
    let mut cursor = Cursor::new(text);
    cursor.tokens(br#"{"index":"#).unwrap();
    assert_eq!(cursor.u64(), Some(12));
    cursor.tokens(br#","text":"#).unwrap();
    assert_eq!(cursor.string().as_deref(), Some("a\nb"));
    cursor.tokens(b"}").unwrap();
    assert!(cursor.end().is_some());
}

fn small_u64_of(text: &str) -> Option<u64> {
    let mut cursor = Cursor::new(text);
    let value = cursor.small_u64()?;
    cursor.end()?;
    Some(value)
}

#[test]
fn small_integers() {
    assert_eq!(small_u64_of("0"), Some(0));
    assert_eq!(small_u64_of("7"), Some(7));
    assert_eq!(small_u64_of("10"), Some(10));
    assert_eq!(small_u64_of("99"), Some(99));
    // Declined: what `u64` reads (three digits, whitespace first), and what it declines.
    for text in [
        "100", " 1", "", "00", "01", "-1", "-0", "1.0", "1.", "1e2", "1E2", "12e1", "x", "\"1\"",
    ] {
        assert!(small_u64_of(text).is_none(), "{text:?}");
    }
    // A declined read consumes nothing, so `u64` can read the same text after it.
    let mut cursor = Cursor::new("123,");
    assert!(cursor.small_u64().is_none());
    assert_eq!(cursor.u64(), Some(123));
    assert!(cursor.tokens(b",").is_some());
    // The text after the digits is the caller's.
    let mut cursor = Cursor::new("12,");
    assert_eq!(cursor.small_u64(), Some(12));
    assert!(cursor.tokens(b",").is_some());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]

    /// A small integer the cursor reads is the `u64` serde reads, and the one `u64` reads.
    #[test]
    fn small_integers_read_as_serde_reads_them(
        text in "-?[0-9]{0,4}(\\.[0-9]?)?([eE][-+]?[0-9]?)?[ ,}]?"
    ) {
        if let Some(value) = Cursor::new(&text).small_u64() {
            let number = text.trim_end_matches([' ', ',', '}']);
            proptest::prop_assert_eq!(Some(value), serde_json::from_str::<u64>(number).ok());
            proptest::prop_assert_eq!(Some(value), Cursor::new(&text).u64());
        }
    }
}
