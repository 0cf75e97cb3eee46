//! The receive time stamped on every event, read cheaply.
//!
//! `Utc::now()` turns the system time into a calendar date on every call,
//! which costs more than reading the clock itself; a run stamps hundreds of
//! thousands of events, nearly all on the same day. [`WallClock`] keeps the
//! date of the last reading and only works it out again when the day
//! changes. The result is exactly `Utc::now()`'s.

use std::time::{SystemTime, UNIX_EPOCH};

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};

const SECS_PER_DAY: u64 = 86_400;

/// Days from 0001-01-01 (day 1 of the common era) to 1970-01-01.
const UNIX_EPOCH_DAY_FROM_CE: i64 = 719_163;

/// A wall clock that remembers the current date (one per publisher).
#[derive(Debug, Default)]
pub(crate) struct WallClock {
    /// Days since the Unix epoch, and that day's date.
    day: Option<(u64, NaiveDate)>,
}

impl WallClock {
    /// Now, in UTC.
    pub(crate) fn now(&mut self) -> DateTime<Utc> {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(since) => self.at(since.as_secs(), since.subsec_nanos()),
            // A clock set before 1970: rare enough to take chrono's path.
            Err(_) => Utc::now(),
        }
    }

    /// The instant `secs` seconds and `nanos` nanoseconds after the epoch.
    fn at(&mut self, secs: u64, nanos: u32) -> DateTime<Utc> {
        let days = secs / SECS_PER_DAY;
        let date = match self.day {
            Some((d, date)) if d == days => Some(date),
            _ => i64::try_from(days)
                .ok()
                .and_then(|d| i32::try_from(d + UNIX_EPOCH_DAY_FROM_CE).ok())
                .and_then(NaiveDate::from_num_days_from_ce_opt)
                .inspect(|date| self.day = Some((days, *date))),
        };
        let time = u32::try_from(secs % SECS_PER_DAY)
            .ok()
            .and_then(|s| NaiveTime::from_num_seconds_from_midnight_opt(s, nanos));
        match (date, time) {
            (Some(date), Some(time)) => NaiveDateTime::new(date, time).and_utc(),
            // Out of chrono's range: let chrono decide what now is.
            _ => Utc::now(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests fail loudly by design
mod tests {
    use super::*;

    fn chrono_at(secs: u64, nanos: u32) -> DateTime<Utc> {
        DateTime::from_timestamp(secs as i64, nanos).unwrap()
    }

    #[test]
    fn matches_chrono_across_days_leap_years_and_the_cache() {
        let mut clock = WallClock::default();
        // Around midnights (cache hits and misses), a leap day, the epoch,
        // a century that is not a leap year, and far ahead.
        let instants = [
            0,
            1,
            86_399,
            86_400,
            951_782_399,   // 2000-02-28T23:59:59
            951_868_800,   // 2000-03-01
            1_709_164_800, // 2024-02-29
            1_709_251_199,
            1_709_251_200,
            4_107_542_400, // 2100-03-01
            1_796_083_199,
            1_796_083_200,
            1_796_083_200 + 3_600,
            253_402_300_799, // 9999-12-31T23:59:59
        ];
        for (i, secs) in instants.into_iter().enumerate() {
            let nanos = (i as u32) * 123_456_789 % 1_000_000_000;
            assert_eq!(clock.at(secs, nanos), chrono_at(secs, nanos), "{secs}");
        }
        // Going back a day is a miss like any other.
        assert_eq!(clock.at(86_399, 5), chrono_at(86_399, 5));
    }

    #[test]
    fn now_is_between_two_chrono_readings() {
        let mut clock = WallClock::default();
        let before = Utc::now();
        let now = clock.now();
        let again = clock.now();
        let after = Utc::now();
        assert!(before <= now && now <= again && again <= after);
    }

    #[test]
    fn an_instant_out_of_chronos_range_falls_back_to_now() {
        let mut clock = WallClock::default();
        let before = Utc::now();
        let got = clock.at(u64::MAX, 0);
        assert!(got >= before, "falls back to the current time");
    }
}
