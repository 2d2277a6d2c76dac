//! A JFR recording (`.jfr`) as JDK Mission Control, IntelliJ and the JDK's `jfr` tool read it:
//! one chunk whose metadata event describes every type the file uses, one checkpoint event
//! with the constant pools (threads, stack traces, methods, classes, packages, symbols, frame
//! types, thread states), and the events (docs/exports.md, "JFR").
//!
//! - **`jdk.ExecutionSample`** for profiles with times: each calling context's exact self
//!   time (compensated wall time for CPU, a region method's time outside nested regions)
//!   becomes `round(self / period)` samples of its stack, [`SAMPLE_PERIOD_NS`] by default, so
//!   the flame graphs and hot-method views of JMC and `jfr view hot-methods` show the profile.
//!   A `sample` profile has one execution sample per sample taken.
//! - **`jdk.ObjectAllocationSample`** for allocation profiles: one per allocation path, its
//!   weight the path's exact bytes, its object class the path's allocated class.
//! - **`ferrofluid.CallingContext`**: one per calling context of every thread, with its stack
//!   and the exact values of every metric of the profile (`calls`; `selfTime`/`totalTime`,
//!   `selfBytecodes`/`totalBytecodes`, `selfObjects`, `selfBytes`...), defined in the file's
//!   metadata like the JDK's own events.
//! - **`ferrofluid.Region`**: one per region method of a code-region profile, with its
//!   invocations, time, extremes and percentiles.
//!
//! The profile keeps no timestamps: the chunk starts at the epoch (or
//! [`JfrReport::start_nanos`]) and each thread's samples follow its call tree depth first,
//! `period` apart, so the file is the same bytes for the same profile. Frames carry no line
//! numbers or bytecode indexes (-1) and the frame type `Java`.

mod encode;

use std::collections::HashMap;
use std::hash::Hash;
use std::io::Write;

use ferrofluid_profile::metric::{BYTES, CALLS, NANOSECONDS, TIME};
use ferrofluid_profile::{MethodInfo, Metric, Mode, NodeKind, Profile};

use crate::{Report, ReportError};
use encode::{Buf, ChunkTimes, Element, CHECKPOINT_EVENT, METADATA_EVENT};

/// Self time one synthesised `jdk.ExecutionSample` stands for: 1 ms.
pub const SAMPLE_PERIOD_NS: u64 = 1_000_000;

/// Options of the JFR writer.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct JfrReport {
    /// Self time per synthesised execution sample, ns (at least 1).
    pub period_ns: u64,
    /// The chunk's start, ns since the epoch.
    pub start_nanos: i64,
}

impl Default for JfrReport {
    fn default() -> Self {
        Self {
            period_ns: SAMPLE_PERIOD_NS,
            start_nanos: 0,
        }
    }
}

impl JfrReport {
    /// Sets the self time per execution sample.
    pub fn with_period_ns(mut self, period_ns: u64) -> Self {
        self.period_ns = period_ns.max(1);
        self
    }
}

impl Report for JfrReport {
    fn write(&self, profile: &Profile, out: &mut dyn Write) -> Result<(), ReportError> {
        out.write_all(&self.encode(profile))?;
        Ok(())
    }
}

/// Type ids of the metadata. Event types and other types share one id space; 0 and 1 are
/// the metadata and checkpoint events'.
mod id {
    pub const BOOLEAN: u64 = 4;
    pub const INT: u64 = 5;
    pub const LONG: u64 = 6;
    pub const STRING: u64 = 7;
    pub const CLASS: u64 = 20;
    pub const THREAD: u64 = 21;
    pub const STACK_TRACE: u64 = 22;
    pub const STACK_FRAME: u64 = 23;
    pub const METHOD: u64 = 24;
    pub const PACKAGE: u64 = 25;
    pub const SYMBOL: u64 = 26;
    pub const FRAME_TYPE: u64 = 27;
    pub const THREAD_STATE: u64 = 28;
    pub const LABEL: u64 = 40;
    pub const DESCRIPTION: u64 = 41;
    pub const CATEGORY: u64 = 42;
    pub const TIMESTAMP: u64 = 43;
    pub const TIMESPAN: u64 = 44;
    pub const DATA_AMOUNT: u64 = 45;
    pub const EXECUTION_SAMPLE: u64 = 100;
    pub const OBJECT_ALLOCATION_SAMPLE: u64 = 101;
    pub const CALLING_CONTEXT: u64 = 110;
    pub const REGION: u64 = 111;
}

/// Interned values of one constant pool; keys start at 1 (0 is null).
struct Pool<K> {
    keys: HashMap<K, u64>,
    values: Vec<K>,
}

impl<K> Default for Pool<K> {
    fn default() -> Self {
        Self {
            keys: HashMap::new(),
            values: Vec::new(),
        }
    }
}

impl<K: Hash + Eq + Clone> Pool<K> {
    fn key(&mut self, value: K) -> u64 {
        if let Some(&k) = self.keys.get(&value) {
            return k;
        }
        self.values.push(value.clone());
        let k = self.values.len() as u64;
        self.keys.insert(value, k);
        k
    }

    fn entries(&self) -> impl Iterator<Item = (u64, &K)> {
        self.values
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u64 + 1, v))
    }
}

/// The constant pools, filled while the events are written.
#[derive(Default)]
struct Pools {
    symbols: Pool<String>,
    /// Package name symbol.
    packages: Pool<u64>,
    /// (name symbol, package key or 0).
    classes: Pool<(u64, u64)>,
    /// (class key, name symbol, descriptor symbol).
    methods: Pool<(u64, u64, u64)>,
    /// Method keys, innermost frame first.
    stacks: Pool<Vec<u64>>,
    /// (name, id, virtual).
    threads: Vec<(String, u64, bool)>,
}

/// The one frame type: the profile does not know how a frame ran.
const FRAME_TYPE_JAVA: u64 = 1;
/// The one thread state of execution samples.
const STATE_RUNNABLE: u64 = 1;

impl Pools {
    fn symbol(&mut self, s: &str) -> u64 {
        self.symbols.key(s.to_owned())
    }

    /// The class named `dotted` (`com.acme.Foo`, `long[]`), stored in the JVM's internal form.
    fn class(&mut self, dotted: &str) -> u64 {
        let internal = internal_class_name(dotted);
        let package = match internal.rsplit_once('/') {
            Some((p, _)) if !internal.starts_with('[') => {
                let sym = self.symbol(p);
                self.packages.key(sym)
            }
            _ => 0,
        };
        let name = self.symbol(&internal);
        self.classes.key((name, package))
    }

    fn method(&mut self, class: &str, name: &str, descriptor: &str) -> u64 {
        let class = self.class(class);
        let name = self.symbol(name);
        let descriptor = self.symbol(descriptor);
        self.methods.key((class, name, descriptor))
    }

    fn frame(&mut self, profile: &Profile, kind: NodeKind) -> u64 {
        match kind {
            NodeKind::Method(m) => match profile.methods.get(m) {
                Some(info) => self.method(&info.class, &info.method, &info.descriptor),
                None => self.method("ferrofluid", &format!("<method {}>", m.0), "()V"),
            },
            NodeKind::Overflow | NodeKind::Thread => self.method("ferrofluid", "[overflow]", "()V"),
        }
    }

    /// The checkpoint event holding every non-empty pool.
    fn checkpoint(&self) -> Vec<u8> {
        let mut pools: Vec<(u64, Buf, usize)> = Vec::new();
        let mut add = |type_id: u64, count: usize, body: Buf| {
            if count > 0 {
                pools.push((type_id, body, count));
            }
        };
        let mut b = Buf::default();
        for (i, (name, tid, virt)) in self.threads.iter().enumerate() {
            b.varint(i as u64 + 1)
                .string(Some(name))
                .long(*tid as i64)
                .string(Some(name))
                .long(*tid as i64)
                .boolean(*virt);
        }
        add(id::THREAD, self.threads.len(), b);
        let mut b = Buf::default();
        for (k, frames) in self.stacks.entries() {
            b.varint(k).boolean(false).varint(frames.len() as u64);
            for &m in frames {
                b.varint(m).int(-1).int(-1).varint(FRAME_TYPE_JAVA);
            }
        }
        add(id::STACK_TRACE, self.stacks.values.len(), b);
        let mut b = Buf::default();
        for (k, &(class, name, descriptor)) in self.methods.entries() {
            b.varint(k)
                .varint(class)
                .varint(name)
                .varint(descriptor)
                .int(0)
                .boolean(false);
        }
        add(id::METHOD, self.methods.values.len(), b);
        let mut b = Buf::default();
        for (k, &(name, package)) in self.classes.entries() {
            b.varint(k)
                .varint(name)
                .varint(package)
                .int(0)
                .boolean(false);
        }
        add(id::CLASS, self.classes.values.len(), b);
        let mut b = Buf::default();
        for (k, &name) in self.packages.entries() {
            b.varint(k).varint(name).boolean(true);
        }
        add(id::PACKAGE, self.packages.values.len(), b);
        let mut b = Buf::default();
        for (k, s) in self.symbols.entries() {
            b.varint(k).string(Some(s));
        }
        add(id::SYMBOL, self.symbols.values.len(), b);
        let mut b = Buf::default();
        b.varint(FRAME_TYPE_JAVA).string(Some("Java"));
        add(id::FRAME_TYPE, 1, b);
        let mut b = Buf::default();
        b.varint(STATE_RUNNABLE).string(Some("STATE_RUNNABLE"));
        add(id::THREAD_STATE, 1, b);

        let mut body = Buf::default();
        // start, duration, delta to the next checkpoint (none), type (generic), pools.
        body.varint(CHECKPOINT_EVENT)
            .long(0)
            .long(0)
            .long(0)
            .boolean(false)
            .varint(pools.len() as u64);
        for (type_id, entries, count) in pools {
            body.varint(type_id).varint(count as u64);
            body.0.extend_from_slice(&entries.0);
        }
        let mut out = Buf::default();
        out.event(&body.0);
        out.0
    }
}

/// `com/acme/Foo` for `com.acme.Foo`; `[J` for `long[]`, `[Ljava/lang/String;` for
/// `java.lang.String[]`, as the JVM names classes.
fn internal_class_name(dotted: &str) -> String {
    let mut base = dotted;
    let mut dims = 0;
    while let Some(b) = base.strip_suffix("[]") {
        base = b;
        dims += 1;
    }
    if dims == 0 {
        return dotted.replace('.', "/");
    }
    let element = match base {
        "boolean" => "Z".to_owned(),
        "byte" => "B".to_owned(),
        "char" => "C".to_owned(),
        "short" => "S".to_owned(),
        "int" => "I".to_owned(),
        "long" => "J".to_owned(),
        "float" => "F".to_owned(),
        "double" => "D".to_owned(),
        other => format!("L{};", other.replace('.', "/")),
    };
    format!("{}{element}", "[".repeat(dims))
}

/// The fields of `ferrofluid.CallingContext` for one metric: the context's own value, and
/// its total with callees for the metrics where that adds up (all but calls).
fn metric_fields(metric: &Metric) -> (String, Option<String>) {
    if metric.name == CALLS {
        return (CALLS.to_owned(), None);
    }
    let camel: String = metric
        .name
        .split('_')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect();
    (format!("self{camel}"), Some(format!("total{camel}")))
}

/// "Self Time" for `selfTime`.
fn label_of(field: &str) -> String {
    let mut out = String::new();
    for (i, c) in field.chars().enumerate() {
        if i == 0 {
            out.extend(c.to_uppercase());
        } else if c.is_uppercase() {
            out.push(' ');
            out.push(c);
        } else {
            out.push(c);
        }
    }
    out
}

/// Metadata builders.
fn class(id: u64, name: &str) -> Element {
    Element::new("class").attr("name", name).attr("id", id)
}

fn annotation(type_id: u64, value: &str) -> Element {
    Element::new("annotation")
        .attr("class", type_id)
        .attr("value", value)
}

fn label(text: &str) -> Element {
    annotation(id::LABEL, text)
}

fn field(name: &str, type_id: u64, text: &str) -> Element {
    Element::new("field")
        .attr("name", name)
        .attr("class", type_id)
        .child(label(text))
}

/// A field holding a constant pool key.
fn pooled(name: &str, type_id: u64, text: &str) -> Element {
    Element::new("field")
        .attr("name", name)
        .attr("class", type_id)
        .attr("constantPool", true)
        .child(label(text))
}

fn event_class(id: u64, name: &str, text: &str, category: &[&str], description: &str) -> Element {
    let mut cat = Element::new("annotation").attr("class", id::CATEGORY);
    // An array value is one attribute per element, `value-0`, `value-1`...
    for (i, c) in category.iter().enumerate() {
        cat = cat.attr(format!("value-{i}"), c);
    }
    Element::new("class")
        .attr("name", name)
        .attr("superType", "jdk.jfr.Event")
        .attr("id", id)
        .child(field("startTime", id::LONG, "Start Time").child(annotation(id::TIMESTAMP, "TICKS")))
        .child(label(text))
        .child(cat)
        .child(annotation(id::DESCRIPTION, description))
}

/// A `long` field of a metric, with its unit's annotation.
fn metric_field(name: &str, unit: &str) -> Element {
    let f = field(name, id::LONG, &label_of(name));
    match unit {
        NANOSECONDS => f.child(annotation(id::TIMESPAN, "NANOSECONDS")),
        BYTES => f.child(annotation(id::DATA_AMOUNT, "BYTES")),
        _ => f,
    }
}

/// The metadata event: every type the file uses, with the JDK's names and field layouts for
/// the JDK's types, and the context event's fields for `metrics`.
fn metadata(metrics: &[Metric], alloc: bool) -> Vec<u8> {
    let annotation_type = |id: u64, name: &str, array: bool| {
        let value = Element::new("field")
            .attr("name", "value")
            .attr("class", id::STRING);
        let value = if array {
            value.attr("dimension", 1)
        } else {
            value
        };
        Element::new("class")
            .attr("name", name)
            .attr("superType", "java.lang.annotation.Annotation")
            .attr("id", id)
            .child(value)
    };
    let simple = |id: u64, name: &str, field_name: &str, text: &str| {
        class(id, name)
            .attr("simpleType", true)
            .child(field(field_name, id::STRING, text))
    };
    let mut types = Element::new("metadata");
    for (id, name) in [
        (id::BOOLEAN, "boolean"),
        (id::INT, "int"),
        (id::LONG, "long"),
        (id::STRING, "java.lang.String"),
    ] {
        types.push(class(id, name));
    }
    types.push(annotation_type(id::LABEL, "jdk.jfr.Label", false));
    types.push(annotation_type(
        id::DESCRIPTION,
        "jdk.jfr.Description",
        false,
    ));
    types.push(annotation_type(id::CATEGORY, "jdk.jfr.Category", true));
    types.push(annotation_type(id::TIMESTAMP, "jdk.jfr.Timestamp", false));
    types.push(annotation_type(id::TIMESPAN, "jdk.jfr.Timespan", false));
    types.push(annotation_type(
        id::DATA_AMOUNT,
        "jdk.jfr.DataAmount",
        false,
    ));
    types.push(
        class(id::THREAD, "java.lang.Thread")
            .child(field("osName", id::STRING, "OS Thread Name"))
            .child(field("osThreadId", id::LONG, "OS Thread Id"))
            .child(field("javaName", id::STRING, "Java Thread Name"))
            .child(field("javaThreadId", id::LONG, "Java Thread Id"))
            .child(field("virtual", id::BOOLEAN, "Virtual Thread"))
            .child(label("Thread")),
    );
    types.push(
        class(id::STACK_TRACE, "jdk.types.StackTrace")
            .child(field("truncated", id::BOOLEAN, "Truncated"))
            .child(field("frames", id::STACK_FRAME, "Stack Frames").attr("dimension", 1))
            .child(label("Stacktrace")),
    );
    types.push(
        class(id::STACK_FRAME, "jdk.types.StackFrame")
            .child(pooled("method", id::METHOD, "Java Method"))
            .child(field("lineNumber", id::INT, "Line Number"))
            .child(field("bytecodeIndex", id::INT, "Bytecode Index"))
            .child(pooled("type", id::FRAME_TYPE, "Frame Type")),
    );
    types.push(
        class(id::METHOD, "jdk.types.Method")
            .child(pooled("type", id::CLASS, "Type"))
            .child(pooled("name", id::SYMBOL, "Name"))
            .child(pooled("descriptor", id::SYMBOL, "Descriptor"))
            .child(field("modifiers", id::INT, "Access Modifiers"))
            .child(field("hidden", id::BOOLEAN, "Hidden"))
            .child(label("Java Method")),
    );
    types.push(
        class(id::CLASS, "java.lang.Class")
            .child(pooled("name", id::SYMBOL, "Name"))
            .child(pooled("package", id::PACKAGE, "Package"))
            .child(field("modifiers", id::INT, "Access Modifiers"))
            .child(field("hidden", id::BOOLEAN, "Hidden"))
            .child(label("Java Class")),
    );
    types.push(
        class(id::PACKAGE, "jdk.types.Package")
            .child(pooled("name", id::SYMBOL, "Name"))
            .child(field("exported", id::BOOLEAN, "Exported"))
            .child(label("Package")),
    );
    types.push(simple(id::SYMBOL, "jdk.types.Symbol", "string", "String"));
    types.push(simple(
        id::FRAME_TYPE,
        "jdk.types.FrameType",
        "description",
        "Description",
    ));
    types.push(simple(
        id::THREAD_STATE,
        "jdk.types.ThreadState",
        "name",
        "Name",
    ));

    types.push(
        event_class(
            id::EXECUTION_SAMPLE,
            "jdk.ExecutionSample",
            "Java Execution Sample",
            &["Java Virtual Machine", "Profiling"],
            "Synthesised by ferrofluid from the exact self time of each calling context: one sample per period of self time",
        )
        .child(pooled("sampledThread", id::THREAD, "Thread"))
        .child(pooled("stackTrace", id::STACK_TRACE, "Stack Trace"))
        .child(pooled("state", id::THREAD_STATE, "Thread State")),
    );
    types.push(
        event_class(
            id::OBJECT_ALLOCATION_SAMPLE,
            "jdk.ObjectAllocationSample",
            "Object Allocation Sample",
            &["Java Application"],
            "One per allocation path recorded by ferrofluid, weighted by its exact allocated bytes",
        )
        .child(pooled("eventThread", id::THREAD, "Event Thread"))
        .child(pooled("stackTrace", id::STACK_TRACE, "Stack Trace"))
        .child(pooled("objectClass", id::CLASS, "Object Class"))
        .child(
            field("weight", id::LONG, "Sample Weight").child(annotation(id::DATA_AMOUNT, "BYTES")),
        ),
    );
    let mut context = event_class(
        id::CALLING_CONTEXT,
        "ferrofluid.CallingContext",
        "Calling Context",
        &["ferrofluid"],
        "One calling context of a thread's call tree with its exact values: own (self) and with callees (total)",
    )
    .child(pooled("eventThread", id::THREAD, "Event Thread"))
    .child(pooled("stackTrace", id::STACK_TRACE, "Stack Trace"));
    if alloc {
        context.push(pooled("objectClass", id::CLASS, "Object Class"));
    }
    for m in metrics {
        let (own, total) = metric_fields(m);
        context.push(metric_field(&own, &m.unit));
        if let Some(total) = total {
            context.push(metric_field(&total, &m.unit));
        }
    }
    types.push(context);
    let mut region = event_class(
        id::REGION,
        "ferrofluid.Region",
        "Code Region",
        &["ferrofluid"],
        "One region method: its outermost invocations and their compensated durations",
    )
    .child(pooled("method", id::METHOD, "Method"))
    .child(field("count", id::LONG, "Invocations"))
    .child(field("threads", id::LONG, "Threads"));
    for name in [
        "totalTime",
        "nestedTime",
        "minTime",
        "maxTime",
        "p50Time",
        "p90Time",
        "p99Time",
        "p999Time",
    ] {
        region.push(metric_field(name, NANOSECONDS));
    }
    types.push(region);

    let root = Element::new("root").child(types).child(
        Element::new("region")
            .attr("locale", "en_US")
            .attr("gmtOffset", 0)
            .attr("dst", 0),
    );
    let mut body = Buf::default();
    // start, duration, metadata id.
    body.varint(METADATA_EVENT).long(0).long(0).long(1);
    encode::metadata_payload(&root, &mut body);
    let mut out = Buf::default();
    out.event(&body.0);
    out.0
}

/// The events written so far, and the latest tick of any thread's samples.
struct Events {
    out: Buf,
    end_tick: u64,
}

impl Events {
    fn push(&mut self, body: &Buf) {
        self.out.event(&body.0);
    }
}

impl JfrReport {
    /// The bytes of the recording of `profile`.
    pub fn encode(&self, profile: &Profile) -> Vec<u8> {
        let period = self.period_ns.max(1);
        let mut pools = Pools::default();
        let mut events = Events {
            out: Buf::default(),
            end_tick: 0,
        };
        let alloc = profile.mode == Mode::Alloc;
        let metrics = if profile.mode == Mode::Region {
            Vec::new()
        } else {
            profile.metrics()
        };
        if let Some(regions) = &profile.regions {
            pools.threads.push(("all threads".to_owned(), 0, false));
            let mut tick = 0u64;
            for r in regions {
                let method = pools.method(&r.class, &r.method, &r.descriptor);
                let own = r.total_ns.saturating_sub(r.nested_ns);
                let stack = pools.stacks.key(vec![method]);
                for _ in 0..samples(own, period) {
                    let mut b = Buf::default();
                    b.varint(id::EXECUTION_SAMPLE)
                        .varint(tick)
                        .varint(1)
                        .varint(stack)
                        .varint(STATE_RUNNABLE);
                    events.push(&b);
                    tick += period;
                }
                let mut b = Buf::default();
                b.varint(id::REGION).varint(0).varint(method);
                for v in [
                    r.count,
                    r.threads,
                    r.total_ns,
                    r.nested_ns,
                    r.min_ns,
                    r.max_ns,
                    r.percentiles.p50_ns,
                    r.percentiles.p90_ns,
                    r.percentiles.p99_ns,
                    r.percentiles.p999_ns,
                ] {
                    b.varint(v);
                }
                events.push(&b);
            }
            events.end_tick = tick;
        }
        let time = profile
            .metric_index(TIME)
            .filter(|&i| metrics[i].unit == NANOSECONDS);
        // A sampling profile's samples are samples already.
        let taken = (profile.mode == Mode::Sample)
            .then(|| profile.metric_index("samples"))
            .flatten();
        let bytes = profile.metric_index(BYTES).filter(|_| alloc);
        for (t, thread) in profile.threads.iter().enumerate() {
            if profile.mode == Mode::Region {
                break;
            }
            let thread_key = t as u64 + 1;
            pools
                .threads
                .push((thread.name.clone(), thread.id, thread.virtual_thread));
            let tree = &thread.tree;
            let values: Vec<Vec<ferrofluid_profile::metric::Value>> = (0..metrics.len())
                .map(|i| profile.metric_values(tree, i))
                .collect();
            // Per node: its stack trace key (0: none) and, for an allocated class's node, the
            // class key.
            let mut stacks: Vec<(Vec<u64>, u64)> = vec![(Vec::new(), 0); tree.len()];
            let mut tick = 0u64;
            // The thread's own time (a native profile's bytecode outside every native frame):
            // samples without a stack trace.
            if let (Some(t), None) = (time, taken) {
                for _ in 0..samples(
                    values[t][ferrofluid_profile::NodeId::ROOT.index()].self_value,
                    period,
                ) {
                    let mut b = Buf::default();
                    b.varint(id::EXECUTION_SAMPLE)
                        .varint(tick)
                        .varint(thread_key)
                        .varint(0)
                        .varint(STATE_RUNNABLE);
                    events.push(&b);
                    tick += period;
                }
            }
            for (id, _) in tree.walk() {
                let node = tree.node(id);
                let Some(parent) = node.parent() else {
                    continue;
                };
                let parent_frames = stacks[parent.index()].0.clone();
                let allocated = match node.kind {
                    NodeKind::Method(m) => profile
                        .methods
                        .get(m)
                        .filter(|i| i.method.is_empty())
                        .map(|i: &MethodInfo| pools.class(&i.class)),
                    _ => None,
                };
                let (frames, class_key) = match allocated {
                    Some(c) => (parent_frames, c),
                    None => {
                        let mut f = Vec::with_capacity(parent_frames.len() + 1);
                        f.push(pools.frame(profile, node.kind));
                        f.extend_from_slice(&parent_frames);
                        (f, 0)
                    }
                };
                let stack = if frames.is_empty() {
                    0
                } else {
                    pools.stacks.key(frames.clone())
                };
                let own = |i: usize| values[i][id.index()].self_value;
                let n = match (time, taken) {
                    (_, Some(s)) => own(s),
                    (Some(t), None) => samples(own(t), period),
                    (None, None) => 0,
                };
                for _ in 0..n {
                    let mut b = Buf::default();
                    b.varint(id::EXECUTION_SAMPLE)
                        .varint(tick)
                        .varint(thread_key)
                        .varint(stack)
                        .varint(STATE_RUNNABLE);
                    events.push(&b);
                    tick += period;
                }
                if let Some(bytes) = bytes {
                    if own(bytes) > 0 {
                        let mut b = Buf::default();
                        b.varint(id::OBJECT_ALLOCATION_SAMPLE)
                            .varint(0)
                            .varint(thread_key)
                            .varint(stack)
                            .varint(class_key)
                            .varint(own(bytes));
                        events.push(&b);
                    }
                }
                let mut b = Buf::default();
                b.varint(id::CALLING_CONTEXT)
                    .varint(0)
                    .varint(thread_key)
                    .varint(stack);
                if alloc {
                    b.varint(class_key);
                }
                for (i, m) in metrics.iter().enumerate() {
                    let v = values[i][id.index()];
                    b.varint(v.self_value);
                    if metric_fields(m).1.is_some() {
                        b.varint(v.total);
                    }
                }
                events.push(&b);
                stacks[id.index()] = (frames, class_key);
            }
            events.end_tick = events.end_tick.max(tick);
        }
        let times = ChunkTimes {
            start_nanos: self.start_nanos,
            duration_nanos: i64::try_from(events.end_tick).unwrap_or(i64::MAX),
        };
        encode::chunk(
            &events.out.0,
            &pools.checkpoint(),
            &metadata(&metrics, alloc),
            &times,
        )
    }
}

/// Execution samples for `self_ns` of self time: rounded to the nearest period.
fn samples(self_ns: u64, period: u64) -> u64 {
    self_ns / period + u64::from(self_ns % period >= period.div_ceil(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_names_in_the_jvms_internal_form() {
        assert_eq!(internal_class_name("com.acme.Foo$Bar"), "com/acme/Foo$Bar");
        assert_eq!(internal_class_name("long[]"), "[J");
        assert_eq!(internal_class_name("int[][]"), "[[I");
        assert_eq!(
            internal_class_name("java.lang.String[]"),
            "[Ljava/lang/String;"
        );
    }

    #[test]
    fn context_fields_per_metric() {
        let f = |n: &str| metric_fields(&Metric::new(n, "count"));
        assert_eq!(f("calls"), ("calls".to_owned(), None));
        assert_eq!(
            f("cpu_time"),
            ("selfCpuTime".to_owned(), Some("totalCpuTime".to_owned()))
        );
        assert_eq!(label_of("selfCpuTime"), "Self Cpu Time");
    }

    #[test]
    fn samples_round_to_the_nearest_period() {
        assert_eq!(samples(0, 1_000), 0);
        assert_eq!(samples(499, 1_000), 0);
        assert_eq!(samples(500, 1_000), 1);
        assert_eq!(samples(1_499, 1_000), 1);
        assert_eq!(samples(2_500, 1_000), 3);
        assert_eq!(samples(7, 1), 7);
    }
}
