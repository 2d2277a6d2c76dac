//! The difference between two profiles of the same mode, per calling context and per method,
//! judged against thresholds (`ferrofluid diff`, a CI gate).
//!
//! Both profiles' threads are merged first (thread names and ids differ between runs), and
//! contexts and methods are matched by name (class, method and descriptor), not by id. Every
//! metric of the base profile that the new one also has is compared on self values: a
//! context's own calls, its own time, its own bytecodes. Counts are exact. A time's change
//! is given with its noise: the compensation's uncertainty in both profiles (the calibrated
//! probe cost subtracted, times [`REST_SPREAD`]); the variation between runs is not in a
//! profile and is not included. A time change within its noise is no change.
//!
//! ```
//! use ferrofluid_profile::{Mode, Profile};
//! use ferrofluid_report::diff::{ProfileDiff, Thresholds};
//!
//! let base = Profile::new(Mode::Cpu);
//! let diff = ProfileDiff::new(&base, &base.clone()).unwrap();
//! assert!(diff.exceeding(&Thresholds::default()).is_empty());
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::Write;
use std::str::FromStr;

use ferrofluid_profile::metric::{CALLS, TIME};
use ferrofluid_profile::{CallTree, Metric, Mode, NodeId, NodeKind, Profile, REST_SPREAD};
use serde::Serialize;
use thiserror::Error;

use crate::view::ms;
use crate::ReportError;

/// Why two profiles cannot be compared.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum DiffError {
    /// They measure different things.
    #[error(
        "cannot compare a {base} profile with a {new} profile: diff two profiles of the same mode"
    )]
    Modes {
        /// The base profile's mode.
        base: Mode,
        /// The new profile's.
        new: Mode,
    },
    /// Code-region profiles have no calling contexts.
    #[error("code-region profiles have no calling contexts to compare; diff cpu, count or alloc profiles")]
    Region,
}

/// How much a metric may change before the diff reports it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Threshold {
    /// Never reported.
    Unchecked,
    /// More than this many units (`0`: any change).
    Absolute(u64),
    /// More than this percentage of the base value (any value from a base of 0).
    Percent(f64),
}

/// A threshold that does not parse.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("invalid threshold {0:?}: give a number of units (0: any change), a percentage like 5%, or none")]
pub struct BadThreshold(pub String);

impl FromStr for Threshold {
    type Err = BadThreshold;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadThreshold(s.to_owned());
        let t = s.trim();
        if t == "none" {
            return Ok(Threshold::Unchecked);
        }
        if let Some(p) = t.strip_suffix('%') {
            let p: f64 = p.trim().parse().map_err(|_| bad())?;
            return if p.is_finite() && p >= 0.0 {
                Ok(Threshold::Percent(p))
            } else {
                Err(bad())
            };
        }
        t.parse().map(Threshold::Absolute).map_err(|_| bad())
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Threshold::Unchecked => f.write_str("not checked"),
            Threshold::Absolute(0) => f.write_str("any change"),
            Threshold::Absolute(n) => write!(f, "more than {n}"),
            Threshold::Percent(p) => write!(f, "more than {p}%"),
        }
    }
}

impl Threshold {
    /// Whether a change from `base` to `new` by more than `noise` goes past this threshold;
    /// the part within `noise` does not count.
    pub fn exceeded(self, base: u64, new: u64, noise: u64) -> bool {
        let delta = base.abs_diff(new);
        if delta <= noise {
            return false;
        }
        match self {
            Threshold::Unchecked => false,
            Threshold::Absolute(n) => delta > n,
            Threshold::Percent(p) => base == 0 || delta as f64 * 100.0 > p * base as f64,
        }
    }
}

/// The thresholds per metric name; a metric without one is not checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Thresholds {
    /// By metric name (`calls`, `time`, `bytecodes`, `objects`, `bytes`, ...).
    pub by_metric: BTreeMap<String, Threshold>,
}

impl Default for Thresholds {
    /// Any change in a count (calls, bytecodes, objects, bytes); times are not checked.
    fn default() -> Self {
        let mut by_metric = BTreeMap::new();
        for name in [CALLS, "bytecodes", "objects", "bytes", "samples"] {
            by_metric.insert(name.to_owned(), Threshold::Absolute(0));
        }
        Self { by_metric }
    }
}

impl Thresholds {
    /// The threshold of `metric`.
    pub fn of(&self, metric: &str) -> Threshold {
        self.by_metric
            .get(metric)
            .copied()
            .unwrap_or(Threshold::Unchecked)
    }
}

/// One value in both profiles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Change {
    /// In the base profile (0 where it is absent).
    pub base: u64,
    /// In the new one.
    pub new: u64,
    /// The uncertainty of the change (times: the compensation's in both profiles; counts: 0).
    pub noise: u64,
}

impl Change {
    /// `new - base`.
    pub fn delta(&self) -> i128 {
        i128::from(self.new) - i128::from(self.base)
    }
}

/// Where a context or method is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Presence {
    /// In both profiles.
    Both,
    /// Only in the new one.
    New,
    /// Only in the base one.
    Vanished,
}

/// A calling context in either profile: its self values.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ContextDiff {
    /// Frames from the outermost, each `class.method(descriptor)`.
    pub path: Vec<String>,
    /// Where it is.
    pub presence: Presence,
    /// Per metric of [`ProfileDiff::metrics`]: the context's self values.
    pub values: Vec<Change>,
}

/// A method over all its contexts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MethodDiff {
    /// `class.method(descriptor)`.
    pub method: String,
    /// Where it is.
    pub presence: Presence,
    /// Per metric: self values summed over its contexts.
    pub self_values: Vec<Change>,
    /// Per metric: totals of its outermost contexts.
    pub totals: Vec<Change>,
}

/// What goes past a threshold.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Exceeding {
    /// `context` or `method`.
    pub kind: &'static str,
    /// The context (frames joined by `;`) or method.
    pub name: String,
    /// The metric's name.
    pub metric: String,
    /// Its values.
    pub change: Change,
}

/// The difference of two profiles of one mode.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProfileDiff {
    /// Their mode.
    #[serde(serialize_with = "display")]
    pub mode: Mode,
    /// The metrics compared: the base profile's that the new one has too.
    pub metrics: Vec<Metric>,
    /// Metrics only one of them has, not compared.
    pub not_compared: Vec<String>,
    /// Per metric: the whole profiles' totals.
    pub totals: Vec<Change>,
    /// Every context of either profile, in the order of the merged base tree then the new
    /// one's additions (depth first).
    pub contexts: Vec<ContextDiff>,
    /// Every method of either profile, by name.
    pub methods: Vec<MethodDiff>,
}

fn display<S: serde::Serializer>(mode: &Mode, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(mode)
}

/// A profile's merged tree with the values of the compared metrics and time noise.
struct Side {
    tree: CallTree,
    /// Per metric, per node.
    values: Vec<Vec<ferrofluid_profile::Value>>,
    /// Per node: the noise of its self time and of its total.
    noise: Vec<(u64, u64)>,
    names: Vec<String>,
}

impl Side {
    fn new(profile: &Profile, metrics: &[usize]) -> Side {
        let tree = profile.merged();
        let values = metrics
            .iter()
            .map(|&i| profile.metric_values(&tree, i))
            .collect();
        let noise = if profile.mode == Mode::Cpu {
            profile
                .times(&tree)
                .iter()
                .map(|t| (spread(t.overhead_ns), spread(t.total_overhead_ns)))
                .collect()
        } else {
            vec![(0, 0); tree.len()]
        };
        let names = tree
            .ids()
            .map(|id| match tree.node(id).kind {
                NodeKind::Method(m) => profile
                    .methods
                    .get(m)
                    .map_or_else(|| format!("<method {}>", m.0), ToString::to_string),
                NodeKind::Overflow => "[overflow]".to_owned(),
                NodeKind::Thread => String::new(),
            })
            .collect();
        Side {
            tree,
            values,
            noise,
            names,
        }
    }

    /// Per path of names: its node.
    fn contexts(&self) -> Vec<(Vec<String>, NodeId)> {
        let mut out = Vec::new();
        let mut path: Vec<String> = Vec::new();
        for (id, depth) in self.tree.walk() {
            if depth == 0 {
                continue;
            }
            path.truncate(depth - 1);
            path.push(self.names[id.index()].clone());
            out.push((path.clone(), id));
        }
        out
    }

    /// Per method name: summed self values and outermost totals per metric, and noise.
    fn methods(&self) -> HashMap<String, MethodSums> {
        let mut out: HashMap<String, MethodSums> = HashMap::new();
        let width = self.values.len();
        let mut on_path: HashMap<&str, u32> = HashMap::new();
        let mut stack = vec![(NodeId::ROOT, false)];
        while let Some((id, leaving)) = stack.pop() {
            let name = self.names[id.index()].as_str();
            if leaving {
                *on_path.get_mut(name).expect("entered") -= 1;
                continue;
            }
            if id != NodeId::ROOT {
                let outermost = on_path.get(name).copied().unwrap_or(0) == 0;
                let e = out
                    .entry(name.to_owned())
                    .or_insert_with(|| MethodSums::new(width));
                for (i, v) in self.values.iter().enumerate() {
                    e.self_values[i] += v[id.index()].self_value;
                    if outermost {
                        e.totals[i] += v[id.index()].total;
                    }
                }
                e.self_noise += self.noise[id.index()].0;
                if outermost {
                    e.total_noise += self.noise[id.index()].1;
                }
            }
            *on_path.entry(name).or_insert(0) += 1;
            stack.push((id, true));
            for &c in self.tree.node(id).children().iter().rev() {
                stack.push((c, false));
            }
        }
        out
    }
}

/// One method's values in one profile.
struct MethodSums {
    /// Per metric: self values over its contexts.
    self_values: Vec<u64>,
    /// Per metric: totals of its outermost contexts.
    totals: Vec<u64>,
    self_noise: u64,
    total_noise: u64,
}

impl MethodSums {
    fn new(width: usize) -> Self {
        Self {
            self_values: vec![0; width],
            totals: vec![0; width],
            self_noise: 0,
            total_noise: 0,
        }
    }
}

/// The compensation's uncertainty in a time from which `overhead_ns` of calibrated probe
/// cost was subtracted.
fn spread(overhead_ns: u64) -> u64 {
    (overhead_ns as f64 * REST_SPREAD).ceil() as u64
}

impl ProfileDiff {
    /// Compares `new` with `base`.
    pub fn new(base: &Profile, new: &Profile) -> Result<ProfileDiff, DiffError> {
        if base.mode != new.mode {
            return Err(DiffError::Modes {
                base: base.mode,
                new: new.mode,
            });
        }
        if base.mode == Mode::Region || base.regions.is_some() {
            return Err(DiffError::Region);
        }
        let base_metrics = base.metrics();
        let new_metrics = new.metrics();
        let mut metrics = Vec::new();
        let (mut base_idx, mut new_idx) = (Vec::new(), Vec::new());
        let mut not_compared = Vec::new();
        for (i, m) in base_metrics.iter().enumerate() {
            match new_metrics.iter().position(|n| n == m) {
                Some(j) => {
                    metrics.push(m.clone());
                    base_idx.push(i);
                    new_idx.push(j);
                }
                None => not_compared.push(m.name.clone()),
            }
        }
        not_compared.extend(
            new_metrics
                .iter()
                .filter(|m| !base_metrics.contains(m))
                .map(|m| m.name.clone()),
        );
        let time = metrics.iter().position(|m| m.name == TIME);
        let a = Side::new(base, &base_idx);
        let b = Side::new(new, &new_idx);
        let with_noise = |values: Vec<Change>, noise: u64| -> Vec<Change> {
            values
                .into_iter()
                .enumerate()
                .map(|(i, mut c)| {
                    if Some(i) == time {
                        c.noise = noise;
                    }
                    c
                })
                .collect()
        };
        let totals = with_noise(
            (0..metrics.len())
                .map(|i| Change {
                    base: a.values[i][0].total,
                    new: b.values[i][0].total,
                    noise: 0,
                })
                .collect(),
            a.noise[0].1 + b.noise[0].1,
        );

        let b_contexts: HashMap<Vec<String>, NodeId> = b.contexts().into_iter().collect();
        let mut seen: HashMap<Vec<String>, ()> = HashMap::new();
        let mut contexts = Vec::new();
        for (path, id) in a.contexts() {
            let other = b_contexts.get(&path).copied();
            let values = (0..metrics.len())
                .map(|i| Change {
                    base: a.values[i][id.index()].self_value,
                    new: other.map_or(0, |o| b.values[i][o.index()].self_value),
                    noise: 0,
                })
                .collect();
            let noise = a.noise[id.index()].0 + other.map_or(0, |o| b.noise[o.index()].0);
            seen.insert(path.clone(), ());
            contexts.push(ContextDiff {
                path,
                presence: if other.is_some() {
                    Presence::Both
                } else {
                    Presence::Vanished
                },
                values: with_noise(values, noise),
            });
        }
        for (path, id) in b.contexts() {
            if seen.contains_key(&path) {
                continue;
            }
            let values = (0..metrics.len())
                .map(|i| Change {
                    base: 0,
                    new: b.values[i][id.index()].self_value,
                    noise: 0,
                })
                .collect();
            contexts.push(ContextDiff {
                path,
                presence: Presence::New,
                values: with_noise(values, b.noise[id.index()].0),
            });
        }

        let ma = a.methods();
        let mb = b.methods();
        let mut names: Vec<&String> = ma.keys().chain(mb.keys()).collect();
        names.sort();
        names.dedup();
        let zero = MethodSums::new(metrics.len());
        let methods = names
            .into_iter()
            .map(|name| {
                let presence = match (ma.contains_key(name), mb.contains_key(name)) {
                    (true, true) => Presence::Both,
                    (true, false) => Presence::Vanished,
                    _ => Presence::New,
                };
                let x = ma.get(name).unwrap_or(&zero);
                let y = mb.get(name).unwrap_or(&zero);
                let pair = |p: &[u64], q: &[u64]| -> Vec<Change> {
                    p.iter()
                        .zip(q)
                        .map(|(&base, &new)| Change {
                            base,
                            new,
                            noise: 0,
                        })
                        .collect()
                };
                MethodDiff {
                    method: name.clone(),
                    presence,
                    self_values: with_noise(
                        pair(&x.self_values, &y.self_values),
                        x.self_noise + y.self_noise,
                    ),
                    totals: with_noise(pair(&x.totals, &y.totals), x.total_noise + y.total_noise),
                }
            })
            .collect();
        Ok(ProfileDiff {
            mode: base.mode,
            metrics,
            not_compared,
            totals,
            contexts,
            methods,
        })
    }

    /// Everything past `thresholds`: contexts' and methods' self values, contexts first,
    /// each list by the size of the change (largest first, relative to the base value for
    /// percentages), then by name.
    pub fn exceeding(&self, thresholds: &Thresholds) -> Vec<Exceeding> {
        let mut out = Vec::new();
        let mut add = |kind: &'static str, name: String, values: &[Change]| {
            for (m, c) in self.metrics.iter().zip(values) {
                if thresholds.of(&m.name).exceeded(c.base, c.new, c.noise) {
                    out.push(Exceeding {
                        kind,
                        name: name.clone(),
                        metric: m.name.clone(),
                        change: *c,
                    });
                }
            }
        };
        for c in &self.contexts {
            add("context", c.path.join(";"), &c.values);
        }
        for m in &self.methods {
            add("method", m.method.clone(), &m.self_values);
        }
        out.sort_by(|x, y| {
            (x.kind != "context")
                .cmp(&(y.kind != "context"))
                .then(moved(&y.change).total_cmp(&moved(&x.change)))
                .then(x.name.cmp(&y.name))
                .then(x.metric.cmp(&y.metric))
        });
        out
    }
}

/// How much a value moved: relative to its base (a new value counts as a doubling of
/// itself), so that moves of different metrics sort together.
fn moved(c: &Change) -> f64 {
    let delta = c.delta().unsigned_abs() as f64;
    delta / (c.base.max(1) as f64) + delta * 1e-12
}

/// A signed change of `metric`: `+3`, `-1.250 ms`.
fn signed(metric: &Metric, d: i128) -> String {
    let sign = if d < 0 { "-" } else { "+" };
    let v = u64::try_from(d.unsigned_abs()).unwrap_or(u64::MAX);
    if metric.is_time() {
        format!("{sign}{} ms", ms(v))
    } else {
        format!("{sign}{v}")
    }
}

/// `10 -> 11 (+1)`, `1.000 ms -> 1.200 ms (+0.200 ms ±0.010 ms)`.
pub fn describe(metric: &Metric, c: &Change) -> String {
    let value = |v: u64| {
        if metric.is_time() {
            format!("{} ms", ms(v))
        } else {
            v.to_string()
        }
    };
    let noise = if c.noise > 0 {
        format!(" ±{} ms", ms(c.noise))
    } else {
        String::new()
    };
    format!(
        "{} -> {} ({}{noise})",
        value(c.base),
        value(c.new),
        signed(metric, c.delta())
    )
}

/// How many of the exceeding changes a report lists.
pub const MOST_MOVED: usize = 20;

/// The diff as text: totals, the changes past the thresholds (the contexts that moved most
/// first), new and vanished contexts, and every method that changed.
pub fn write_text(
    diff: &ProfileDiff,
    thresholds: &Thresholds,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let exceeding = diff.exceeding(thresholds);
    writeln!(
        out,
        "ferrofluid diff of two {} profiles (threads merged)",
        diff.mode
    )?;
    for (m, c) in diff.metrics.iter().zip(&diff.totals) {
        writeln!(
            out,
            "  total {}: {}   threshold: {}",
            m.name,
            describe(m, c),
            thresholds.of(&m.name)
        )?;
    }
    if diff.metrics.iter().any(|m| m.name == TIME) {
        writeln!(
            out,
            "  ± is the probe compensation's uncertainty in both profiles; variation between runs is not included"
        )?;
    }
    if !diff.not_compared.is_empty() {
        writeln!(
            out,
            "  not compared (in one profile only): {}",
            diff.not_compared.join(", ")
        )?;
    }
    writeln!(out)?;
    if exceeding.is_empty() {
        writeln!(out, "No change beyond the thresholds.")?;
    } else {
        let contexts = exceeding.iter().filter(|e| e.kind == "context").count();
        let methods = exceeding.len() - contexts;
        writeln!(
            out,
            "Changes beyond the thresholds: {contexts} in contexts, {methods} in methods; moved most:"
        )?;
        for e in exceeding.iter().take(MOST_MOVED) {
            let m = diff
                .metrics
                .iter()
                .find(|m| m.name == e.metric)
                .expect("a compared metric");
            writeln!(
                out,
                "  {} {}: {}   {}",
                e.kind,
                e.metric,
                describe(m, &e.change),
                e.name
            )?;
        }
        if exceeding.len() > MOST_MOVED {
            writeln!(out, "  ... and {} more", exceeding.len() - MOST_MOVED)?;
        }
    }
    for (presence, title) in [
        (Presence::New, "New contexts"),
        (Presence::Vanished, "Vanished contexts"),
    ] {
        let list: Vec<&ContextDiff> = diff
            .contexts
            .iter()
            .filter(|c| c.presence == presence)
            .collect();
        if list.is_empty() {
            continue;
        }
        writeln!(out, "\n{title} ({}):", list.len())?;
        for c in list {
            let values: Vec<String> = diff
                .metrics
                .iter()
                .zip(&c.values)
                .map(|(m, v)| {
                    let x = if presence == Presence::New {
                        v.new
                    } else {
                        v.base
                    };
                    format!("{} {}", m.name, crate::view::number(m, x))
                })
                .collect();
            writeln!(out, "  {}   {}", values.join(", "), c.path.join(";"))?;
        }
    }
    let changed: Vec<&MethodDiff> = diff
        .methods
        .iter()
        .filter(|m| {
            m.self_values
                .iter()
                .chain(&m.totals)
                .any(|c| c.base != c.new)
        })
        .collect();
    if !changed.is_empty() {
        writeln!(
            out,
            "\nMethods that changed ({}), self values:",
            changed.len()
        )?;
        for m in changed {
            let values: Vec<String> = diff
                .metrics
                .iter()
                .zip(&m.self_values)
                .map(|(metric, c)| format!("{} {}", metric.name, describe(metric, c)))
                .collect();
            writeln!(out, "  {}   {}", m.method, values.join(", "))?;
        }
    }
    Ok(())
}

/// The diff as JSON: the whole [`ProfileDiff`] plus the thresholds and what exceeds them.
pub fn write_json(
    diff: &ProfileDiff,
    thresholds: &Thresholds,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    #[derive(Serialize)]
    struct Doc<'a> {
        format: &'static str,
        version: u32,
        thresholds: BTreeMap<&'a str, String>,
        exceeding: Vec<Exceeding>,
        #[serde(flatten)]
        diff: &'a ProfileDiff,
    }
    let doc = Doc {
        format: "ferrofluid-diff",
        version: 1,
        thresholds: diff
            .metrics
            .iter()
            .map(|m| (m.name.as_str(), thresholds.of(&m.name).to_string()))
            .collect(),
        exceeding: diff.exceeding(thresholds),
        diff,
    };
    serde_json::to_writer_pretty(&mut *out, &doc).map_err(std::io::Error::from)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// The frame name of a context path entry: `class.method`, without the descriptor (whose
/// `;` would split a folded stack).
fn frame_of(signature: &str) -> &str {
    signature.split('(').next().unwrap_or(signature)
}

/// The differential folded stacks of the primary metric: `stack base new` per stack, as
/// inferno's differential flame graph reads them (widths from the new profile, red where it
/// grew, blue where it shrank).
pub fn differential_lines(diff: &ProfileDiff) -> Vec<String> {
    let primary = diff
        .metrics
        .iter()
        .position(|m| m.name == diff.mode.primary_metric())
        .unwrap_or(0);
    let mut stacks: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for c in &diff.contexts {
        let Some(v) = c.values.get(primary) else {
            continue;
        };
        if v.base == 0 && v.new == 0 {
            continue;
        }
        let stack: Vec<&str> = c.path.iter().map(|f| frame_of(f)).collect();
        let e = stacks.entry(stack.join(";")).or_default();
        e.0 += v.base;
        e.1 += v.new;
    }
    stacks
        .into_iter()
        .map(|(stack, (a, b))| format!("{stack} {a} {b}"))
        .collect()
}

/// The diff as one self-contained HTML page: inferno's differential flame graph of the
/// primary metric, then the text report's tables.
pub fn write_html(
    diff: &ProfileDiff,
    thresholds: &Thresholds,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    use crate::html::escape;
    let lines = differential_lines(diff);
    let metric = diff
        .metrics
        .iter()
        .find(|m| m.name == diff.mode.primary_metric())
        .or(diff.metrics.first());
    let mut svg = Vec::new();
    if !lines.is_empty() {
        let mut opt = inferno::flamegraph::Options::default();
        opt.title = format!(
            "Differential flame graph: {}",
            metric.map_or("", |m| m.name.as_str())
        );
        opt.subtitle = Some("widths: new profile; red: grew, blue: shrank".to_owned());
        opt.count_name = metric.map_or_else(String::new, |m| {
            if m.is_time() {
                "ns".to_owned()
            } else {
                m.name.clone()
            }
        });
        opt.deterministic = true;
        inferno::flamegraph::from_lines(&mut opt, lines.iter().map(String::as_str), &mut svg)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
    }
    let mut text = Vec::new();
    write_text(diff, thresholds, &mut text)?;
    let text = String::from_utf8_lossy(&text);
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>ferrofluid diff ({mode})</title>\
         <style>body{{font-family:sans-serif;margin:1em}}pre{{font-size:13px;overflow-x:auto}}\
         body>svg{{display:block;width:100%}}</style>\
         </head><body>\n<h1>ferrofluid diff of two {mode} profiles</h1>\n",
        mode = diff.mode
    )?;
    if svg.is_empty() {
        writeln!(out, "<p>Neither profile has a value to draw.</p>")?;
    } else {
        // Inline, without the XML prolog and doctype an HTML body does not take.
        let svg = String::from_utf8_lossy(&svg);
        out.write_all(svg[svg.find("<svg").unwrap_or(0)..].as_bytes())?;
    }
    writeln!(out, "\n<pre>{}</pre>\n</body></html>", escape(&text))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrofluid_profile::ThreadProfile;

    fn count(calls: &[(u64, u64)]) -> Profile {
        let mut p = Profile::new(Mode::Count);
        p.extra_metrics.push(Metric::new("bytecodes", "count"));
        let f = p.methods.insert("demo.A", "f", "()V");
        let g = p.methods.insert("demo.A", "g", "()V");
        let mut t = CallTree::with_width(1);
        let fi = t.add_child(NodeId::ROOT, NodeKind::Method(f));
        t.node_mut(fi).calls = 1;
        t.extra_mut(fi)[0] = 10;
        if let Some(&(c, b)) = calls.first() {
            let gi = t.add_child(fi, NodeKind::Method(g));
            t.node_mut(gi).calls = c;
            t.extra_mut(gi)[0] = b;
        }
        p.threads.push(ThreadProfile::new("main", 1, t));
        p
    }

    #[test]
    fn thresholds_parse_and_judge() {
        assert_eq!("0".parse(), Ok(Threshold::Absolute(0)));
        assert_eq!(" 5% ".parse(), Ok(Threshold::Percent(5.0)));
        assert_eq!("none".parse(), Ok(Threshold::Unchecked));
        assert_eq!(
            "5x".parse::<Threshold>().unwrap_err().to_string(),
            "invalid threshold \"5x\": give a number of units (0: any change), a percentage like 5%, or none"
        );
        assert!("-1%".parse::<Threshold>().is_err());
        assert!(Threshold::Absolute(0).exceeded(10, 11, 0));
        assert!(!Threshold::Absolute(0).exceeded(10, 10, 0));
        assert!(!Threshold::Absolute(1).exceeded(10, 11, 0));
        assert!(Threshold::Percent(5.0).exceeded(100, 106, 0));
        assert!(!Threshold::Percent(5.0).exceeded(100, 105, 0));
        assert!(Threshold::Percent(5.0).exceeded(0, 1, 0));
        assert!(!Threshold::Absolute(0).exceeded(100, 150, 50));
        assert!(!Threshold::Unchecked.exceeded(0, 1_000, 0));
    }

    #[test]
    fn a_call_more_is_a_change_a_new_context_too() {
        let base = count(&[(4, 100)]);
        let same = ProfileDiff::new(&base, &base.clone()).unwrap();
        assert!(same.exceeding(&Thresholds::default()).is_empty());

        let more = count(&[(5, 125)]);
        let diff = ProfileDiff::new(&base, &more).unwrap();
        let ex = diff.exceeding(&Thresholds::default());
        let got: Vec<(&str, &str, &str, i128)> = ex
            .iter()
            .map(|e| (e.kind, e.name.as_str(), e.metric.as_str(), e.change.delta()))
            .collect();
        assert_eq!(
            got,
            [
                ("context", "demo.A.f()V;demo.A.g()V", "bytecodes", 25),
                ("context", "demo.A.f()V;demo.A.g()V", "calls", 1),
                ("method", "demo.A.g()V", "bytecodes", 25),
                ("method", "demo.A.g()V", "calls", 1),
            ]
        );
        let mut lenient = Thresholds::default();
        lenient
            .by_metric
            .insert("bytecodes".into(), Threshold::Percent(25.0));
        lenient
            .by_metric
            .insert("calls".into(), Threshold::Percent(25.0));
        assert!(diff.exceeding(&lenient).is_empty());

        let none = count(&[]);
        let diff = ProfileDiff::new(&none, &base).unwrap();
        let g = &diff.contexts[1];
        assert_eq!(
            (g.presence, g.values[0], g.values[1].new),
            (
                Presence::New,
                Change {
                    base: 0,
                    new: 4,
                    noise: 0
                },
                100
            )
        );
        let back = ProfileDiff::new(&base, &none).unwrap();
        assert_eq!(back.contexts[1].presence, Presence::Vanished);
        assert_eq!(back.methods[1].presence, Presence::Vanished);
    }

    #[test]
    fn different_modes_are_refused() {
        let cpu = Profile::new(Mode::Cpu);
        assert_eq!(
            ProfileDiff::new(&cpu, &count(&[])).unwrap_err().to_string(),
            "cannot compare a cpu profile with a count profile: diff two profiles of the same mode"
        );
    }
}
