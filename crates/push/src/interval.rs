//! One interval's profile, encoded once for whichever backend it goes to: pprof's gzipped
//! protobuf, which all three take (OTLP's profiles convert from it without loss).
//!
//! The message is the pprof export's ([`ferrofluid_report::pprof::encode`]: the same sample
//! types, frames and values) with two changes for a backend: the threads are merged (a sample
//! per calling context over all threads, without the `thread` label, since Pyroscope makes a
//! series of every distinct set of sample labels and thread names would multiply them), and
//! the profile's time and duration are the interval's.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferrofluid_profile::{Mode, Profile};
use ferrofluid_report::pprof::{self, proto};
use flate2::write::GzEncoder;
use prost::Message;

/// The profile of one interval, ready to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interval {
    /// When the interval began.
    pub from: SystemTime,
    /// When it ended.
    pub until: SystemTime,
    /// The profiling mode.
    pub mode: Mode,
    /// The gzipped pprof message (shared: a retry sends the same bytes).
    pub pprof: Arc<[u8]>,
    /// The sample types, `(type, unit)`, in the message's order.
    pub sample_types: Vec<(String, String)>,
    /// Its samples (0: nothing ran, nothing to send).
    pub samples: usize,
}

impl Interval {
    /// Encodes `profile`, collected between `from` and `until`.
    pub fn new(profile: &Profile, from: SystemTime, until: SystemTime) -> Interval {
        let message = message(profile, from, until);
        let s = |i: i64| {
            message
                .string_table
                .get(usize::try_from(i).unwrap_or(0))
                .cloned()
                .unwrap_or_default()
        };
        let sample_types = message
            .sample_type
            .iter()
            .map(|t| (s(t.r#type), s(t.unit)))
            .collect();
        let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::default());
        // Writing into a Vec cannot fail.
        let _ = gz.write_all(&message.encode_to_vec());
        let bytes = gz.finish().unwrap_or_default();
        Interval {
            from,
            until,
            mode: profile.mode,
            pprof: bytes.into(),
            sample_types,
            samples: message.sample.len(),
        }
    }

    /// Whether nothing was collected in the interval.
    pub fn is_empty(&self) -> bool {
        self.samples == 0
    }

    /// The pprof message, decoded again (for OTLP's conversion).
    pub fn decode(&self) -> std::io::Result<proto::Profile> {
        decode(&self.pprof)
    }

    /// Seconds since the Unix epoch of `from` and `until`.
    pub fn unix_seconds(&self) -> (u64, u64) {
        (
            unix_ns(self.from) / 1_000_000_000,
            unix_ns(self.until) / 1_000_000_000,
        )
    }
}

/// The pprof message of a gzipped pprof.
pub fn decode(gz: &[u8]) -> std::io::Result<proto::Profile> {
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(gz), &mut raw)?;
    proto::Profile::decode(&raw[..])
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Nanoseconds since the Unix epoch (0 before it).
pub fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_nanos()
        .try_into()
        .unwrap_or(u64::MAX)
}

/// The pprof message of `profile` for a backend: threads merged, the interval's time.
pub fn message(profile: &Profile, from: SystemTime, until: SystemTime) -> proto::Profile {
    let mut m = pprof::encode(profile);
    // Samples of the same stack on different threads become one.
    let mut by_stack: HashMap<Vec<u64>, usize> = HashMap::new();
    let mut merged: Vec<proto::Sample> = Vec::with_capacity(m.sample.len());
    for s in m.sample.drain(..) {
        match by_stack.get(&s.location_id) {
            Some(&i) => {
                for (sum, v) in merged[i].value.iter_mut().zip(&s.value) {
                    *sum = sum.saturating_add(*v);
                }
            }
            None => {
                by_stack.insert(s.location_id.clone(), merged.len());
                merged.push(proto::Sample {
                    label: Vec::new(),
                    ..s
                });
            }
        }
    }
    m.sample = merged;
    compact_strings(&mut m);
    let from_ns = unix_ns(from);
    m.time_nanos = i64::try_from(from_ns).unwrap_or(i64::MAX);
    m.duration_nanos = i64::try_from(unix_ns(until).saturating_sub(from_ns)).unwrap_or(i64::MAX);
    m
}

/// Drops the strings no field refers to any more (the thread names and their label's key).
fn compact_strings(m: &mut proto::Profile) {
    let mut used = vec![false; m.string_table.len()];
    let mut mark = |i: i64| {
        if let Some(u) = usize::try_from(i).ok().and_then(|i| used.get_mut(i)) {
            *u = true;
        }
    };
    mark(0);
    for t in m.sample_type.iter().chain(&m.period_type) {
        mark(t.r#type);
        mark(t.unit);
    }
    for f in &m.function {
        mark(f.name);
        mark(f.system_name);
        mark(f.filename);
    }
    for map in &m.mapping {
        mark(map.filename);
        mark(map.build_id);
    }
    for s in &m.sample {
        for l in &s.label {
            mark(l.key);
            mark(l.str);
            mark(l.num_unit);
        }
    }
    for &c in &m.comment {
        mark(c);
    }
    mark(m.default_sample_type);
    mark(m.doc_url);
    mark(m.drop_frames);
    mark(m.keep_frames);
    let mut new_index = vec![0i64; used.len()];
    let mut table = Vec::with_capacity(used.len());
    for (i, s) in std::mem::take(&mut m.string_table).into_iter().enumerate() {
        if used[i] {
            new_index[i] = table.len() as i64;
            table.push(s);
        }
    }
    m.string_table = table;
    let re = |i: &mut i64| {
        if let Some(&n) = usize::try_from(*i).ok().and_then(|x| new_index.get(x)) {
            *i = n;
        }
    };
    for t in m.sample_type.iter_mut().chain(m.period_type.iter_mut()) {
        re(&mut t.r#type);
        re(&mut t.unit);
    }
    for f in &mut m.function {
        re(&mut f.name);
        re(&mut f.system_name);
        re(&mut f.filename);
    }
    for map in &mut m.mapping {
        re(&mut map.filename);
        re(&mut map.build_id);
    }
    for s in &mut m.sample {
        for l in &mut s.label {
            re(&mut l.key);
            re(&mut l.str);
            re(&mut l.num_unit);
        }
    }
    for c in &mut m.comment {
        re(c);
    }
    re(&mut m.default_sample_type);
    re(&mut m.doc_url);
    re(&mut m.drop_frames);
    re(&mut m.keep_frames);
}
