//! Bounded retries: exponential backoff with jitter, honouring `retry-after` (internal: the crate
//! exports only [`RetryPolicy`]; `http` applies it).

use std::time::{Duration, SystemTime};

use toolsmith_core::ModelError;

/// How a provider call is retried before its stream starts.
///
/// Rate limits (429), server errors (5xx, 529), timeouts and network failures are retried up to
/// `max_retries` times. The wait is the provider's `retry-after` when it sent one, else
/// `initial_delay × 2^attempt` with jitter (between half and all of it). A requested wait longer
/// than `max_delay` is not waited for: the error is returned with its `retry_after` set. Once a
/// response's stream has started nothing is retried.
///
/// ```
/// use std::time::Duration;
/// use toolsmith_providers::RetryPolicy;
///
/// let policy = RetryPolicy::default();
/// assert_eq!(policy.max_retries, 2);
/// assert_eq!(policy.max_delay, Duration::from_secs(30));
/// assert!(policy.backoff(1) <= Duration::from_secs(1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The backoff before the first retry, doubled for each later one.
    pub initial_delay: Duration,
    /// The longest wait, requested or computed.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 2,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The jittered backoff before retry number `attempt` (0-based), capped at `max_delay`.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.min(16));
        let full = self
            .initial_delay
            .saturating_mul(factor)
            .min(self.max_delay);
        // Equal jitter: half fixed, half random, so concurrent clients spread out.
        let half = full / 2;
        half + half.mul_f64(fastrand::f64())
    }

    /// How long to wait before retry number `attempt` after `error`, or `None` when the error
    /// must be returned: not retryable, retries exhausted, or a requested wait over `max_delay`.
    pub fn delay_for(&self, attempt: u32, error: &ModelError) -> Option<Duration> {
        if attempt >= self.max_retries || !error.is_retryable() {
            return None;
        }
        match error.retry_after {
            Some(requested) if requested > self.max_delay => None,
            Some(requested) => Some(requested),
            None => Some(self.backoff(attempt)),
        }
    }
}

/// Parses a `retry-after` header: delay seconds (`"2"`, `"1.5"`) or an HTTP date (a past date
/// is no wait); anything else is `None`.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        // Not `from_secs_f64`, which panics past `Duration::MAX` (`retry-after: 1e20` did).
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// The delay a response asks for: `retry-after-ms` (OpenAI) or `retry-after`.
pub fn retry_after_header(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    if let Some(delay) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .and_then(|ms| Duration::try_from_secs_f64(ms / 1000.0).ok())
    {
        return Some(delay);
    }
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolsmith_core::ModelErrorKind;

    #[test]
    fn delays_are_bounded_and_honour_the_provider() {
        let policy = RetryPolicy::default();
        let limited = ModelError::new(ModelErrorKind::RateLimited, "slow down")
            .with_retry_after(Duration::from_secs(3));
        assert_eq!(policy.delay_for(0, &limited), Some(Duration::from_secs(3)));
        assert_eq!(policy.delay_for(2, &limited), None);
        let too_long = limited.clone().with_retry_after(Duration::from_secs(60));
        assert_eq!(policy.delay_for(0, &too_long), None);
        let auth = ModelError::new(ModelErrorKind::Auth, "no");
        assert_eq!(policy.delay_for(0, &auth), None);
        let server = ModelError::new(ModelErrorKind::Server, "oops");
        let d = policy.delay_for(1, &server).unwrap();
        assert!(
            d >= Duration::from_millis(500) && d <= Duration::from_secs(1),
            "{d:?}"
        );
        for attempt in 0..40 {
            assert!(policy.backoff(attempt) <= policy.max_delay);
        }
    }

    #[test]
    fn retry_after_is_seconds_a_date_or_nothing() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon"), None);
    }

    #[test]
    fn retry_after_accepts_seconds_and_dates() {
        assert_eq!(
            parse_retry_after(" 1.5 "),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(parse_retry_after("-1"), None);
        let future = SystemTime::now() + Duration::from_secs(120);
        let d = parse_retry_after(&httpdate::fmt_http_date(future)).unwrap();
        assert!(d > Duration::from_secs(100) && d <= Duration::from_secs(120));
    }
}
