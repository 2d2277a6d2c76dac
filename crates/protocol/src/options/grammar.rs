//! The option string both ways: `key=value` items read into [`AgentOptions`], and its canonical
//! form written back.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use super::{
    AgentOptions, Blocks, OptionsError, Reveal, Scheme, Timing, KEYS, MAX_REGION_LAST,
    MAX_SAMPLE_INTERVAL, MAX_STACK_DEPTH, MIN_SAMPLE_INTERVAL,
};
use crate::duration::{format_duration, parse_duration};
use crate::push::{self, MIN_EVERY};

pub(super) const PATH_REASON: &str = "expected a non-empty path without commas";
pub(super) const DURATION_REASON: &str =
    "expected a positive whole number with unit ms, s, m or h (e.g. 30s)";
pub(super) const SCHEME_REASON: &str = "expected one of lazy, eager, total";
pub(super) const REGION_LAST_REASON: &str = "expected a whole number from 0 to 100000";
pub(super) const BOOL_REASON: &str = "expected true or false";
pub(super) const REVEAL_REASON: &str = "expected sync or async";
pub(super) const BLOCKS_REASON: &str = "expected default or precise";
pub(super) const TIMING_REASON: &str = "expected probes or sampled";
pub(super) const RECORD_REASON: &str = "expected all, auto or a share from 1% to 100%";
pub(super) const TRACK_EVERY_REASON: &str = "expected a whole number (0: count only)";
pub(super) const TRACK_BYTES_REASON: &str =
    "expected a size from 1 byte to 1g: a whole number of bytes, or with unit k, m or g (e.g. 512k)";
pub(super) const STACK_DEPTH_REASON: &str = "expected a whole number from 1 to 1024";
pub(super) const EVERY_REASON: &str =
    "expected a whole number with unit ms, s, m or h, at least 1s";
pub(super) const INTERVAL_REASON: &str =
    "expected a whole number of ms, s or m from 1ms to 1m (e.g. 10ms)";
pub(super) const MODE_REASON: &str = "expected one of cpu, region, alloc, count, native, sample";

/// The largest `track-bytes`: 1 GiB.
const MAX_TRACK_BYTES: u64 = 1 << 30;

/// A size: a positive whole number of bytes, or of KiB, MiB or GiB with unit `k`, `m` or `g`,
/// at most 1 GiB.
pub(super) fn parse_size(value: &str) -> Option<u64> {
    let (digits, unit) = match value.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => value.split_at(i),
        None => (value, ""),
    };
    let shift = match unit {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        _ => return None,
    };
    // Written back as given: no leading zeros.
    if digits.is_empty() || digits.starts_with('0') {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    n.checked_mul(1 << shift)
        .filter(|&b| (1..=MAX_TRACK_BYTES).contains(&b))
}

/// A size as [`parse_size`] reads it, in the largest unit that divides it.
pub(super) fn format_size(bytes: u64) -> String {
    [(30, "g"), (20, "m"), (10, "k")]
        .into_iter()
        .find(|&(shift, _)| bytes >= 1 << shift && bytes % (1 << shift) == 0)
        .map_or_else(
            || bytes.to_string(),
            |(shift, unit)| format!("{}{unit}", bytes >> shift),
        )
}

fn parse_bool(value: &str) -> Option<bool> {
    match value {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// ` (did you mean `scheme`?)` for a key within two edits of an accepted one.
pub(super) fn suggestion(key: &str) -> String {
    KEYS.iter()
        .map(|k| (edit_distance(key, k), k))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, k)| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

impl FromStr for AgentOptions {
    type Err = OptionsError;

    fn from_str(s: &str) -> Result<Self, OptionsError> {
        let mut parser = Parser::default();
        // The JVM passes NULL or "" for no options; stray empty items (`a=1,,b=2`) are tolerated.
        for item in s.split(',').filter(|i| !i.is_empty()) {
            let (key, value) = item.split_once('=').unwrap_or((item, ""));
            parser.set(key, value)?;
        }
        parser.opts.check_modes()?;
        Ok(parser.opts)
    }
}

impl AgentOptions {
    /// The options of `(key, value)` pairs, each as `key=value` in an option string, with no
    /// comma to split on (a path may hold one: [`AgentOptions::validate`] says so). Not
    /// validated: what the CLI fills from its flags, one pair per flag given.
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<AgentOptions, OptionsError> {
        let mut parser = Parser::default();
        for (key, value) in pairs {
            parser.set(key, value)?;
        }
        Ok(parser.opts)
    }
}

/// The options read so far, and which of the keys with a default value were given.
#[derive(Default)]
struct Parser {
    opts: AgentOptions,
    seen_scheme: bool,
    seen_cpu: bool,
    seen_skip_trivial: bool,
    seen_adaptive: bool,
    seen_reveal: bool,
    seen_blocks: bool,
    seen_timing: bool,
    seen_wall: bool,
    seen_instrument_inlined: bool,
    seen_threads: bool,
}

/// One `key=value` item, its key one of [`KEYS`], its value not empty.
#[derive(Clone, Copy)]
struct Item<'a> {
    key: &'static str,
    value: &'a str,
}

impl Item<'_> {
    fn bad(self, reason: impl Into<String>) -> OptionsError {
        OptionsError::BadValue {
            key: self.key,
            value: self.value.to_owned(),
            reason: reason.into(),
        }
    }

    /// The value as a pattern of the subgraph grammar. Edge spaces are refused: the pattern
    /// parser trims them, and the value would not round-trip.
    fn pattern<P: FromStr<Err = ferrofluid_subgraph::PatternError>>(
        self,
    ) -> Result<P, OptionsError> {
        if self.value.trim() != self.value {
            return Err(self.bad("leading or trailing space"));
        }
        self.value
            .parse()
            .map_err(|e: ferrofluid_subgraph::PatternError| self.bad(e.kind.to_string()))
    }

    /// The value as a whole number in its canonical spelling that `ok` accepts.
    fn whole<T: FromStr + ToString>(
        self,
        ok: impl Fn(&T) -> bool,
        reason: &str,
    ) -> Result<T, OptionsError> {
        self.value
            .parse::<T>()
            .ok()
            .filter(|n| ok(n) && n.to_string() == self.value)
            .ok_or_else(|| self.bad(reason))
    }

    fn flag(self) -> Result<bool, OptionsError> {
        parse_bool(self.value).ok_or_else(|| self.bad(BOOL_REASON))
    }

    fn path(self) -> Result<PathBuf, OptionsError> {
        if self.value.trim() != self.value {
            return Err(self.bad(PATH_REASON));
        }
        Ok(PathBuf::from(self.value))
    }
}

/// Sets `slot` to what `read` gives; a second value of `key` is refused before it is read.
fn first<T>(
    slot: &mut Option<T>,
    key: &'static str,
    read: impl FnOnce() -> Result<T, OptionsError>,
) -> Result<(), OptionsError> {
    if slot.is_some() {
        return Err(OptionsError::Duplicate { key });
    }
    *slot = Some(read()?);
    Ok(())
}

/// Refuses a second value of a key whose field has a default (`seen`: it was given already).
fn once(seen: &mut bool, key: &'static str) -> Result<(), OptionsError> {
    if std::mem::replace(seen, true) {
        return Err(OptionsError::Duplicate { key });
    }
    Ok(())
}

impl Parser {
    /// Reads the item `key=value`.
    fn set(&mut self, key: &str, value: &str) -> Result<(), OptionsError> {
        let key: &'static str =
            KEYS.iter()
                .find(|k| **k == key)
                .copied()
                .ok_or_else(|| OptionsError::UnknownKey {
                    key: key.to_owned(),
                })?;
        if value.is_empty() {
            return Err(OptionsError::MissingValue {
                key: key.to_owned(),
            });
        }
        let item = Item { key, value };
        let o = &mut self.opts;
        match key {
            "mode" => first(&mut o.mode, key, || {
                value.parse().map_err(|_| item.bad(MODE_REASON))
            })?,
            "root" => o.roots.push(item.pattern()?),
            "region" => o.region.push(item.pattern()?),
            "region-last" => first(&mut o.region_last, key, || {
                item.whole(|n| *n <= MAX_REGION_LAST, REGION_LAST_REASON)
            })?,
            "track-every" => first(&mut o.track_every, key, || {
                item.whole(|_: &u64| true, TRACK_EVERY_REASON)
            })?,
            "track-bytes" => first(&mut o.track_bytes, key, || {
                parse_size(value).ok_or_else(|| item.bad(TRACK_BYTES_REASON))
            })?,
            "stack-depth" => first(&mut o.stack_depth, key, || {
                item.whole(|n| (1..=MAX_STACK_DEPTH).contains(n), STACK_DEPTH_REASON)
            })?,
            "include" => o.filter.include.push(item.pattern()?),
            "exclude" => o.filter.exclude.push(item.pattern()?),
            "alloc-class" => o.alloc_classes.push(item.pattern()?),
            "scheme" => {
                once(&mut self.seen_scheme, key)?;
                o.scheme = value.parse().map_err(|_| item.bad(SCHEME_REASON))?;
            }
            "cpu" => {
                once(&mut self.seen_cpu, key)?;
                o.cpu = item.flag()?;
            }
            "skip-trivial" => {
                once(&mut self.seen_skip_trivial, key)?;
                o.skip_trivial = item.flag()?;
            }
            "adaptive" => {
                once(&mut self.seen_adaptive, key)?;
                o.adaptive = item.flag()?;
            }
            "blocks" => {
                once(&mut self.seen_blocks, key)?;
                o.blocks = value.parse().map_err(|r: String| item.bad(r))?;
            }
            "reveal" => {
                once(&mut self.seen_reveal, key)?;
                o.reveal = value.parse().map_err(|r: String| item.bad(r))?;
            }
            "timing" => {
                once(&mut self.seen_timing, key)?;
                o.timing = value.parse().map_err(|r: String| item.bad(r))?;
            }
            "record" => first(&mut o.record, key, || {
                value.parse().map_err(|r: String| item.bad(r))
            })?,
            "interval" => first(&mut o.interval, key, || {
                parse_duration(value)
                    .filter(|d| (MIN_SAMPLE_INTERVAL..=MAX_SAMPLE_INTERVAL).contains(d))
                    .ok_or_else(|| item.bad(INTERVAL_REASON))
            })?,
            "wall" => {
                once(&mut self.seen_wall, key)?;
                o.wall = item.flag()?;
            }
            "instrument-inlined" => {
                once(&mut self.seen_instrument_inlined, key)?;
                o.instrument_inlined = item.flag()?;
            }
            "threads" => {
                once(&mut self.seen_threads, key)?;
                o.threads = item.flag()?;
            }
            "duration" => first(&mut o.duration, key, || {
                parse_duration(value).ok_or_else(|| item.bad(DURATION_REASON))
            })?,
            "push" => first(&mut o.push.url, key, || {
                push::check_url(value)
                    .map(|()| value.to_owned())
                    .map_err(|r| item.bad(r))
            })?,
            "every" => first(&mut o.push.every, key, || {
                parse_duration(value)
                    .filter(|d| *d >= MIN_EVERY)
                    .ok_or_else(|| item.bad(EVERY_REASON))
            })?,
            "label" => o
                .push
                .labels
                .push(push::parse_label(value).map_err(|e| item.bad(e.to_string()))?),
            "file" => first(&mut o.file, key, || item.path())?,
            "log" => first(&mut o.log, key, || item.path())?,
            "socket" => first(&mut o.socket, key, || item.path())?,
            _ => unreachable!("every key of KEYS is handled"),
        }
        Ok(())
    }
}
impl fmt::Display for AgentOptions {
    /// The canonical form: keys in [`KEYS`] order, defaults omitted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut items: Vec<String> = self.mode.iter().map(|m| format!("mode={m}")).collect();
        items.extend(self.roots.iter().map(|r| format!("root={r}")));
        items.extend(self.region.iter().map(|r| format!("region={r}")));
        if let Some(n) = self.region_last {
            items.push(format!("region-last={n}"));
        }
        items.extend(self.filter.include.iter().map(|p| format!("include={p}")));
        items.extend(self.filter.exclude.iter().map(|p| format!("exclude={p}")));
        if self.scheme != Scheme::default() {
            items.push(format!("scheme={}", self.scheme.name()));
        }
        if self.blocks != Blocks::default() {
            items.push(format!("blocks={}", self.blocks));
        }
        if self.cpu {
            items.push("cpu=true".into());
        }
        if self.skip_trivial {
            items.push("skip-trivial=true".into());
        }
        if self.adaptive {
            items.push("adaptive=true".into());
        }
        if self.reveal != Reveal::default() {
            items.push(format!("reveal={}", self.reveal));
        }
        if let Some(n) = self.track_every {
            items.push(format!("track-every={n}"));
        }
        if let Some(n) = self.track_bytes {
            items.push(format!("track-bytes={}", format_size(n)));
        }
        if let Some(n) = self.stack_depth {
            items.push(format!("stack-depth={n}"));
        }
        items.extend(
            self.alloc_classes
                .iter()
                .map(|p| format!("alloc-class={p}")),
        );
        if self.timing != Timing::default() {
            items.push(format!("timing={}", self.timing));
        }
        if let Some(r) = self.record {
            items.push(format!("record={r}"));
        }
        if let Some(d) = self.interval {
            items.push(format!("interval={}", format_duration(d)));
        }
        if self.wall {
            items.push("wall=true".into());
        }
        if self.instrument_inlined {
            items.push("instrument-inlined=true".into());
        }
        if self.threads {
            items.push("threads=true".into());
        }
        if let Some(p) = &self.file {
            items.push(format!("file={}", p.display()));
        }
        if let Some(d) = self.duration {
            items.push(format!("duration={}", format_duration(d)));
        }
        items.extend(self.push.url.iter().map(|u| format!("push={u}")));
        if let Some(d) = self.push.every {
            items.push(format!("every={}", format_duration(d)));
        }
        items.extend(
            self.push
                .labels
                .iter()
                .map(|(k, v)| format!("label={k}={v}")),
        );
        if let Some(p) = &self.log {
            items.push(format!("log={}", p.display()));
        }
        if let Some(p) = &self.socket {
            items.push(format!("socket={}", p.display()));
        }
        f.write_str(&items.join(","))
    }
}
