//! Every agent option, declared once: its key in the option string, how the command line takes
//! it, and its help. The option grammar ([`crate::AgentOptions`]) reads the keys from here, and
//! `ferrofluid run`/`attach` make a flag of each (`--KEY`), so an option added here is in both.

/// How a flag takes its option's value on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// No value: the flag given is `KEY=true`.
    Flag,
    /// One value, at most once.
    Value,
    /// One value per use; repeatable.
    Values,
}

/// One agent option.
#[derive(Debug, Clone, Copy)]
pub struct AgentOption {
    /// Its key in the option string, and the long flag's name.
    pub key: &'static str,
    pub takes: Takes,
    /// The value's placeholder in the command line's help and errors.
    pub value_name: &'static str,
    /// The command line's help.
    pub help: &'static str,
}

const fn option(
    key: &'static str,
    takes: Takes,
    value_name: &'static str,
    help: &'static str,
) -> AgentOption {
    AgentOption {
        key,
        takes,
        value_name,
        help,
    }
}

/// Every option, in the canonical order of the option string.
pub const OPTIONS: &[AgentOption] = &[
    option(
        "mode",
        Takes::Value,
        "MODE",
        "What to measure: cpu (call-subgraph profile under --root: calls and time per calling \
         context), region (code regions: durations of the --region methods), alloc \
         (allocations per site and class, tracked objects' ages and generations, leak suspects; \
         --track-every), count (exact calls and executed bytecodes per calling context, no clock; \
         --blocks), native (time in native methods against bytecode, per thread and per native \
         method, with JNI upcalls; every class from the JVM's start, at an attach the classes loaded \
         after it), sample (stack samples on a timer, \
         without safepoint bias: --interval, --wall, --threads; with --root only inside the \
         roots). Default: region with --region, else cpu. Each mode takes its own flags \
         (docs/agent-options.md, docs/modes/)",
    ),
    option(
        "root",
        Takes::Values,
        "METHOD",
        "Root method pattern of the profiled call subgraph, e.g. `com.acme.Report::render`, \
         `com.acme.**::run(I)V`, `*::main` (repeatable; grammar in docs/subgraph.md)",
    ),
    option(
        "region",
        Takes::Values,
        "METHOD",
        "Code-region mode (short for `--mode region`): instrument only the methods matching this \
         pattern and measure the wall time of each outermost invocation (count, mean, \
         percentiles, last durations); excludes --root (repeatable)",
    ),
    option(
        "region-last",
        Takes::Value,
        "N",
        "With --region: how many of the last durations to keep (default 100)",
    ),
    option(
        "include",
        Takes::Values,
        "CLASSES",
        "Only instrument classes matching this pattern, e.g. `com.acme.**` (repeatable)",
    ),
    option(
        "exclude",
        Takes::Values,
        "CLASSES",
        "Never instrument classes matching this pattern, e.g. `java.**` (repeatable; wins over \
         --include)",
    ),
    option(
        "scheme",
        Takes::Value,
        "SCHEME",
        "Instrumentation scheme: lazy, eager or total",
    ),
    option(
        "blocks",
        Takes::Value,
        "BLOCKS",
        "With --mode count: where the bytecode counters end a block: `default` (at control \
         transfers; a block cut short by an exception counts whole) or `precise` (also after every \
         instruction that may throw: exact under exceptions, more counter updates)",
    ),
    option(
        "cpu",
        Takes::Flag,
        "",
        "Also measure each method's thread CPU time (every recorded probe reads the thread's CPU \
         clock, which makes probes slower; see docs/PERFORMANCE.md)",
    ),
    option(
        "skip-trivial",
        Takes::Flag,
        "",
        "Leave trivial methods uninstrumented (at most 35 bytes of bytecode, no loop, no call, no \
         allocation): their few nanoseconds count in their callers' self time, where no probe \
         cost has to be subtracted, and their calls are not counted. Roots are always \
         instrumented",
    ),
    option(
        "adaptive",
        Takes::Flag,
        "",
        "Remove, as the program runs, the probes of methods called at least 10000 times that take \
         less time than their own probes (YourKit calls this adaptive tracing): their later calls \
         count in their callers' self time and are not counted, which cuts the probe cost \
         severalfold in real programs. With `timing=sampled`: the probes of the most-called \
         methods go until the calls left are estimated to cost at most 5% of the CPU time inside \
         roots. Reports mark them \"(probes removed)\". Roots always keep their probes",
    ),
    option(
        "reveal",
        Takes::Value,
        "WHEN",
        "When a method's callees are instrumented at its first invocation: `sync` before it \
         proceeds (every call counted; each thread reaching new code waits), `async` on the \
         agent's thread a few ms later, many classes at once (the calls made meanwhile are not \
         seen, and counted). Default: async for `attach` (a live server keeps serving), sync for \
         `run`",
    ),
    option(
        "track-every",
        Takes::Value,
        "N",
        "With --mode alloc: track every N-th allocation of each site (age, surviving generations, \
         allocation stack); 0 counts only. Default 10",
    ),
    option(
        "track-bytes",
        Takes::Value,
        "SIZE",
        "With --mode alloc: track by bytes instead of --track-every: a site's first object, then \
         one each time about SIZE more bytes were allocated there (e.g. 512k, 1m; cheaper than \
         every N-th for sites that allocate much)",
    ),
    option(
        "stack-depth",
        Takes::Value,
        "D",
        "With --mode alloc: frames kept of a tracked object's allocation stack (1-1024, default \
         64)",
    ),
    option(
        "alloc-class",
        Takes::Values,
        "CLASSES",
        "With --mode alloc: probe only the sites that allocate classes matching this pattern, \
         arrays as Java writes them, e.g. `com.acme.Cache$Entry`, `byte[]`, `com.acme.**[]` \
         (repeatable; default every class). A second `attach --mode alloc --alloc-class P` to \
         a JVM whose alloc session runs narrows that session to P, keeping what it collected",
    ),
    option(
        "timing",
        Takes::Value,
        "TIMING",
        "With --mode cpu: how time is measured. sampled: the probes count every call exactly per \
         calling context (in Java, no clock read) and a sampler charges each thread's CPU time \
         (--wall: and elapsed time, off-CPU time by thread state) to its current context every \
         --interval; probes: each call timed by its probes, compensated for their cost \
         (per-call precision, more overhead). Default: sampled for attach, probes for run and \
         -agentpath",
    ),
    option(
        "record",
        Takes::Value,
        "WHICH",
        "With --timing sampled and --root: which root invocations are recorded, each one whole \
         (every call under it counted). all: every one. auto: every one for the first 5 s, then, \
         where recording slows the roots down, only those entered in a share of each two \
         seconds, set from the CPU time of recorded and unrecorded invocations to keep the \
         program near 90% of its speed. N%: those entered in the first N% of each two \
         seconds. The report says how many were recorded of how many. Default: auto for \
         attach, all for run and -agentpath",
    ),
    option(
        "interval",
        Takes::Value,
        "DURATION",
        "With --mode sample or --timing sampled: the sampling interval, of each thread's CPU \
         time (or of elapsed time with --wall), from 1ms to 1m (default 10ms: 100 samples per \
         second of CPU)",
    ),
    option(
        "wall",
        Takes::Flag,
        "",
        "With --mode sample: sample every thread at the interval of elapsed time, waiting and \
         sleeping ones included (wall-clock profile), instead of each thread's CPU time. With \
         --timing sampled: charge elapsed time too, a thread's off-CPU time to a frame naming \
         its state ([blocked: native], [blocked: monitor], ...) under its current context",
    ),
    option(
        "instrument-inlined",
        Takes::Flag,
        "",
        "With --timing sampled: also instrument the classes the JIT inlined into at least 5% of \
         the compiled methods of a JVM that has compiled 1000 or more (java.lang.String, \
         java.lang.Object, ...), which are otherwise left alone: retransforming one discards \
         every compiled method holding it, and a busy server runs interpreted for tens of \
         seconds while the JIT recompiles them. Their calls are then counted; without it they \
         count in their callers' self time. The agent's log names the classes left alone",
    ),
    option(
        "threads",
        Takes::Flag,
        "",
        "With --mode sample: one tree per thread (default: the threads' samples merged into one \
         tree, as async-profiler does without --threads)",
    ),
    option(
        "file",
        Takes::Value,
        "PATH",
        "File the agent writes the profile to when profiling stops",
    ),
    option(
        "duration",
        Takes::Value,
        "DURATION",
        "Stop profiling after this long (e.g. 30s, 500ms, 2m)",
    ),
    option(
        "push",
        Takes::Value,
        "URL",
        "Continuous profiling: every --every, send the profile collected since the last push to \
         a backend, collection going on, and what is left when profiling ends. The URL's path \
         names the backend: .../ingest or .../push.v1.PusherService/Push (Pyroscope), \
         .../profiles/writeraw or .../parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw \
         (Parca), .../v1development/profiles (OpenTelemetry OTLP/HTTP). Credentials come from \
         FERROFLUID_PUSH_AUTHORIZATION, _BASIC_AUTH, _BEARER_TOKEN and _TENANT (docs/push.md)",
    ),
    option(
        "every",
        Takes::Value,
        "DURATION",
        "With --push: how often to push (default 60s; at least 1s)",
    ),
    option(
        "label",
        Takes::Values,
        "KEY=VALUE",
        "With --push: a label every push carries (repeatable); service_name, host, pid and mode \
         are set already and may be replaced",
    ),
    option(
        "log",
        Takes::Value,
        "PATH",
        "The agent's log file (in the JVM's file system)",
    ),
    option(
        "socket",
        Takes::Value,
        "PATH",
        "The agent's control socket (in the JVM's file system; its directory must be private)",
    ),
];

/// Every accepted key, in the canonical order `Display` writes them.
pub const KEYS: &[&str] = &keys();

const fn keys() -> [&'static str; OPTIONS.len()] {
    let mut keys = [""; OPTIONS.len()];
    let mut i = 0;
    while i < OPTIONS.len() {
        keys[i] = OPTIONS[i].key;
        i += 1;
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference page documents every option, with its key in the table of keys.
    #[test]
    fn every_option_is_documented() {
        let page = include_str!("../../../docs/agent-options.md");
        for o in OPTIONS {
            assert!(
                page.contains(&format!("| `{}` |", o.key)),
                "docs/agent-options.md: no row for `{}`",
                o.key
            );
        }
    }

    #[test]
    fn keys_are_unique_and_flags_have_no_value_name() {
        for (i, o) in OPTIONS.iter().enumerate() {
            assert!(!KEYS[..i].contains(&o.key), "{}", o.key);
            assert_eq!(o.takes == Takes::Flag, o.value_name.is_empty(), "{}", o.key);
            assert!(!o.help.is_empty());
        }
    }
}
