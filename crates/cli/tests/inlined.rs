//! Sampled timing in a warm JVM leaves uninstrumented the JDK classes its compiled code
//! inlines everywhere (a census of the code cache when the session starts), lists them in the
//! profile, and keeps every count of the application's methods; `--instrument-inlined` counts
//! their calls too.

use std::path::Path;

use serde_json::Value;

mod common;
use common::{attach_while_running, call_paths, scratch, JDK17_HOME};

/// Methods of the generated program each C1-compiled before the attach, each with
/// `String.length` and `String.charAt` inlined: the code cache holds over the census's
/// 1,000 compiled methods, `java.lang.String` in most of them.
const WIDE: usize = 1_100;

/// Rounds the program runs once profiled.
const ROUNDS: usize = 50;

/// `Inlined.java`: `m0`..`m{WIDE-1}` warmed (each called 300 times a pass, twenty passes
/// 100 ms apart: C1's threshold of 200 calls grows with its queue, which drains between
/// passes), `ready`, then after the go file `ROUNDS` calls of `round`, which calls `work` on a
/// string (`String.length` and `String.charAt` 4 times each, `leaf` twice), then `done`.
fn program() -> String {
    let mut java = String::from(
        "import java.nio.file.*;\n\
         public class Inlined {\n\
         static int sink;\n\
         static int leaf(int x) { return x * 31 + 7; }\n\
         static int work(String s) {\n\
             int t = 0;\n\
             for (int i = 0; i < 4; i++) { t += s.charAt(i % s.length()); }\n\
             return leaf(t) + leaf(t + 1);\n\
         }\n\
         static void round() { sink += work(\"inlined everywhere\"); }\n",
    );
    for i in 0..WIDE {
        java.push_str(&format!(
            "static int m{i}(String s, int k) {{ return s.charAt(k % s.length()) + {i}; }}\n"
        ));
    }
    java.push_str("static void warm(String s) {\n");
    for i in 0..WIDE {
        java.push_str(&format!(
            "for (int k = 0; k < 300; k++) {{ sink += m{i}(s, k); }}\n"
        ));
    }
    java.push_str(&format!(
        "}}\n\
         public static void main(String[] a) throws Exception {{\n\
         for (int pass = 0; pass < 20; pass++) {{ warm(\"warm\"); Thread.sleep(100); }}\n\
         Thread.sleep(1000);\n\
         System.out.println(\"ready\");\n\
         Path go = Path.of(a[0]);\n\
         while (!Files.exists(go)) {{ Thread.sleep(10); }}\n\
         for (int r = 0; r < {ROUNDS}; r++) {{ round(); }}\n\
         System.out.println(\"done\");\n\
         }}\n}}\n"
    ));
    java
}

/// The profile of `round` attached to the generated program with `more` flags, and the
/// agent's log.
fn profile(tag: &str, more: &[&str]) -> (Value, String) {
    let dir = scratch(tag);
    let source = dir.join("Inlined.java");
    std::fs::write(&source, program()).unwrap();
    ferrofluid_testkit::javac(Path::new(JDK17_HOME), &["--release", "17"], &dir, [&source]);
    let log = dir.join("agent.log");
    let mut flags = vec![
        "--no-presample",
        "--scheme",
        "eager",
        "--root",
        "Inlined::round",
    ];
    flags.extend(["--log", log.to_str().unwrap()]);
    flags.extend(more);
    let doc = attach_while_running(Path::new(JDK17_HOME), &dir, &["Inlined"], &flags);
    (doc, std::fs::read_to_string(&log).unwrap_or_default())
}

/// The paths under the roots whose frame is `Class.method` of `class`.
fn paths_of(doc: &Value, class: &str) -> Vec<(String, u64)> {
    call_paths(doc)
        .into_iter()
        .filter(|(path, _)| path.split('/').any(|f| f.starts_with(class)))
        .collect()
}

#[test]
fn a_warm_jvm_s_most_inlined_jdk_classes_are_left_alone_and_the_rest_counted_exactly() {
    let (doc, log) = profile("inlined-census", &[]);
    let left: Vec<&str> = doc["methods"]["inlined_left_alone"]
        .as_array()
        .unwrap_or_else(|| panic!("{}\n{log}", doc["methods"]))
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(left.contains(&"java.lang.String"), "{left:?}");
    // Only the JDK's classes: the program's own are inlined everywhere too.
    assert!(left
        .iter()
        .all(|c| c.starts_with("java.") || c.starts_with("jdk.")));
    assert!(!left.contains(&"Inlined"));
    let n = ROUNDS as u64;
    let paths = call_paths(&doc);
    assert_eq!(
        paths,
        [
            ("Inlined.round".to_owned(), n),
            ("Inlined.round/Inlined.work".to_owned(), n),
            ("Inlined.round/Inlined.work/Inlined.leaf".to_owned(), 2 * n),
        ],
        "{paths:?}"
    );
}

#[test]
fn instrument_inlined_counts_their_calls_too() {
    let (doc, log) = profile("inlined-all", &["--instrument-inlined"]);
    assert!(!log.contains("compiled methods in the code cache"), "{log}");
    assert!(
        doc["methods"].get("inlined_left_alone").is_none(),
        "{}",
        doc["methods"]
    );
    let n = ROUNDS as u64;
    let strings = paths_of(&doc, "java.lang.String.");
    let calls = |path: &str| {
        strings
            .iter()
            .find(|(p, _)| p == path)
            .map(|&(_, c)| c)
            .unwrap_or_else(|| panic!("{path} in {strings:?}"))
    };
    assert_eq!(
        calls("Inlined.round/Inlined.work/java.lang.String.charAt"),
        4 * n
    );
    assert_eq!(
        calls("Inlined.round/Inlined.work/java.lang.String.length"),
        4 * n
    );
}
