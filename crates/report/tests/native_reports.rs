//! A `native` profile in every format, with the same numbers everywhere: the bytecode/native
//! split per thread and in total, the native methods with calls and upcalls, the natives not
//! measured; folded stacks, pprof and speedscope adding up to the profile's totals of each
//! metric.

#[allow(dead_code)] // the other tests' profiles
mod common;

use ferrofluid_profile::native::{NATIVE_TIME, UPCALLS};
use ferrofluid_profile::Profile;
use ferrofluid_report::collapsed::CollapsedReport;
use ferrofluid_report::{Format, Report, Weight};

fn render(profile: &Profile, report: &dyn Report) -> String {
    let mut out = Vec::new();
    report.write(profile, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// The split of `common::native()`, worked out by hand: per request of the main thread, the
/// socket read (2000 us), the deflate (300 us) and the transform's own 80 us are native, less
/// 100 ns per call (the calibrated inner cost) and 50 ns per upcall the transform made; the
/// worker's sleep is native; the rest is bytecode.
const MAIN_NATIVE: u64 = 5_999_700 + 899_700 + 239_400;
const MAIN_BYTECODE: u64 = 299_250 + 209_550 + 59_400;
const WORKER_NATIVE: u64 = 4_999_900;
const WORKER_BYTECODE: u64 = 999_850;

#[test]
fn the_model_splits_as_worked_out() {
    let p = common::native();
    let main = p.native_split(0);
    assert_eq!(
        (main.native_ns, main.bytecode_ns),
        (MAIN_NATIVE, MAIN_BYTECODE)
    );
    let worker = p.native_split(1);
    assert_eq!(
        (worker.native_ns, worker.bytecode_ns),
        (WORKER_NATIVE, WORKER_BYTECODE)
    );
}

#[test]
fn text_report_has_the_split_the_natives_and_what_is_not_measured() {
    let p = common::native();
    let text = render(&p, &*Format::Text.writer());
    assert!(
        text.starts_with(
            "Native code: time in native methods against time in bytecode\n\
             all threads: 12.139 ms native (88.6%), 1.568 ms bytecode (11.4%) of 13.707 ms\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("       7.139    92.6%        0.568  main (id 1)\n"),
        "{text}"
    );
    assert!(
        text.contains("       5.000    83.3%        1.000  worker-1 (id 7)\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "       6.000   43.8%          3     1999.900        0       1  \
             java.net.SocketInputStream.socketRead0(Ljava/io/FileDescriptor;[BIII)I\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "       0.239    1.7%          3       79.800        6       1  \
             demo.Native.transform([B)I  [demo.Native.each(I)V 6]\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("\nNot measured: 3 native methods (their time counts as their callers' bytecode)\n\
             \x20 1 loaded before the agent (a wrapper can be added only as a class first loads): java.lang.Object.wait(J)V\n\
             \x20 1 JIT intrinsics (compiled callers may skip any wrapper): java.lang.System.arraycopy(Ljava/lang/Object;ILjava/lang/Object;II)V\n\
             \x20 1 no wrapper could be built: demo.Huge.compute()V (constant pool full)\n"),
        "{text}"
    );
    // Then the trees, by the mode's metrics.
    assert!(
        text.contains("metrics: calls (count), time (nanoseconds), native_time (nanoseconds), upcalls (count)\n"),
        "{text}"
    );
}

#[test]
fn html_report_has_the_same_numbers() {
    let p = common::native();
    let html = render(&p, &*Format::Html.writer());
    assert!(html.contains(
        "<p>All threads: 12.139 ms native (88.6%), 1.568 ms bytecode (11.4%) of 13.707 ms.</p>"
    ));
    assert!(html.contains(
        "<td data-v=\"5999700\">6.000</td><td data-v=\"5999700\">43.8%</td><td data-v=\"3\">3</td>"
    ));
    assert!(html.contains("<td class=\"m\" data-v=\"demo.Native.each(I)V 6\">"));
    assert!(html.contains("1 no wrapper could be built"));
}

/// Folded stacks by time add up to all threads' time (the thread lines are the bytecode outside
/// every root: none here); by `native_time`, to the native time, on native frames only.
#[test]
fn folded_stacks_add_up_to_the_split() {
    let p = common::native();
    let sum = |weight: Weight| -> (u64, Vec<String>) {
        let text = render(&p, &CollapsedReport::default().with_weight(weight));
        let mut total = 0;
        let mut leaves = Vec::new();
        for line in text.lines() {
            let (stack, v) = line.rsplit_once(' ').unwrap();
            total += v.parse::<u64>().unwrap();
            leaves.push(stack.rsplit(';').next().unwrap().to_owned());
        }
        (total, leaves)
    };
    let total = p.native_total();
    assert_eq!(sum(Weight::Primary).0, total.total_ns());
    let (native, leaves) = sum(Weight::Metric(NATIVE_TIME.to_owned()));
    assert_eq!(native, total.native_ns);
    assert_eq!(
        leaves,
        // Sorted by stack: main's under compress, transform, then the socket read; the worker's.
        [
            "java.util.zip.Deflater.deflateBytesBytes",
            "demo.Native.transform",
            "java.net.SocketInputStream.socketRead0",
            "java.lang.Thread.sleep"
        ]
    );
    assert_eq!(sum(Weight::Metric(UPCALLS.to_owned())).0, 6);
}

/// pprof: one sample type per metric, each summing to the profile's total of it; time first
/// in the viewer's default.
#[test]
fn pprof_sample_types_sum_to_the_totals() {
    let p = common::native();
    let proto = ferrofluid_report::pprof::encode(&p);
    let types: Vec<&str> = proto
        .sample_type
        .iter()
        .map(|t| proto.string_table[t.r#type as usize].as_str())
        .collect();
    assert_eq!(types, ["calls", "time", "native_time", "upcalls"]);
    assert_eq!(
        proto.string_table[proto.default_sample_type as usize],
        "time"
    );
    let sums: Vec<i64> = (0..types.len())
        .map(|i| proto.sample.iter().map(|s| s.value[i]).sum())
        .collect();
    let total = p.native_total();
    assert_eq!(
        sums,
        [
            3 * 5 + 6 + 2,
            total.total_ns() as i64,
            total.native_ns as i64,
            6
        ]
    );
}

/// speedscope: one profile per thread by time, adding up to each thread's split.
#[test]
fn speedscope_weighs_each_thread_by_its_time() {
    let p = common::native();
    let doc: serde_json::Value =
        serde_json::from_str(&render(&p, &*Format::Speedscope.writer())).unwrap();
    let totals: Vec<u64> = doc["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            p["weights"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| w.as_u64().unwrap())
                .sum()
        })
        .collect();
    assert_eq!(
        totals,
        [MAIN_NATIVE + MAIN_BYTECODE, WORKER_NATIVE + WORKER_BYTECODE]
    );
}

/// The JSON document carries the same split and table, and reads back the same profile.
#[test]
fn json_has_the_same_numbers_and_reads_back() {
    let p = common::native();
    let json = render(&p, &*Format::Json.writer());
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["native_ns"], MAIN_NATIVE + WORKER_NATIVE);
    assert_eq!(v["bytecode_ns"], MAIN_BYTECODE + WORKER_BYTECODE);
    assert_eq!(v["threads"][1]["native_ns"], WORKER_NATIVE);
    let natives: Vec<(&str, u64)> = v["natives"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["method"].as_str().unwrap(),
                n["native_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        natives,
        [
            ("socketRead0", 5_999_700),
            ("sleep", 4_999_900),
            ("deflateBytesBytes", 899_700),
            ("transform", 239_400)
        ]
    );
    assert_eq!(Profile::from_json_slice(json.as_bytes()).unwrap(), p);
}
