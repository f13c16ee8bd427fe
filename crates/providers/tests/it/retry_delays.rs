//! Retry delays a provider asks for that no `Duration` holds: `retryDelay: "1e20s"` in a
//! Google `RetryInfo` (an error body or an in-stream error), `retry-after: 1e20`,
//! `retry-after-ms: 1e30`. Each was read with `Duration::from_secs_f64`, which panics past
//! `Duration::MAX`: one answer from a server (or a proxy) took the run down. They read as no
//! delay now, and the error is handled as one without a `retry-after`.

use std::time::Duration;

use crate::common::*;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};
use toolsmith_core::{LanguageModel, ModelErrorKind};
use toolsmith_providers::errors::{retry_info_delay, status_error};
use toolsmith_providers::google::{GeminiStreamDecoder, GoogleGemini};
use toolsmith_providers::retry_after_header;

fn retry_info(delay: Value) -> Value {
    json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "Slow down.",
        "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]}})
}

#[test]
fn a_retry_info_delay_past_the_longest_duration_is_none() {
    for delay in [
        json!("1e20s"),
        json!("18446744073709551616s"),
        json!({"seconds": "1e300"}),
        json!({"seconds": 1e20, "nanos": 5}),
    ] {
        let body = retry_info(delay.clone());
        assert_eq!(retry_info_delay(&body), None, "{delay}");
        let error = status_error("google", 429, &body.to_string(), None, None);
        assert_eq!(error.kind, ModelErrorKind::RateLimited);
        assert_eq!(error.retry_after, None, "{delay}");
    }
    // The longest one a duration holds is still read.
    let longest = retry_info(json!("18446744073709549568s"));
    assert!(retry_info_delay(&longest).is_some_and(|d| d > Duration::from_secs(1 << 63)));
}

#[test]
fn retry_after_headers_past_the_longest_duration_are_none() {
    let headers = |pairs: &[(&'static str, &str)]| {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    };
    assert_eq!(
        retry_after_header(&headers(&[("retry-after", "1e20")])),
        None
    );
    // An unreadable `retry-after-ms` leaves the decision to `retry-after`.
    assert_eq!(
        retry_after_header(&headers(&[
            ("retry-after-ms", "1e30"),
            ("retry-after", "2")
        ])),
        Some(Duration::from_secs(2))
    );
    assert_eq!(
        retry_after_header(&headers(&[("retry-after-ms", "1500")])),
        Some(Duration::from_millis(1500))
    );
}

#[test]
fn an_in_stream_error_with_a_huge_retry_delay_ends_the_stream_cleanly() {
    let s = decode_with(
        GeminiStreamDecoder::new(),
        &[retry_info(json!("1e20s")).to_string()],
    );
    let error = s.error.expect("the provider's error");
    assert_eq!(error.kind, ModelErrorKind::RateLimited);
    assert_eq!(error.retry_after, None);
}

#[tokio::test]
async fn a_429_asking_for_forever_is_retried_with_backoff_then_reported() {
    let reply = || {
        Reply::json(429, retry_info(json!("1e20s")))
            .header("retry-after", "1e20")
            .header("retry-after-ms", "1e30")
    };
    let server = Server::start(vec![reply(), reply(), reply()]).await;
    let model = with_retry(
        GoogleGemini::new("gemini-test", Some("AIza-test-key"), Some(&server.base_url)).unwrap(),
        fast_retries(),
    );
    let error = model.stream(&request()).await.err().expect("an error");
    assert_eq!(error.kind, ModelErrorKind::RateLimited);
    assert_eq!(error.retry_after, None);
    assert_eq!(error.message, "google returned HTTP 429: Slow down.");
    assert_eq!(server.requests().len(), 3);
}
