//! [`Cursor::raw_value`], added for the Responses fast path.

use super::Cursor;

#[test]
fn raw_value_is_the_text_of_one_value() {
    for (text, raw) in [
        (r#"{"a":1}"#, r#"{"a":1}"#),
        (" \n[1, {\"b\": \"c\\\"\"}] ", "[1, {\"b\": \"c\\\"\"}]"),
        ("\"x\"", "\"x\""),
        ("-1.5e3,", "-1.5e3"),
        ("null}", "null"),
        ("true", "true"),
    ] {
        let mut cursor = Cursor::new(text);
        assert_eq!(cursor.raw_value(), Some(raw), "{text}");
    }
}

#[test]
fn raw_value_continues_after_the_value() {
    let mut cursor = Cursor::new(r#"{"usage":{"input_tokens":3},"id":"r"}"#);
    let mut seen = Vec::new();
    cursor
        .object(|cursor, key| {
            seen.push((key.to_vec(), cursor.raw_value()?));
            Some(())
        })
        .unwrap();
    assert_eq!(cursor.end(), Some(()));
    assert_eq!(
        seen,
        [
            (b"usage".to_vec(), r#"{"input_tokens":3}"#),
            (b"id".to_vec(), r#""r""#)
        ]
    );
}

#[test]
fn raw_value_declines_what_skipping_declines() {
    let deep = format!("{}{}", "[".repeat(40), "]".repeat(40));
    for text in [
        "",
        " ",
        "{",
        r#"{"a":}"#,
        r#"[1,]"#,
        r#""\ud800""#,
        "01",
        "nul",
        deep.as_str(),
    ] {
        let mut cursor = Cursor::new(text);
        let raw = cursor.raw_value();
        assert!(
            raw.is_none() || cursor.end().is_none(),
            "{text:?} read as {raw:?}"
        );
    }
}
