//! The comparison: which metrics both profiles have, every context and method of either with
//! its values in both, and what goes past the thresholds.

use std::collections::HashMap;

use ferrofluid_profile::metric::TIME;
use ferrofluid_profile::{Metric, Mode, NodeId, Profile};
use serde::Serialize;
use thiserror::Error;

use crate::diff::side::{MethodSums, Side};
use crate::diff::thresholds::Thresholds;

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
        let compared = Compared::of(base, new);
        let sides = Sides {
            a: Side::new(base, &compared.base),
            b: Side::new(new, &compared.new),
            width: compared.metrics.len(),
            time: compared.metrics.iter().position(|m| m.name == TIME),
        };
        Ok(ProfileDiff {
            mode: base.mode,
            totals: sides.totals(),
            contexts: sides.contexts(),
            methods: sides.methods(),
            metrics: compared.metrics,
            not_compared: compared.not_compared,
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

/// The metrics both profiles have: their indexes in each, and the names of the others.
struct Compared {
    metrics: Vec<Metric>,
    base: Vec<usize>,
    new: Vec<usize>,
    not_compared: Vec<String>,
}

impl Compared {
    fn of(base: &Profile, new: &Profile) -> Compared {
        let base_metrics = base.metrics();
        let new_metrics = new.metrics();
        let mut out = Compared {
            metrics: Vec::new(),
            base: Vec::new(),
            new: Vec::new(),
            not_compared: Vec::new(),
        };
        for (i, m) in base_metrics.iter().enumerate() {
            match new_metrics.iter().position(|n| n == m) {
                Some(j) => {
                    out.metrics.push(m.clone());
                    out.base.push(i);
                    out.new.push(j);
                }
                None => out.not_compared.push(m.name.clone()),
            }
        }
        out.not_compared.extend(
            new_metrics
                .iter()
                .filter(|m| !base_metrics.contains(m))
                .map(|m| m.name.clone()),
        );
        out
    }
}

/// The base (`a`) and new (`b`) sides over `width` compared metrics, `time` the time metric's
/// index.
struct Sides {
    a: Side,
    b: Side,
    width: usize,
    time: Option<usize>,
}

impl Sides {
    /// `values` with `noise` on the time metric's change.
    fn with_noise(&self, values: Vec<Change>, noise: u64) -> Vec<Change> {
        values
            .into_iter()
            .enumerate()
            .map(|(i, mut c)| {
                if Some(i) == self.time {
                    c.noise = noise;
                }
                c
            })
            .collect()
    }

    /// Per metric: the totals of the whole profiles.
    fn totals(&self) -> Vec<Change> {
        self.with_noise(
            (0..self.width)
                .map(|i| Change {
                    base: self.a.values[i][0].total,
                    new: self.b.values[i][0].total,
                    noise: 0,
                })
                .collect(),
            self.a.noise[0].1 + self.b.noise[0].1,
        )
    }

    /// Every context of the base tree, then the new one's additions.
    fn contexts(&self) -> Vec<ContextDiff> {
        let b_contexts: HashMap<Vec<String>, NodeId> = self.b.contexts().into_iter().collect();
        let mut seen: HashMap<Vec<String>, ()> = HashMap::new();
        let mut contexts = Vec::new();
        for (path, id) in self.a.contexts() {
            let other = b_contexts.get(&path).copied();
            let values = (0..self.width)
                .map(|i| Change {
                    base: self.a.values[i][id.index()].self_value,
                    new: other.map_or(0, |o| self.b.values[i][o.index()].self_value),
                    noise: 0,
                })
                .collect();
            let noise = self.a.noise[id.index()].0 + other.map_or(0, |o| self.b.noise[o.index()].0);
            seen.insert(path.clone(), ());
            contexts.push(ContextDiff {
                path,
                presence: if other.is_some() {
                    Presence::Both
                } else {
                    Presence::Vanished
                },
                values: self.with_noise(values, noise),
            });
        }
        for (path, id) in self.b.contexts() {
            if seen.contains_key(&path) {
                continue;
            }
            let values = (0..self.width)
                .map(|i| Change {
                    base: 0,
                    new: self.b.values[i][id.index()].self_value,
                    noise: 0,
                })
                .collect();
            contexts.push(ContextDiff {
                path,
                presence: Presence::New,
                values: self.with_noise(values, self.b.noise[id.index()].0),
            });
        }
        contexts
    }

    /// Every method of either profile, by name.
    fn methods(&self) -> Vec<MethodDiff> {
        let ma = self.a.methods();
        let mb = self.b.methods();
        let mut names: Vec<&String> = ma.keys().chain(mb.keys()).collect();
        names.sort();
        names.dedup();
        let zero = MethodSums::new(self.width);
        names
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
                    self_values: self.with_noise(
                        pair(&x.self_values, &y.self_values),
                        x.self_noise + y.self_noise,
                    ),
                    totals: self
                        .with_noise(pair(&x.totals, &y.totals), x.total_noise + y.total_noise),
                }
            })
            .collect()
    }
}

/// How much a value moved: relative to its base (a new value counts as a doubling of
/// itself), so that moves of different metrics sort together.
fn moved(c: &Change) -> f64 {
    let delta = c.delta().unsigned_abs() as f64;
    delta / (c.base.max(1) as f64) + delta * 1e-12
}
