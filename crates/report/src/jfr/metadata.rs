//! The metadata event: the type ids and every type the file uses, the JDK's with their names and
//! field layouts, ferrofluid's own events with a field per metric.

use ferrofluid_profile::metric::{BYTES, CALLS, NANOSECONDS};
use ferrofluid_profile::Metric;

use crate::jfr::encode::{Buf, Element, METADATA_EVENT};

/// Type ids of the metadata. Event types and other types share one id space; 0 and 1 are
/// the metadata and checkpoint events'.
pub(crate) mod id {
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

/// The fields of `ferrofluid.CallingContext` for one metric: the context's own value, and
/// its total with callees for the metrics where that adds up (all but calls).
pub(crate) fn metric_fields(metric: &Metric) -> (String, Option<String>) {
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
pub(crate) fn label_of(field: &str) -> String {
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
pub(crate) fn metadata(metrics: &[Metric], alloc: bool) -> Vec<u8> {
    let mut types = Element::new("metadata");
    jdk_types(&mut types);
    jdk_events(&mut types);
    types.push(context_event(metrics, alloc));
    types.push(region_event());
    let root = Element::new("root").child(types).child(
        Element::new("region")
            .attr("locale", "en_US")
            .attr("gmtOffset", 0)
            .attr("dst", 0),
    );
    let mut body = Buf::default();
    // start, duration, metadata id.
    body.varint(METADATA_EVENT).long(0).long(0).long(1);
    crate::jfr::encode::metadata_payload(&root, &mut body);
    let mut out = Buf::default();
    out.event(&body.0);
    out.0
}

/// An annotation type whose `value` is a string (an array of them if `array`).
fn annotation_type(id: u64, name: &str, array: bool) -> Element {
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
}

/// A simple type: one string field.
fn simple(id: u64, name: &str, field_name: &str, text: &str) -> Element {
    class(id, name)
        .attr("simpleType", true)
        .child(field(field_name, id::STRING, text))
}

/// The JDK's types the events use: primitives, annotations, threads, stack traces, methods,
/// classes, packages, symbols, frame types and thread states.
fn jdk_types(types: &mut Element) {
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
}

/// The JDK's events ferrofluid writes: execution samples and allocation samples.
fn jdk_events(types: &mut Element) {
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
}

/// `ferrofluid.CallingContext`, with a field per metric (its own value and, where it adds up, its
/// total) and the allocated class of an allocation profile's contexts.
fn context_event(metrics: &[Metric], alloc: bool) -> Element {
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
    context
}

/// `ferrofluid.Region`: a region method's invocations and durations.
fn region_event() -> Element {
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
    region
}
