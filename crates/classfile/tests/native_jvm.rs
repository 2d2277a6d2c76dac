//! The `native` probe's wrappers in real JVMs under `-Xverify:all`, with the smallest JVMTI agent
//! that sets the native method prefix (`tests/native/prefix_agent.c`, built with the system C
//! compiler): natives bound by name and by `RegisterNatives` (also after the wrappers exist) still
//! link and compute the same, each call is counted once on entry and once on exit (also when it
//! throws), interpreted and compiled; every native of `java.base` wrapped as it first loads (the
//! generated `NativeHooks`, inactive until the agent binds it) boots and runs a program unchanged;
//! natives HotSpot may replace by intrinsics and signature-polymorphic ones are left alone.

use std::collections::BTreeMap;
use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ferrofluid_classfile::{
    instrument, native_hooks_class, MethodSite, ProbeKind, ProbeOptions, SkipReason,
};
use ferrofluid_testkit::{fresh_dir, java_home, JDK17_HOME};

fn work_dir(name: &str) -> PathBuf {
    fresh_dir(
        Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("native_jvm")
            .join(name),
    )
}

fn java() -> PathBuf {
    java_home().join("bin/java")
}

/// `out` built from `tests/native/SOURCE` as a shared library with the system C compiler.
fn cc(source: &str, out: &Path) -> String {
    let include = java_home().join("include");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(out)
        .arg(format!("-I{}", include.display()))
        .arg(format!("-I{}", include.join("linux").display()))
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/native")
                .join(source),
        )
        .arg("-ldl")
        .status()
        .expect("a C compiler `cc` on PATH");
    assert!(status.success(), "cc {source}");
    out.display().to_string()
}

fn javac(out: &Path, classpath: &[&Path], sources: &[&str]) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java");
    let cp = classpath
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(":");
    let flags: Vec<&str> = if cp.is_empty() {
        vec![]
    } else {
        vec!["-cp", &cp]
    };
    ferrofluid_testkit::javac(
        &java_home(),
        &flags,
        out,
        sources.iter().map(|s| src.join(s)),
    );
}

fn run(args: &[&str]) -> Output {
    let o = Command::new("timeout")
        .arg("300")
        .arg(java())
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "java {args:?} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// Every method of a class gets the id of its `name+descriptor` in `ids` (new ones appended).
fn select(ids: &mut BTreeMap<String, u32>) -> impl FnMut(&MethodSite<'_>) -> Option<u32> + '_ {
    |m: &MethodSite<'_>| {
        let next = ids.len() as u32;
        Some(
            *ids.entry(format!("{}.{}{}", m.class, m.name, m.descriptor))
                .or_insert(next),
        )
    }
}

/// Per method id: (nativeEnter, nativeExit) counted by `tests/java/ferrofluid/Hooks.java`.
fn hook_counts(stderr: &[u8]) -> BTreeMap<u32, (u64, u64)> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("HOOK "))
        .map(|l| {
            let v: Vec<u64> = l.split(' ').map(|x| x.parse().unwrap()).collect();
            (v[0] as u32, (v[6], v[7]))
        })
        .collect()
}

#[test]
fn wrapped_natives_link_by_name_and_by_register_natives_and_count_each_call() {
    let dir = work_dir("target");
    let (orig, patched, hooks) = (dir.join("orig"), dir.join("patched"), dir.join("hooks"));
    javac(&orig, &[], &["NativeTarget.java"]);
    javac(&hooks, &[], &["ferrofluid/Hooks.java"]);
    let lib = cc("natives.c", &dir.join("libnativetarget.so"));
    let agent = cc("prefix_agent.c", &dir.join("libprefix.so"));

    let bytes = std::fs::read(orig.join("NativeTarget.class")).unwrap();
    let mut ids = BTreeMap::new();
    let out = instrument(
        &bytes,
        &ProbeOptions::new(ProbeKind::Native),
        &mut select(&mut ids),
    )
    .unwrap();
    let patched_names: Vec<String> = out
        .methods
        .iter()
        .filter(|m| m.result.is_ok())
        .map(|m| format!("{}{}", m.name, m.descriptor))
        .collect();
    assert_eq!(
        patched_names,
        [
            "add(IJ)J",
            "scale(DF)D",
            "rebind()V",
            "echo(Ljava/lang/String;)Ljava/lang/String;",
            "fail(Ljava/lang/String;)V",
            "callBack(I)I",
            "bump()I"
        ]
    );
    std::fs::create_dir_all(&patched).unwrap();
    std::fs::write(patched.join("NativeTarget.class"), out.bytes.unwrap()).unwrap();

    let expected = run(&["-cp", orig.to_str().unwrap(), "NativeTarget", &lib]).stdout;
    assert_eq!(
        String::from_utf8_lossy(&expected),
        "1099511628784000 254700.0 10 1000\n"
    );
    let cp = format!("{}:{}", patched.display(), hooks.display());
    let agentpath = format!("-agentpath:{agent}");
    for mode in ["-Xint", "-Xmixed"] {
        let o = run(&[
            "-Xverify:all",
            mode,
            &agentpath,
            "-cp",
            &cp,
            "NativeTarget",
            &lib,
        ]);
        assert_eq!(o.stdout, expected, "{mode}");
        let counts = hook_counts(&o.stderr);
        let id = |m: &str| ids[&format!("NativeTarget.{m}")];
        let calls = |m: &str| counts.get(&id(m)).copied().unwrap_or_default();
        // Each call entered and exited once; `fail` exits through the wrapper's handler.
        assert_eq!(calls("add(IJ)J"), (1000, 1000), "{mode}");
        assert_eq!(calls("scale(DF)D"), (1100, 1100), "{mode}");
        assert_eq!(calls("rebind()V"), (1, 1), "{mode}");
        assert_eq!(
            calls("echo(Ljava/lang/String;)Ljava/lang/String;"),
            (1000, 1000)
        );
        assert_eq!(calls("fail(Ljava/lang/String;)V"), (10, 10), "{mode}");
        assert_eq!(calls("callBack(I)I"), (1000, 1000), "{mode}");
        assert_eq!(calls("bump()I"), (1000, 1000), "{mode}");
        assert_eq!(counts.len(), 7, "{mode}: {counts:?}");
    }
}

/// The classes of JDK 17's `java.base`, by internal name.
fn java_base() -> BTreeMap<String, Vec<u8>> {
    let path = Path::new(JDK17_HOME).join("jmods/java.base.jmod");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut zip = zip::ZipArchive::new(Cursor::new(&bytes[4..])).unwrap();
    let mut out = BTreeMap::new();
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).unwrap();
        let name = entry.name().to_owned();
        if let Some(class) = name
            .strip_prefix("classes/")
            .and_then(|n| n.strip_suffix(".class"))
        {
            if class != "module-info" {
                let mut data = Vec::new();
                entry.read_to_end(&mut data).unwrap();
                out.insert(class.to_owned(), data);
            }
        }
    }
    out
}

/// The options the agent's `native` engine would use: the hooks in a class of their own.
fn engine_options() -> ProbeOptions {
    let mut options = ProbeOptions::new(ProbeKind::Native);
    options.hooks.native_class = "ferrofluid/NativeHooks".to_owned();
    options
}

/// Every native of `java.base` wrapped, written to `dir` with the generated hooks class: what a
/// JVM whose class file load hook wraps natives from the primordial phase on loads. Returns the
/// ids and the outcomes' counts by skip key (`patched` for the wrapped).
fn wrap_java_base(
    dir: &Path,
) -> (
    BTreeMap<String, u32>,
    BTreeMap<String, Result<(), SkipReason>>,
) {
    let options = engine_options();
    let mut ids = BTreeMap::new();
    let mut outcomes = BTreeMap::new();
    for (name, bytes) in java_base() {
        let out = instrument(&bytes, &options, &mut select(&mut ids)).unwrap();
        for m in &out.methods {
            if !matches!(m.result, Err(SkipReason::NotNative)) {
                outcomes.insert(
                    format!("{name}.{}{}", m.name, m.descriptor),
                    m.result.clone(),
                );
            }
        }
        if let Some(patched) = out.bytes {
            let file = dir.join(format!("{name}.class"));
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, patched).unwrap();
        }
    }
    let hooks = dir.join("ferrofluid/NativeHooks.class");
    std::fs::create_dir_all(hooks.parent().unwrap()).unwrap();
    std::fs::write(hooks, native_hooks_class(&options.hooks)).unwrap();
    (ids, outcomes)
}

/// What the probe leaves alone in `java.base`: every `@IntrinsicCandidate` native (compiled code
/// may replace a call by HotSpot's own code, so a wrapper would count what the JIT decides) and
/// the signature-polymorphic natives of `MethodHandle` and `VarHandle`.
#[test]
fn intrinsic_and_signature_polymorphic_natives_are_left_alone() {
    let dir = work_dir("java_base_outcomes");
    let (_, outcomes) = wrap_java_base(&dir);
    let outcome = |m: &str| {
        outcomes
            .get(m)
            .unwrap_or_else(|| panic!("{m} not offered"))
            .clone()
    };
    for m in [
        "java/lang/System.arraycopy(Ljava/lang/Object;ILjava/lang/Object;II)V",
        "java/lang/Object.hashCode()I",
        "java/lang/Object.getClass()Ljava/lang/Class;",
        "java/lang/Thread.currentThread()Ljava/lang/Thread;",
        "java/util/zip/CRC32.update(II)I",
        "java/util/zip/CRC32.updateBytes0(I[BII)I",
        "java/lang/System.nanoTime()J",
    ] {
        assert_eq!(outcome(m), Err(SkipReason::Intrinsic), "{m}");
    }
    for m in [
        "java/lang/invoke/MethodHandle.invokeExact([Ljava/lang/Object;)Ljava/lang/Object;",
        "java/lang/invoke/MethodHandle.invoke([Ljava/lang/Object;)Ljava/lang/Object;",
        "java/lang/invoke/MethodHandle.linkToStatic([Ljava/lang/Object;)Ljava/lang/Object;",
        "java/lang/invoke/VarHandle.get([Ljava/lang/Object;)Ljava/lang/Object;",
        "java/lang/invoke/VarHandle.compareAndSet([Ljava/lang/Object;)Z",
    ] {
        assert_eq!(outcome(m), Err(SkipReason::SignaturePolymorphic), "{m}");
    }
    for m in [
        "java/lang/System.registerNatives()V",
        "jdk/internal/misc/Unsafe.registerNatives()V",
        // JDK 17's lookup of a native in a library; JDK 21+ has it in `NativeLibrary`.
        "jdk/internal/loader/NativeLibraries.findEntry0(Ljdk/internal/loader/NativeLibraries$NativeLibraryImpl;Ljava/lang/String;)J",
        "jdk/internal/loader/NativeLibraries.findBuiltinLib(Ljava/lang/String;)Ljava/lang/String;",
    ] {
        assert_eq!(outcome(m), Err(SkipReason::NativeBinding), "{m}");
    }
    for m in [
        "java/lang/Throwable.fillInStackTrace(I)Ljava/lang/Throwable;",
        "java/lang/SecurityManager.getClassContext()[Ljava/lang/Class;",
    ] {
        assert_eq!(outcome(m), Err(SkipReason::FrameSensitive), "{m}");
    }
    for m in [
        "jdk/internal/reflect/NativeMethodAccessorImpl.invoke0(Ljava/lang/reflect/Method;Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;",
        "java/lang/Class.forName0(Ljava/lang/String;ZLjava/lang/ClassLoader;Ljava/lang/Class;)Ljava/lang/Class;",
        "jdk/internal/misc/Unsafe.ensureClassInitialized0(Ljava/lang/Class;)V",
    ] {
        assert_eq!(outcome(m), Err(SkipReason::RunsJava), "{m}");
    }
    for m in [
        "java/lang/Thread.sleep(J)V",
        "java/lang/Object.wait(J)V",
        "java/util/zip/Inflater.inflateBytesBytes(J[BII[BII)J",
        "java/io/RandomAccessFile.readBytes([BII)I",
        "java/io/FileOutputStream.writeBytes([BIIZ)V",
    ] {
        assert_eq!(outcome(m), Ok(()), "{m}");
    }
    let mut by_key: BTreeMap<&str, usize> = BTreeMap::new();
    for r in outcomes.values() {
        *by_key
            .entry(r.as_ref().err().map_or("patched", SkipReason::key))
            .or_default() += 1;
    }
    // Nothing else is skipped, and most natives are wrapped (JDK 17.0.x; informative counts in
    // docs/classfile.md).
    assert_eq!(
        by_key.keys().copied().collect::<Vec<_>>(),
        [
            "frame-sensitive",
            "intrinsic",
            "native-binding",
            "patched",
            "runs-java",
            "signature-polymorphic"
        ],
        "{by_key:?}"
    );
    assert!(by_key["patched"] > 500, "{by_key:?}");
    println!("java.base natives: {by_key:?}");
}

/// Every native of `java.base` wrapped (as the class file load hook would from the primordial
/// phase on) with the generated `NativeHooks` in `java.base`: the JVM boots and runs a program
/// that uses zip, files, reflection and sleeping with the same output, under `-Xverify:all`.
/// The hooks' natives are never called while `active` is 0; with `prefix_agent.c count`, which
/// binds them and sets `active` at VMInit, the main thread's `Thread.sleep` calls are each
/// entered and exited once.
///
/// `prefix_agent.c` binds the boot classes' wrapped natives at ClassPrepare, which JDK 17 logs
/// as a warning per native (`Re-registering of platform native method`, on stdout) when the
/// binding code has no Java caller in the boot loader: the runs turn that log off, and
/// docs/decisions/0055-native-mode.md says how the engine binds without it.
#[test]
fn java_base_with_every_native_wrapped_boots_and_runs_unchanged() {
    let dir = work_dir("java_base");
    let patch = dir.join("patch");
    let (ids, _) = wrap_java_base(&patch);
    let program = dir.join("program");
    javac(&program, &[], &["JdkNatives.java"]);
    let agent = cc("prefix_agent.c", &dir.join("libprefix.so"));
    let cp = program.display().to_string();
    let expected = run(&["-cp", &cp, "JdkNatives"]).stdout;
    let patch_module = format!("java.base={}", patch.display());
    let prefix = format!("-agentpath:{agent}");
    let wrapped = run(&[
        "-Xverify:all",
        "-Xlog:jni+resolve=error",
        "--patch-module",
        &patch_module,
        &prefix,
        "-cp",
        &cp,
        "JdkNatives",
    ]);
    assert_eq!(wrapped.stdout, expected);
    assert!(!String::from_utf8_lossy(&wrapped.stderr).contains("NATIVE"));

    let counting = format!("-agentpath:{agent}=count");
    let counted = run(&[
        "-Xlog:jni+resolve=error",
        "--patch-module",
        &patch_module,
        &counting,
        "-cp",
        &cp,
        "JdkNatives",
    ]);
    assert_eq!(counted.stdout, expected);
    let stderr = String::from_utf8_lossy(&counted.stderr);
    let counts: BTreeMap<u32, (u64, u64)> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("NATIVE "))
        .map(|l| {
            let v: Vec<u64> = l.split(' ').map(|x| x.parse().unwrap()).collect();
            (v[0] as u32, (v[1], v[2]))
        })
        .collect();
    let sleep = ids["java/lang/Thread.sleep(J)V"];
    assert_eq!(counts.get(&sleep), Some(&(20, 20)), "{stderr}");
    // One `seek` of the file.
    let seek0 = ids["java/io/RandomAccessFile.seek0(J)V"];
    assert_eq!(counts.get(&seek0), Some(&(1, 1)), "{stderr}");
}

/// The generated `NativeHooks` passes `-Xverify:all`; while `active` is 0 its hooks return in
/// Java, otherwise they call the agent's natives (unbound here), interpreted and compiled.
#[test]
fn the_generated_native_hooks_call_the_agent_only_while_active() {
    let dir = work_dir("native_gate");
    let hooks = dir.join("hooks");
    let class = hooks.join("ferrofluid/NativeHooks.class");
    std::fs::create_dir_all(class.parent().unwrap()).unwrap();
    std::fs::write(&class, native_hooks_class(&engine_options().hooks)).unwrap();
    let program = dir.join("program");
    javac(&program, &[&hooks], &["NativeGate.java"]);
    let cp = format!("{}:{}", program.display(), hooks.display());
    for mode in ["-Xint", "-Xmixed"] {
        let o = run(&["-Xverify:all", mode, "-cp", &cp, "NativeGate"]);
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "java java native native java java\n",
            "{mode}"
        );
    }
}
