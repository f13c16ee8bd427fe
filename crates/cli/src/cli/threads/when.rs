//! Stored times (milliseconds since the Unix epoch) as a person reads them.
//!
//! The rules, measured from `now`:
//! - under a minute ago (or up to a minute ahead: clocks of two hosts disagree a little):
//!   `just now`;
//! - under an hour: `N min ago`;
//! - under a day: `N h ago`;
//! - on the previous calendar day (local time): `yesterday HH:MM`;
//! - otherwise (older, or more than a minute ahead): the local date and time,
//!   `YYYY-MM-DD HH:MM`.
//!
//! Local time is the process's time zone (`TZ`, else the system's).

use chrono::{DateTime, Local, TimeZone};

const MINUTE: u64 = 60_000;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;

/// `at` as a person reads it, seen from `now` (both milliseconds since the epoch).
pub(super) fn ago(at: u64, now: u64) -> String {
    ago_in(&Local, at, now)
}

/// [`ago`] in the time zone `zone`.
fn ago_in<Z: TimeZone>(zone: &Z, at: u64, now: u64) -> String
where
    Z::Offset: std::fmt::Display,
{
    if at > now {
        return if at - now < MINUTE {
            "just now".to_owned()
        } else {
            date_in(zone, at)
        };
    }
    let since = now - at;
    if since < MINUTE {
        return "just now".to_owned();
    }
    if since < HOUR {
        return format!("{} min ago", since / MINUTE);
    }
    if since < DAY {
        return format!("{} h ago", since / HOUR);
    }
    match (local(zone, at), local(zone, now)) {
        (Some(then), Some(today)) if today.date_naive().pred_opt() == Some(then.date_naive()) => {
            format!("yesterday {}", then.format("%H:%M"))
        }
        _ => date_in(zone, at),
    }
}

/// `at` as a date and time in `zone`, `YYYY-MM-DD HH:MM`.
fn date_in<Z: TimeZone>(zone: &Z, at: u64) -> String
where
    Z::Offset: std::fmt::Display,
{
    match local(zone, at) {
        Some(time) => time.format("%Y-%m-%d %H:%M").to_string(),
        // Beyond what a date can hold: the stored number, rather than nothing.
        None => format!("{at} ms"),
    }
}

fn local<Z: TimeZone>(zone: &Z, at: u64) -> Option<DateTime<Z>> {
    let utc = DateTime::from_timestamp_millis(i64::try_from(at).ok()?)?;
    Some(utc.with_timezone(zone))
}

#[cfg(test)]
mod tests {
    use chrono::{FixedOffset, Utc};

    use super::*;

    /// 2026-11-20 14:03:00 UTC.
    const AT: u64 = 1_795_183_380_000;

    #[test]
    fn recent_times_are_relative() {
        assert_eq!(ago_in(&Utc, AT, AT), "just now");
        assert_eq!(ago_in(&Utc, AT, AT + 59_999), "just now");
        assert_eq!(ago_in(&Utc, AT + 30_000, AT), "just now", "a little ahead");
        assert_eq!(ago_in(&Utc, AT, AT + MINUTE), "1 min ago");
        assert_eq!(ago_in(&Utc, AT, AT + 3 * MINUTE + 59_000), "3 min ago");
        assert_eq!(ago_in(&Utc, AT, AT + HOUR), "1 h ago");
        assert_eq!(ago_in(&Utc, AT, AT + DAY - 1), "23 h ago");
    }

    #[test]
    fn older_times_are_yesterday_or_a_date() {
        // 2026-11-21 20:00 UTC: more than a day later, the next calendar day.
        let next_evening = AT + DAY + 6 * HOUR - 3 * MINUTE;
        assert_eq!(ago_in(&Utc, AT, next_evening), "yesterday 14:03");
        assert_eq!(ago_in(&Utc, AT, AT + 2 * DAY), "2026-11-20 14:03");
        assert_eq!(ago_in(&Utc, AT + 2 * MINUTE, AT), "2026-11-20 14:05");
    }

    #[test]
    fn dates_are_in_the_local_zone() {
        let paris = FixedOffset::east_opt(3600).unwrap();
        assert_eq!(date_in(&paris, AT), "2026-11-20 15:03");
        // 2026-11-20 23:30 UTC is the 21st in Paris: a day and a half-hour later it is
        // yesterday there, two days ago in UTC.
        let late = AT + 9 * HOUR + 27 * MINUTE;
        let now = late + DAY + 30 * MINUTE;
        assert_eq!(ago_in(&paris, late, now), "yesterday 00:30");
        assert_eq!(ago_in(&Utc, late, now), "2026-11-20 23:30");
        assert_eq!(date_in(&Utc, u64::MAX), format!("{} ms", u64::MAX));
    }
}
