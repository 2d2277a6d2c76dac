//! Allocation mode end to end in real JVMs, for the objects no allocating instruction of the
//! program shows: what reflection and `clone()` return, what native code allocates through JNI,
//! and the inner arrays of `multianewarray`; each counted exactly at its call site (or native
//! method) as a site of its own kind, with loops the JIT compiles and from 8 threads, under
//! `run`, `attach` and `-agentpath`, on JDK 17 and 25.

use std::path::{Path, PathBuf};

use serde_json::Value;

mod common;
use common::{
    agentpath, attach_while_running, compile, folded_sum, read_profile_json, report, u, JDK17_HOME,
};

const ROUND: &str = "AllocsVm.round(Z)V";
const COPY: &str = "AllocsVm$Copy.clone()LAllocsVm$Copy;";
const OBJ: &str = "(Ljava/lang/Class;)Ljava/lang/Object;";
const VIA_CLASS: &str = "AllocsVm.deprecatedNewInstance()Ljava/lang/Object;";
const SHARED: &str = "AllocsVm$Shared.copy()LAllocsVm$Shared;";

/// (allocating method, class, kind, objects): the sites of one round of `AllocsVm`.
const EXPECTED: [(&str, &str, &str, u64); 14] = [
    (ROUND, "AllocsVm$Reflected", "reflect", 200_000),
    (VIA_CLASS, "AllocsVm$ViaClass", "reflect", 1000),
    (ROUND, "AllocsVm$Element[]", "reflect", 200_000),
    // Array.newInstance(int.class, 2, 3): the array and its 2 inner arrays.
    (ROUND, "int[][]", "reflect", 1000),
    (ROUND, "int[]", "reflect", 2000),
    (ROUND, "short[]", "clone", 200_000),
    // super.clone() in Copy.clone, also for SubCopy (whose clone() calls Copy's): once each.
    (COPY, "AllocsVm$Copy", "clone", 200_000),
    (COPY, "AllocsVm$SubCopy", "clone", 1000),
    // 8 threads × 20000.
    (SHARED, "AllocsVm$Shared", "clone", 160_000),
    // new long[2][3][4]: the outer array and its 2 + 6 inner arrays, at the same site.
    (ROUND, "long[][][]", "new", 1000),
    (ROUND, "long[][]", "new", 2000),
    (ROUND, "long[]", "new", 6000),
    // new String[2][3][]: 2 inner arrays, their elements null.
    (ROUND, "java.lang.String[][][]", "new", 1000),
    (ROUND, "java.lang.String[][]", "new", 2000),
];

/// (native method, JNI function, class, objects), 20000 each.
const JNI: [(&str, &str, &str); 6] = [
    ("allocObject", "AllocObject", "AllocsVm$Native"),
    ("newObject", "NewObject", "AllocsVm$Native"),
    ("newObjectA", "NewObject", "AllocsVm$Native"),
    ("newObjectArray", "NewObjectArray", "AllocsVm$Native[]"),
    ("newIntArray", "NewIntArray", "int[]"),
    ("newStringUtf", "NewStringUTF", "java.lang.String"),
];

fn jni_method(name: &str) -> String {
    let descriptor = match name {
        "newObjectArray" => "(ILjava/lang/Class;)Ljava/lang/Object;",
        "newIntArray" => "(I)Ljava/lang/Object;",
        "newStringUtf" => "()Ljava/lang/Object;",
        _ => OBJ,
    };
    format!("AllocsVm.{name}{descriptor}")
}

/// The sites of `method` allocating `class`.
fn sites<'a>(doc: &'a Value, method: &str, class: &str) -> Vec<&'a Value> {
    doc["sites"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["method"] == method && s["class"] == class)
        .collect()
}

/// The one site of `method` allocating `class` of kind `kind` (absent in the JSON: `new`).
fn site<'a>(doc: &'a Value, method: &str, class: &str, kind: &str) -> &'a Value {
    let found: Vec<&Value> = sites(doc, method, class)
        .into_iter()
        .filter(|s| s["kind"].as_str().unwrap_or("new") == kind)
        .collect();
    assert_eq!(found.len(), 1, "{method} {class} {kind}: {}", doc["sites"]);
    found[0]
}

fn class<'a>(doc: &'a Value, name: &str) -> &'a Value {
    common::entry(doc, "classes", "class", name)
}

/// Every count exactly, their bytes, what is tracked, and the paths' callee frames.
fn check(doc: &Value, every: u64, jni: bool, whole_program: bool) {
    assert_eq!(doc["mode"], "alloc");
    for (method, name, kind, n) in EXPECTED {
        assert_eq!(u(&site(doc, method, name, kind)["allocated"]), n, "{name}");
    }
    // A constructor that throws: nothing counted.
    assert!(doc["classes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["class"] != "AllocsVm$Thrower"));
    assert!(sites(doc, ROUND, "java.lang.String[]").is_empty());
    // Classes: one `new` of each cloned class beside its clones; the reflected class once
    // (JDK 17's generated accessor, whose `new` makes it, has no probe).
    assert_eq!(u(&class(doc, "AllocsVm$Reflected")["allocated"]), 200_000);
    if !whole_program {
        assert_eq!(u(&class(doc, "AllocsVm$Copy")["allocated"]), 200_001);
        assert_eq!(u(&class(doc, "AllocsVm$SubCopy")["allocated"]), 1001);
        assert_eq!(u(&class(doc, "AllocsVm$Shared")["allocated"]), 160_001);
        assert_eq!(u(&class(doc, "long[]")["allocated"]), 6000);
    }
    // Bytes: an array's header and elements; an object its measured size.
    let bytes = |method, name, kind| u(&site(doc, method, name, kind)["bytes"]);
    assert_eq!(bytes(ROUND, "int[]", "reflect"), 2000 * (16 + 3 * 4));
    assert_eq!(bytes(ROUND, "long[]", "new"), 6000 * (16 + 4 * 8));
    assert_eq!(
        bytes(ROUND, "AllocsVm$Element[]", "reflect"),
        200_000 * 16 + 25_000 * (0..8).sum::<u64>() * 4
    );
    assert_eq!(bytes(ROUND, "AllocsVm$Reflected", "reflect"), 200_000 * 16);
    let tracked = 200_000u64.checked_div(every).unwrap_or(0);
    assert_eq!(u(&class(doc, "AllocsVm$Reflected")["tracked"]), tracked);
    if jni {
        for (method, function, name) in JNI {
            let s = site(doc, &jni_method(method), name, "jni");
            assert_eq!(u(&s["allocated"]), 20_000, "{function}");
        }
        let array = site(doc, &jni_method("newIntArray"), "int[]", "jni");
        assert_eq!(
            u(&array["bytes"]),
            20_000 * 16 + 5000 * (0..4).sum::<u64>() * 4
        );
        assert_eq!(u(&class(doc, "AllocsVm$Native")["allocated"]), 60_000);
    }
    check_paths(doc, jni);
}

/// On the paths, an object a call returned sits under the called method (a JNI allocation
/// under the JNI function, under the native method), all of a class's objects there.
fn check_paths(doc: &Value, jni: bool) {
    let mut under = std::collections::BTreeMap::<(String, String), u64>::new();
    for (node, parent) in common::contexts(doc) {
        for a in node["allocations"].as_array().into_iter().flatten() {
            let frame = common::frame(node);
            let caller = parent.map_or(String::new(), common::frame);
            let key = (
                a["class"].as_str().unwrap().to_owned(),
                format!("{caller} > {frame}"),
            );
            *under.entry(key).or_default() += u(&a["allocated"]);
        }
    }
    let at = |class: &str, path: &str| under.get(&(class.to_owned(), path.to_owned())).copied();
    assert_eq!(
        at(
            "AllocsVm$Reflected",
            "AllocsVm.round > java.lang.reflect.Constructor.newInstance"
        ),
        Some(200_000),
        "{under:?}"
    );
    assert_eq!(
        at(
            "AllocsVm$Element[]",
            "AllocsVm.round > java.lang.reflect.Array.newInstance"
        ),
        Some(200_000)
    );
    assert_eq!(
        at("short[]", "AllocsVm.round > short[].clone"),
        Some(200_000)
    );
    assert_eq!(
        at(
            "AllocsVm$SubCopy",
            "AllocsVm$Copy.clone > java.lang.Object.clone"
        ),
        Some(1000)
    );
    if jni {
        assert_eq!(
            at(
                "AllocsVm$Native[]",
                "AllocsVm.newObjectArray > JNIEnv.NewObjectArray"
            ),
            Some(20_000)
        );
    }
}

/// The program compiled into a fresh directory, with its JNI library.
fn program(tag: &str) -> (PathBuf, String) {
    let dir = compile("AllocsVm.java", tag);
    let lib = common::jni_library(&dir, "allocs_vm.c", "allocsvm")
        .display()
        .to_string();
    (dir, lib)
}

/// `ferrofluid run --mode alloc FLAGS -o out.json -- java -cp DIR AllocsVm LIB` on `home`.
fn run(home: &Path, tag: &str, flags: &[&str]) -> Value {
    let (dir, lib) = program(tag);
    let out = dir.join("out.json");
    let flags: Vec<&str> = ["--mode", "alloc"].iter().chain(flags).copied().collect();
    let output = common::run_java_on(home, &flags, &out, &dir, "AllocsVm", &[&lib]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "done\n");
    read_profile_json(&out)
}

#[test]
fn vm_allocations_are_counted_exactly_under_run() {
    let flags = ["--include", "AllocsVm*", "--track-every", "10"];
    let doc = run(Path::new(JDK17_HOME), "alloc-vm-run", &flags);
    check(&doc, 10, true, false);
}

/// `java -agentpath:…=mode=alloc,include=AllocsVm*,track-every=N,file=…` on `home`.
fn agentpath_allocs(home: &Path, tag: &str, every: u64) -> Value {
    let (dir, lib) = program(tag);
    let out = dir.join("out.json");
    let options = format!(
        "mode=alloc,include=AllocsVm*,track-every={every},file={}",
        out.display()
    );
    let output = agentpath(home, &options, &dir, &["AllocsVm", &lib]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "done\n");
    read_profile_json(&out)
}

#[test]
fn vm_allocations_are_counted_exactly_through_agentpath_without_tracking() {
    let doc = agentpath_allocs(Path::new(JDK17_HOME), "alloc-vm-agentpath", 0);
    check(&doc, 0, true, false);
}

#[test]
fn vm_allocations_are_counted_exactly_on_jdk25() {
    let Some(home) = ferrofluid_testkit::jdk21_or_skip() else {
        return;
    };
    let doc = agentpath_allocs(&home, "alloc-vm-jdk25", 5);
    check(&doc, 5, true, false);
}

/// Whole program: the JDK's reflection (JDK 17's generated accessors, JDK 25's method
/// handles) and clones are probed too, and the reflected object is still counted once.
#[test]
fn vm_allocations_are_counted_once_whole_program() {
    let doc = run(
        Path::new(JDK17_HOME),
        "alloc-vm-whole",
        &["--track-every", "0"],
    );
    check(&doc, 0, true, true);
}

#[test]
fn vm_allocations_are_counted_once_whole_program_on_jdk25() {
    let Some(home) = ferrofluid_testkit::jdk21_or_skip() else {
        return;
    };
    let doc = run(&home, "alloc-vm-whole25", &["--track-every", "0"]);
    check(&doc, 0, true, true);
}

#[test]
fn vm_allocations_are_counted_exactly_under_attach() {
    let (dir, lib) = program("alloc-vm-attach");
    let doc = attach_while_running(
        Path::new(JDK17_HOME),
        &dir,
        &["AllocsVm", &lib],
        &["--mode", "alloc", "--include", "AllocsVm*"],
    );
    check(&doc, 10, true, false);
}

/// The kinds in the text report's sites, the called method as a frame in folded stacks.
#[test]
fn vm_allocation_sites_show_their_kind_in_the_reports() {
    let flags = ["--include", "AllocsVm*", "--track-every", "100"];
    let doc = run(Path::new(JDK17_HOME), "alloc-vm-reports", &flags);
    assert_eq!(u(&class(&doc, "AllocsVm$Reflected")["allocated"]), 200_000);
    let dir = common::scratch("alloc-vm-reports-out");
    let json = dir.join("in.json");
    std::fs::write(&json, serde_json::to_string(&doc).unwrap()).unwrap();
    let report = |file: &str, flags: &[&str]| report(&json, &dir.join(file), flags);
    let text = report("out.txt", &[]);
    assert!(
        text.lines().any(|l| l.contains("  AllocsVm.round(Z)V @")
            && l.ends_with(" (reflect): AllocsVm$Reflected")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.ends_with(" (jni): AllocsVm$Native[]")),
        "{text}"
    );
    let folded = report("out.collapsed", &["--weight", "alloc-count"]);
    let reflected = folded_sum(
        &folded,
        ";AllocsVm.round;java.lang.reflect.Constructor.newInstance;AllocsVm$Reflected",
    );
    assert_eq!(reflected, 200_000, "{folded}");
}

/// With a root, only what is allocated inside its extent: the calls and JNI functions `round`
/// makes on its thread, not the clones made on the threads it starts.
#[test]
fn vm_allocations_inside_a_root_are_counted_exactly() {
    let flags = [
        "--root",
        "AllocsVm::round",
        "--include",
        "AllocsVm*",
        "--track-every",
        "10",
    ];
    let doc = run(Path::new(JDK17_HOME), "alloc-vm-root", &flags);
    for (method, name, kind, n) in EXPECTED {
        let found: u64 = sites(&doc, method, name)
            .iter()
            .filter(|s| s["kind"].as_str().unwrap_or("new") == kind)
            .map(|s| u(&s["allocated"]))
            .sum();
        let expected = if name == "AllocsVm$Shared" { 0 } else { n };
        assert_eq!(found, expected, "{name}");
    }
    for (method, _, name) in JNI {
        let s = site(&doc, &jni_method(method), name, "jni");
        assert_eq!(u(&s["allocated"]), 20_000, "{method}");
    }
}
