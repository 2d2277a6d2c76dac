//! One side of a diff: a profile's threads merged into one tree, with the values of the compared
//! metrics, the noise of its times, and its methods' sums.

use std::collections::HashMap;

use ferrofluid_profile::{CallTree, Mode, NodeId, NodeKind, Profile, REST_SPREAD};

/// A profile's merged tree with the values of the compared metrics and time noise.
pub(crate) struct Side {
    tree: CallTree,
    /// Per metric, per node.
    pub(crate) values: Vec<Vec<ferrofluid_profile::Value>>,
    /// Per node: the noise of its self time and of its total.
    pub(crate) noise: Vec<(u64, u64)>,
    names: Vec<String>,
}

impl Side {
    pub(crate) fn new(profile: &Profile, metrics: &[usize]) -> Side {
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
    pub(crate) fn contexts(&self) -> Vec<(Vec<String>, NodeId)> {
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
    pub(crate) fn methods(&self) -> HashMap<String, MethodSums> {
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
pub(crate) struct MethodSums {
    /// Per metric: self values over its contexts.
    pub(crate) self_values: Vec<u64>,
    /// Per metric: totals of its outermost contexts.
    pub(crate) totals: Vec<u64>,
    pub(crate) self_noise: u64,
    pub(crate) total_noise: u64,
}

impl MethodSums {
    pub(crate) fn new(width: usize) -> Self {
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
