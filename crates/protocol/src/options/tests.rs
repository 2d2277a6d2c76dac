//! The grammar both ways, its errors, and which options each mode takes.

use super::*;

fn root(s: &str) -> MethodPattern {
    s.parse().unwrap()
}

fn class(s: &str) -> ClassPattern {
    s.parse().unwrap()
}

/// (input, parsed value, canonical form)
fn valid_cases() -> Vec<(&'static str, AgentOptions, &'static str)> {
    let d = AgentOptions::default;
    vec![
        ("", d(), ""),
        (",,", d(), ""),
        ("scheme=lazy", d(), ""),
        (
            "root=com.acme.Foo::bar,scheme=eager,file=out.json,duration=30s,log=/tmp/x.log,socket=/tmp/ff/s",
            AgentOptions {
                roots: vec![root("com.acme.Foo::bar")],
                scheme: Scheme::Eager,
                file: Some("out.json".into()),
                duration: Some(Duration::from_secs(30)),
                log: Some("/tmp/x.log".into()),
                socket: Some("/tmp/ff/s".into()),
                ..d()
            },
            "root=com.acme.Foo::bar,scheme=eager,file=out.json,duration=30s,log=/tmp/x.log,socket=/tmp/ff/s",
        ),
        (
            "socket=/s,exclude=java.**,root=A::*,include=com.acme.**,root=p.B$Inner::<init>(ILjava/lang/String;)V,\
             scheme=total,duration=1500ms,exclude=jdk.**",
            AgentOptions {
                roots: vec![root("A::*"), root("p.B$Inner::<init>(ILjava/lang/String;)V")],
                filter: ClassFilter {
                    include: vec![class("com.acme.**")],
                    exclude: vec![class("java.**"), class("jdk.**")],
                },
                scheme: Scheme::Total,
                duration: Some(Duration::from_millis(1500)),
                socket: Some("/s".into()),
                ..d()
            },
            "root=A::*,root=p.B$Inner::<init>(ILjava/lang/String;)V,include=com.acme.**,exclude=java.**,\
             exclude=jdk.**,scheme=total,duration=1500ms,socket=/s",
        ),
        // Internal names are accepted and printed in the Java spelling.
        (
            "root=com/acme/Foo::bar",
            AgentOptions { roots: vec![root("com.acme.Foo::bar")], ..d() },
            "root=com.acme.Foo::bar",
        ),
        ("duration=120s", AgentOptions { duration: Some(Duration::from_secs(120)), ..d() }, "duration=2m"),
        ("cpu=false", d(), ""),
        (
            "file=o.json,cpu=true,root=A::b",
            AgentOptions { roots: vec![root("A::b")], cpu: true, file: Some("o.json".into()), ..d() },
            "root=A::b,cpu=true,file=o.json",
        ),
        ("skip-trivial=false", d(), ""),
        (
            "skip-trivial=true,root=A::b",
            AgentOptions { roots: vec![root("A::b")], skip_trivial: true, ..d() },
            "root=A::b,skip-trivial=true",
        ),
        ("adaptive=false", d(), ""),
        ("reveal=sync", d(), ""),
        (
            "reveal=async,root=A::b",
            AgentOptions { roots: vec![root("A::b")], reveal: Reveal::Async, ..d() },
            "root=A::b,reveal=async",
        ),
        (
            "adaptive=true,skip-trivial=true,root=A::b",
            AgentOptions { roots: vec![root("A::b")], skip_trivial: true, adaptive: true, ..d() },
            "root=A::b,skip-trivial=true,adaptive=true",
        ),
        (
            "file=r.json,region-last=7,region=demo.Work::step(I)V,region=B::*",
            AgentOptions {
                region: vec![root("demo.Work::step(I)V"), root("B::*")],
                region_last: Some(7),
                file: Some("r.json".into()),
                ..d()
            },
            "region=demo.Work::step(I)V,region=B::*,region-last=7,file=r.json",
        ),
        (
            "label=env=prod,mode=count,every=120s,push=https://p:4040/ingest,label=service_name=billing",
            AgentOptions {
                mode: Some(Mode::Count),
                push: crate::push::PushOptions {
                    url: Some("https://p:4040/ingest".into()),
                    every: Some(Duration::from_secs(120)),
                    labels: vec![
                        ("env".into(), "prod".into()),
                        ("service_name".into(), "billing".into()),
                    ],
                },
                ..d()
            },
            "mode=count,push=https://p:4040/ingest,every=2m,label=env=prod,label=service_name=billing",
        ),
    ]
}

#[test]
fn parses_and_prints_canonically() {
    for (input, value, canonical) in valid_cases() {
        let parsed: AgentOptions = input.parse().unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(parsed, value, "{input}");
        assert_eq!(parsed.to_string(), canonical, "{input}");
        assert_eq!(
            canonical.parse::<AgentOptions>().unwrap(),
            value,
            "canonical form round-trips"
        );
        assert_eq!(value.validate(), Ok(()));
    }
}

#[test]
fn errors_name_the_key_and_accepted_values() {
    let keys = "accepted: mode, root, region, region-last, include, exclude, scheme, blocks, cpu, skip-trivial, adaptive, reveal, track-every, track-bytes, stack-depth, alloc-class, timing, record, interval, wall, instrument-inlined, threads, file, duration, push, every, label, log, socket";
    let cases = [
        ("sceme=lazy", format!("unknown agent option `sceme` (did you mean `scheme`?); {keys}")),
        ("verbose", format!("unknown agent option `verbose`; {keys}")),
        ("file=", "agent option `file` needs a value: `file=...`".into()),
        ("root", "agent option `root` needs a value: `root=...`".into()),
        ("scheme=fast", "bad value `fast` for agent option `scheme`: expected one of lazy, eager, total".into()),
        (
            "duration=30",
            "bad value `30` for agent option `duration`: expected a positive whole number with unit ms, s, m or h (e.g. 30s)".into(),
        ),
        (
            "root=com.acme.Foo.bar",
            "bad value `com.acme.Foo.bar` for agent option `root`: expected CLASS::METHOD (e.g. com.acme.Report::render)".into(),
        ),
        (
            "root=Foo::bar(I",
            "bad value `Foo::bar(I` for agent option `root`: `(I` is not a method descriptor such as (ILjava/lang/String;)V".into(),
        ),
        (" root=A::b", format!("unknown agent option ` root` (did you mean `root`?); {keys}")),
        ("root= A::b", "bad value ` A::b` for agent option `root`: leading or trailing space".into()),
        (
            "exclude=java..lang",
            "bad value `java..lang` for agent option `exclude`: empty package or class name between separators".into(),
        ),
        ("file= out.json", "bad value ` out.json` for agent option `file`: expected a non-empty path without commas".into()),
        ("file=a,file=b", "agent option `file` given twice".into()),
        ("scheme=lazy,scheme=eager", "agent option `scheme` given twice".into()),
        ("duration=1s,duration=2s", "agent option `duration` given twice".into()),
        (
            "root=A::b,region=C::d",
            "agent options `root` and `region` exclude each other: `region` measures only its own methods, `root` profiles a call subgraph".into(),
        ),
        ("region-last=5", "agent option `region-last` needs `region`".into()),
        ("region=C::d,region-last=-1", "bad value `-1` for agent option `region-last`: expected a whole number from 0 to 100000".into()),
        ("region=C::d,region-last=100001", "bad value `100001` for agent option `region-last`: expected a whole number from 0 to 100000".into()),
        ("region=C::d,region-last=1,region-last=2", "agent option `region-last` given twice".into()),
        ("cpu=yes", "bad value `yes` for agent option `cpu`: expected true or false".into()),
        ("cpu=true,cpu=true", "agent option `cpu` given twice".into()),
        (
            "skip-trivial=1",
            "bad value `1` for agent option `skip-trivial`: expected true or false".into(),
        ),
        (
            "skip-trivial=true,skip-trivial=false",
            "agent option `skip-trivial` given twice".into(),
        ),
        ("adaptive=on", "bad value `on` for agent option `adaptive`: expected true or false".into()),
        ("reveal=later", "bad value `later` for agent option `reveal`: expected sync or async".into()),
        ("reveal=sync,reveal=async", "agent option `reveal` given twice".into()),
        ("adaptive=true,adaptive=true", "agent option `adaptive` given twice".into()),
        (
            "region=C::d,adaptive=true",
            "agent options `adaptive` and `region` exclude each other: code-region mode has no probes to remove".into(),
        ),
        (
            "region=C::d,cpu=true",
            "agent options `cpu` and `region` exclude each other: code-region mode measures wall time only".into(),
        ),
        ("every=10s", "agent option `every` needs `push`".into()),
        ("label=env=prod", "agent option `label` needs `push`".into()),
        (
            "push=pyroscope:4040/ingest",
            "bad value `pyroscope:4040/ingest` for agent option `push`: expected an http:// or https:// URL".into(),
        ),
        ("push=http://a/ingest,push=http://b/ingest", "agent option `push` given twice".into()),
        (
            "push=http://a/ingest,every=500ms",
            "bad value `500ms` for agent option `every`: expected a whole number with unit ms, s, m or h, at least 1s".into(),
        ),
        (
            "push=http://a/ingest,label=9x=1",
            "bad value `9x=1` for agent option `label`: label name `9x`: expected letters, digits and `_`, not starting with a digit or `__`".into(),
        ),
        (
            "push=http://a/ingest,label=dropped_profiles=1",
            "bad value `dropped_profiles=1` for agent option `label`: label name `dropped_profiles` is set by ferrofluid itself".into(),
        ),
        ("region=C.d", "bad value `C.d` for agent option `region`: expected CLASS::METHOD (e.g. com.acme.Report::render)".into()),
    ];
    for (input, message) in cases {
        let err = input.parse::<AgentOptions>().unwrap_err();
        assert_eq!(err.to_string(), message, "{input}");
    }
}

#[test]
fn mode_is_one_option_and_each_mode_says_what_it_takes() {
    let d = AgentOptions::default;
    for mode in Mode::ALL {
        let s = format!("mode={mode}");
        let parsed: AgentOptions = s.parse().unwrap();
        assert_eq!(
            parsed,
            AgentOptions {
                mode: Some(mode),
                ..d()
            }
        );
        assert_eq!(parsed.to_string(), s);
        assert_eq!(parsed.mode(), mode);
    }
    // `region=` alone is region mode; nothing is cpu mode.
    assert_eq!(
        "region=A::b".parse::<AgentOptions>().unwrap().mode(),
        Mode::Region
    );
    assert_eq!(d().mode(), Mode::Cpu);
    let canonical = "mode=region,region=A::b,region-last=3,include=a.**,file=r.json";
    let parsed: AgentOptions = "file=r.json,include=a.**,region-last=3,region=A::b,mode=region"
        .parse()
        .unwrap();
    assert_eq!(parsed.to_string(), canonical);
    let cases = [
        ("mode=fast", "bad value `fast` for agent option `mode`: expected one of cpu, region, alloc, count, native, sample"),
        ("mode=cpu,mode=cpu", "agent option `mode` given twice"),
        ("mode=cpu,region=A::b", "agent option `region` does not apply to mode cpu; mode cpu takes root, include, exclude, scheme, cpu, skip-trivial, adaptive, reveal, timing, record, interval, wall, instrument-inlined"),
        ("mode=region,root=A::b", "agent options `root` and `region` exclude each other: `region` measures only its own methods, `root` profiles a call subgraph"),
        ("mode=region,scheme=eager", "agent option `scheme` does not apply to mode region; mode region takes region, region-last, include, exclude, reveal"),
        ("mode=sample,cpu=true", "agent option `cpu` does not apply to mode sample; mode sample takes root, include, exclude, reveal, interval, wall, threads"),
        ("mode=count,region-last=4", "agent option `region-last` needs `region`"),
        ("mode=native,blocks=precise", "agent option `blocks` does not apply to mode native; mode native takes root, include, exclude, scheme, cpu, reveal"),
        ("mode=native,adaptive=true", "agent option `adaptive` does not apply to mode native; mode native takes root, include, exclude, scheme, cpu, reveal"),
    ];
    for (input, message) in cases {
        let err = input.parse::<AgentOptions>().unwrap_err();
        assert_eq!(err.to_string(), message, "{input}");
    }
    // The native mode's: whole program (classes selected) or roots, with thread CPU time;
    // `reveal` as `ferrofluid attach` sends it.
    let native = "mode=native,root=A::b,include=com.acme.**,scheme=eager,cpu=true,reveal=async";
    assert_eq!(native.parse::<AgentOptions>().unwrap().to_string(), native);
    // Options common to every mode are always taken.
    for mode in Mode::ALL {
        let s = format!("mode={mode},file=p.json,duration=1s,log=/l,socket=/s");
        assert!(s.parse::<AgentOptions>().is_ok(), "{s}");
    }
    assert_eq!(
        mode_unavailable(Mode::Sample),
        "mode sample is not available in this agent (available: cpu, region, alloc, count, native, sample)"
    );
    // Every mode has an engine in this agent.
    assert!(Mode::ALL.iter().all(|m| AGENT_MODES.contains(m)));
}

#[test]
fn alloc_class_is_allocs_own_repeatable_option() {
    let parsed: AgentOptions =
        "alloc-class=byte[],mode=alloc,include=com.acme.**,alloc-class=com.acme.Cache$Entry"
            .parse()
            .unwrap();
    let names: Vec<String> = parsed.alloc_classes.iter().map(|p| p.to_string()).collect();
    assert_eq!(names, ["byte[]", "com.acme.Cache$Entry"]);
    assert!(parsed.alloc_classes[0].matches("[B"));
    assert!(parsed.alloc_classes[1].matches("com/acme/Cache$Entry"));
    let canonical =
        "mode=alloc,include=com.acme.**,alloc-class=byte[],alloc-class=com.acme.Cache$Entry";
    assert_eq!(parsed.to_string(), canonical);
    assert_eq!(canonical.parse::<AgentOptions>().unwrap(), parsed);
    // On the wire (an `instrument` request), as canonical strings.
    let wire = serde_json::to_value(&parsed).unwrap();
    assert_eq!(
        wire["alloc_classes"],
        serde_json::json!(["byte[]", "com.acme.Cache$Entry"])
    );
    assert_eq!(
        serde_json::from_value::<AgentOptions>(wire).unwrap(),
        parsed
    );
    let without = serde_json::to_value(AgentOptions::default()).unwrap();
    assert!(without.get("alloc_classes").is_none());
    let cases = [
        ("mode=alloc,alloc-class=byte[", "bad value `byte[` for agent option `alloc-class`: character '[' at 4 cannot appear in a class name"),
        ("mode=alloc,alloc-class=[]", "bad value `[]` for agent option `alloc-class`: the class part is empty (use `*` for any class)"),
        ("mode=alloc,alloc-class= a.B", "bad value ` a.B` for agent option `alloc-class`: leading or trailing space"),
        ("alloc-class=a.B", "agent option `alloc-class` does not apply to mode cpu; mode cpu takes root, include, exclude, scheme, cpu, skip-trivial, adaptive, reveal, timing, record, interval, wall, instrument-inlined"),
        ("mode=count,alloc-class=a.B", "agent option `alloc-class` does not apply to mode count; mode count takes root, include, exclude, scheme, blocks, reveal"),
    ];
    for (input, message) in cases {
        let err = input.parse::<AgentOptions>().unwrap_err();
        assert_eq!(err.to_string(), message, "{input}");
    }
}

#[test]
fn blocks_is_counts_own_option() {
    let parsed: AgentOptions = "blocks=precise,root=A::f,mode=count".parse().unwrap();
    assert_eq!(parsed.blocks, Blocks::Precise);
    assert_eq!(parsed.to_string(), "mode=count,root=A::f,blocks=precise");
    // The default is not written.
    let default: AgentOptions = "mode=count,blocks=default".parse().unwrap();
    assert_eq!(
        (default.blocks, default.to_string().as_str()),
        (Blocks::Default, "mode=count")
    );
    let cases = [
        ("mode=count,blocks=exact", "bad value `exact` for agent option `blocks`: expected default or precise"),
        ("mode=count,blocks=precise,blocks=precise", "agent option `blocks` given twice"),
        ("blocks=precise", "agent option `blocks` does not apply to mode cpu; mode cpu takes root, include, exclude, scheme, cpu, skip-trivial, adaptive, reveal, timing, record, interval, wall, instrument-inlined"),
        ("mode=count,skip-trivial=true", "agent option `skip-trivial` does not apply to mode count; mode count takes root, include, exclude, scheme, blocks, reveal"),
    ];
    for (input, message) in cases {
        let err = input.parse::<AgentOptions>().unwrap_err();
        assert_eq!(err.to_string(), message, "{input}");
    }
}

#[test]
fn validate_rejects_paths_that_would_not_round_trip() {
    let opts = AgentOptions {
        file: Some("a,b.json".into()),
        ..Default::default()
    };
    assert_eq!(
        opts.validate().unwrap_err().to_string(),
        "bad value `a,b.json` for agent option `file`: expected a non-empty path without commas"
    );
}

#[test]
fn interval_wall_and_threads_are_samples_own_options() {
    let parsed: AgentOptions = "threads=true,interval=1ms,mode=sample,wall=true,root=A::b"
        .parse()
        .unwrap();
    assert_eq!(
        (parsed.interval(), parsed.wall, parsed.threads),
        (Duration::from_millis(1), true, true)
    );
    let canonical = "mode=sample,root=A::b,interval=1ms,wall=true,threads=true";
    assert_eq!(parsed.to_string(), canonical);
    assert_eq!(canonical.parse::<AgentOptions>().unwrap(), parsed);
    // On the wire (an `instrument` request): the interval in ms.
    let wire = serde_json::to_value(&parsed).unwrap();
    assert_eq!(wire["interval"], serde_json::json!(1));
    assert_eq!(
        serde_json::from_value::<AgentOptions>(wire).unwrap(),
        parsed
    );
    let default: AgentOptions = "mode=sample".parse().unwrap();
    assert_eq!(default.interval(), DEFAULT_SAMPLE_INTERVAL);
    assert!(serde_json::to_value(&default)
        .unwrap()
        .get("interval")
        .is_none());
    let reason = "expected a whole number of ms, s or m from 1ms to 1m (e.g. 10ms)";
    let cases = [
        ("mode=sample,interval=0ms", format!("bad value `0ms` for agent option `interval`: {reason}")),
        ("mode=sample,interval=2h", format!("bad value `2h` for agent option `interval`: {reason}")),
        ("mode=sample,interval=10", format!("bad value `10` for agent option `interval`: {reason}")),
        ("mode=sample,interval=1ms,interval=2ms", "agent option `interval` given twice".into()),
        ("mode=sample,wall=yes", "bad value `yes` for agent option `wall`: expected true or false".into()),
        ("interval=1ms", "agent option `interval` applies to mode cpu only with `timing=sampled`".into()),
        ("wall=true", "agent option `wall` applies to mode cpu only with `timing=sampled`".into()),
        ("timing=sampled,cpu=true", "agent option `cpu` needs `timing=probes`: sampled timing has no per-call clock".into()),
        ("timing=fast", "bad value `fast` for agent option `timing`: expected probes or sampled".into()),
        ("mode=count,timing=sampled", "agent option `timing` does not apply to mode count; mode count takes root, include, exclude, scheme, blocks, reveal".into()),
        ("mode=count,threads=true", "agent option `threads` does not apply to mode count; mode count takes root, include, exclude, scheme, blocks, reveal".into()),
        ("root=A::b,record=auto", "agent option `record` applies to mode cpu only with `timing=sampled`".into()),
        ("timing=sampled,record=all", "agent option `record` needs `root`: with no root every thread records all along".into()),
        ("timing=sampled,root=A::b,record=0%", "bad value `0%` for agent option `record`: expected all, auto or a share from 1% to 100%".into()),
        ("timing=sampled,root=A::b,record=half", "bad value `half` for agent option `record`: expected all, auto or a share from 1% to 100%".into()),
        ("timing=sampled,root=A::b,record=all,record=auto", "agent option `record` given twice".into()),
    ];
    for (input, message) in cases {
        let err = input.parse::<AgentOptions>().unwrap_err();
        assert_eq!(err.to_string(), message, "{input}");
    }
    let sampled: AgentOptions = "wall=true,interval=5ms,timing=sampled,root=A::b"
        .parse()
        .unwrap();
    assert_eq!(
        (sampled.timing, sampled.interval(), sampled.wall),
        (Timing::Sampled, Duration::from_millis(5), true)
    );
    assert_eq!(
        sampled.to_string(),
        "root=A::b,timing=sampled,interval=5ms,wall=true"
    );
    assert_eq!(AgentOptions::default().timing, Timing::Probes);
    for (value, record) in [
        ("all", Record::All),
        ("auto", Record::Auto),
        ("20%", Record::Share(200)),
        ("2.5%", Record::Share(25)),
        ("100%", Record::Share(1000)),
    ] {
        let o: AgentOptions = format!("root=A::b,timing=sampled,record={value}")
            .parse()
            .unwrap();
        assert_eq!(o.record, Some(record), "{value}");
        assert_eq!(
            o.to_string(),
            format!("root=A::b,timing=sampled,record={value}")
        );
    }
    let far = AgentOptions {
        mode: Some(Mode::Sample),
        interval: Some(Duration::from_secs(61)),
        ..AgentOptions::default()
    };
    assert_eq!(
        far.validate().unwrap_err().to_string(),
        format!("bad value `61s` for agent option `interval`: {reason}")
    );
}

#[test]
fn track_bytes_takes_a_size_and_excludes_track_every() {
    let o = "mode=alloc,track-bytes=512k"
        .parse::<AgentOptions>()
        .unwrap();
    assert_eq!((o.track_bytes(), o.track_every()), (512 << 10, 0));
    assert_eq!(o.to_string(), "mode=alloc,track-bytes=512k");
    for (value, bytes) in [
        ("4096", 4096),
        ("1m", 1 << 20),
        ("1g", 1 << 30),
        ("1536", 1536),
    ] {
        let o = format!("mode=alloc,track-bytes={value}")
            .parse::<AgentOptions>()
            .unwrap();
        assert_eq!(o.track_bytes(), bytes, "{value}");
        assert_eq!(
            o.to_string().parse::<AgentOptions>().unwrap().track_bytes(),
            bytes
        );
    }
    for bad in ["0", "0k", "2g", "-1", "512K", "1.5m", "k", "512kb", "0512"] {
        let e = format!("mode=alloc,track-bytes={bad}")
            .parse::<AgentOptions>()
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!(
                "bad value `{bad}` for agent option `track-bytes`: expected a size from 1 byte to \
                 1g: a whole number of bytes, or with unit k, m or g (e.g. 512k)"
            )
        );
    }
    assert_eq!(
        "mode=alloc,track-every=5,track-bytes=1k"
            .parse::<AgentOptions>()
            .unwrap_err()
            .to_string(),
        "agent options `track-every` and `track-bytes` exclude each other: each says which \
         objects are tracked, by count or by bytes"
    );
    assert!("mode=cpu,track-bytes=1k".parse::<AgentOptions>().is_err());
}
