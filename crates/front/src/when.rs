//! Times a person reads: the local date and time, and how far away it is ("in 4 min",
//! "3 min ago"). `--json` output keeps the Unix seconds of the wire; only text is turned into
//! this.

use proto::Timestamp;

/// The machine's time zone (`TZ`, else `/etc/localtime`; UTC when it has none), read once:
/// the confined front can open no file, so `boxmaker mcp` calls this before it confines
/// itself, and every later time is worded in the zone read then.
pub fn zone() -> &'static jiff::tz::TimeZone {
    static ZONE: std::sync::OnceLock<jiff::tz::TimeZone> = std::sync::OnceLock::new();
    ZONE.get_or_init(jiff::tz::TimeZone::system)
}

/// `2026-12-01 14:03:22 +01:00` in the machine's time zone ([`zone`]).
pub fn local(t: Timestamp) -> String {
    let Ok(secs) = i64::try_from(t.0) else {
        return format!("{} (Unix seconds)", t.0);
    };
    let Ok(ts) = jiff::Timestamp::from_second(secs) else {
        return format!("{secs} (Unix seconds)");
    };
    let zoned = ts.to_zoned_datetime(zone().clone());
    zoned.strftime("%Y-%m-%d %H:%M:%S %:z").to_string()
}

/// How far `t` is from `now`, in the largest whole unit: `in 4 min`, `3 min ago`, `now`.
pub fn relative(t: Timestamp, now: Timestamp) -> String {
    let (ahead, d) = if t.0 >= now.0 {
        (true, t.0 - now.0)
    } else {
        (false, now.0 - t.0)
    };
    let amount = match d {
        0 => return "now".into(),
        1..=89 => format!("{d} s"),
        90..=5399 => format!("{} min", (d + 30) / 60),
        5400..=129_599 => format!("{} h", (d + 1800) / 3600),
        _ => format!("{} d", (d + 43_200) / 86_400),
    };
    if ahead {
        format!("in {amount}")
    } else {
        format!("{amount} ago")
    }
}

/// Now, as the wire counts time.
pub fn now() -> Timestamp {
    Timestamp::from_system_time(std::time::SystemTime::now())
}

/// `14:03:22 … (in 4 min)`: a time and how far it is from now.
pub fn at(t: Timestamp) -> String {
    at_from(t, now())
}

/// [`at`], with how far it is from `now`.
pub fn at_from(t: Timestamp, now: Timestamp) -> String {
    format!("{} ({})", local(t), relative(t, now))
}

/// `expires 2026-12-01 14:08:22 +01:00 (in 5 min)`.
pub fn expires(t: Timestamp) -> String {
    format!("expires {}", at(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_times_read_as_a_person_says_them() {
        let now = Timestamp(1_000_000);
        assert_eq!(relative(Timestamp(1_000_000), now), "now");
        assert_eq!(relative(Timestamp(1_000_012), now), "in 12 s");
        assert_eq!(relative(Timestamp(1_000_240), now), "in 4 min");
        assert_eq!(relative(Timestamp(999_820), now), "3 min ago");
        assert_eq!(relative(Timestamp(1_000_000 + 7200), now), "in 2 h");
        assert_eq!(relative(Timestamp(1_000_000 - 3 * 86_400), now), "3 d ago");
    }

    #[test]
    fn a_local_time_has_a_date_a_time_and_an_offset() {
        let s = local(Timestamp(1_798_761_600));
        assert!(s.len() >= "2027-01-01 00:00:00 +00:00".len(), "{s}");
        assert!(
            s.starts_with("2026-12-31") || s.starts_with("2027-01-01"),
            "{s}"
        );
    }
}
