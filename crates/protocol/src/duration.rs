//! Durations with units, as written in agent options: `500ms`, `30s`, `2m`, `1h`.

use std::time::Duration;

/// Units by size, largest first, so formatting picks the largest exact one.
const UNITS: [(&str, u64); 4] = [("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1)];

/// Parses `<integer><unit>` with unit `ms`, `s`, `m` or `h`. `None` if malformed, zero or overflowing.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let split = s.find(|c: char| !c.is_ascii_digit())?;
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let (_, ms_per_unit) = UNITS.iter().find(|(u, _)| *u == unit)?;
    let ms = n.checked_mul(*ms_per_unit)?;
    (ms > 0).then(|| Duration::from_millis(ms))
}

/// Formats with the largest unit that represents `d` exactly (milliseconds precision).
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis() as u64;
    let (unit, per) = UNITS
        .iter()
        .find(|(_, per)| ms % per == 0)
        .expect("ms divides everything");
    format!("{}{unit}", ms / per)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_formats_every_unit() {
        let cases = [
            ("250ms", 250),
            ("30s", 30_000),
            ("2m", 120_000),
            ("1h", 3_600_000),
        ];
        for (text, ms) in cases {
            assert_eq!(
                parse_duration(text),
                Some(Duration::from_millis(ms)),
                "{text}"
            );
            assert_eq!(format_duration(Duration::from_millis(ms)), text);
        }
        assert_eq!(format_duration(Duration::from_millis(90_000)), "90s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "",
            "30",
            "s",
            "30 s",
            "-1s",
            "0s",
            "1.5s",
            "3d",
            "30S",
            "99999999999999999999h",
        ] {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
    }
}
