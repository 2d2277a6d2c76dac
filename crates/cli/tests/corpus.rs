//! The corpus test, on real classes:
//!
//! - every class of `$JAVA_HOME/jmods/*.jmod` (JDK 17) and of jars from Debian packages
//!   survives a read + write with no edit byte for byte;
//! - for each probe, `ferrofluid instrument` patches every method of every class, ASM's
//!   analyzer (`tools/verify`, one JVM per probe) accepts 100% of the patched classes, and the
//!   JVM loads and links (so verifies, StackMapTables included) every class of the patched
//!   Debian jars that it can link from the original jars;
//! - real programs (Xalan, H2, Groovy, Jython, Scala, Batik, FOP, ASM) run from the patched
//!   jars under `-Xverify:all`, with the no-op `tools/hooks` on the boot class path, print and
//!   write exactly what they do from the original jars.
//!
//! Counts per jar are printed (run with `--nocapture` to see them) and written to
//! `$CARGO_TARGET_TMPDIR/corpus/report-*.md`; docs/corpus.md records a run.
//! A missing JDK or Debian package fails the test with the apt-get command to run.

#[path = "../src/archive.rs"]
#[allow(dead_code)]
mod archive;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use archive::{ArchiveError, Entry};
use ferrofluid_classfile::ProbeKind;

const DEBIAN_JAVA: &str = "/usr/share/java";
const PACKAGES: &str =
    "libxalan2-java libbatik-java fop libh2-java jython groovy libasm-java scala";
/// Seconds a program's JVM may run before it counts as hung.
const JVM_TIMEOUT: &str = "600";
/// Seconds the verifier's JVM may run (all classes of all corpora, on a busy machine).
const VERIFY_TIMEOUT: &str = "1800";

fn missing(what: &str) -> ! {
    panic!(
        "{what}. Install the corpus with: apt-get update && apt-get install -y openjdk-17-jdk-headless {PACKAGES} \
         (.ci/run does this)"
    )
}

/// The JDK 17 whose jmods are the corpus and whose java/javac run the tools.
fn jdk() -> &'static Path {
    static JDK: OnceLock<PathBuf> = OnceLock::new();
    JDK.get_or_init(|| {
        let home = ferrofluid_testkit::java_home();
        let release = fs::read_to_string(home.join("release"))
            .unwrap_or_else(|_| missing(&format!("no JDK at {} (JAVA_HOME)", home.display())));
        if !release.contains("JAVA_VERSION=\"17") {
            missing(&format!(
                "JAVA_HOME={} is not a JDK 17; point JAVA_HOME at one",
                home.display()
            ));
        }
        if !home.join("jmods/java.base.jmod").is_file() {
            missing(&format!("{} has no jmods/java.base.jmod", home.display()));
        }
        home
    })
}

/// A group of jars from one Debian package (or the JDK's jmods).
struct Corpus {
    name: &'static str,
    inputs: Vec<PathBuf>,
}

fn debian_jar(package: &str, name: &str) -> PathBuf {
    let path = Path::new(DEBIAN_JAVA).join(name);
    // Resolve the version symlinks so the reported name says which release was tested.
    fs::canonicalize(&path).unwrap_or_else(|_| {
        missing(&format!(
            "{} (package {package}) is missing",
            path.display()
        ))
    })
}

fn corpora() -> &'static [Corpus] {
    static CORPORA: OnceLock<Vec<Corpus>> = OnceLock::new();
    CORPORA.get_or_init(|| {
        let mut jmods: Vec<PathBuf> = fs::read_dir(jdk().join("jmods"))
            .expect("read jmods")
            .map(|e| e.expect("jmods entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "jmod"))
            .collect();
        jmods.sort();
        // (corpus, Debian package, its jars)
        let debian = [
            ("xalan", "libxalan2-java", "xalan2.jar serializer.jar"),
            ("batik", "libbatik-java", "batik-all.jar"),
            ("fop", "fop", "fop.jar"),
            ("h2", "libh2-java", "h2.jar"),
            ("jython", "jython", "jython.jar"),
            ("groovy", "groovy", "groovy-all.jar"),
            (
                "asm",
                "libasm-java",
                "asm.jar asm-tree.jar asm-analysis.jar asm-util.jar asm-commons.jar",
            ),
            (
                "scala",
                "scala",
                "scala-library-2.11.jar scala-reflect-2.11.jar scala-compiler-2.11.jar",
            ),
        ];
        let jdk = Corpus {
            name: "jdk17",
            inputs: jmods,
        };
        let jars = debian.iter().map(|&(name, package, jars)| Corpus {
            name,
            inputs: jars
                .split_whitespace()
                .map(|n| debian_jar(package, n))
                .collect(),
        });
        std::iter::once(jdk).chain(jars).collect()
    })
}

/// Jars the corpus jars need at run time or for type lookups, left uninstrumented.
fn dependencies() -> Vec<PathBuf> {
    [
        "xmlgraphics-commons.jar",
        "xml-apis-ext.jar",
        "commons-io.jar",
        "commons-logging.jar",
        "xml-apis.jar",
    ]
    .iter()
    .chain(
        [
            "xercesImpl.jar",
            "fontbox2.jar",
            "scala-xml_2.11.jar",
            "scala-parser-combinators_2.11.jar",
        ]
        .iter(),
    )
    .map(|n| debian_jar("a dependency of fop or scala", n))
    .collect()
}

fn work_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("corpus")
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const ASM_JARS: [&str; 4] = [
    "asm.jar",
    "asm-tree.jar",
    "asm-analysis.jar",
    "asm-util.jar",
];

/// Compiles tools/hooks and tools/verify once; returns (hooks dir, verifier class path).
fn tools() -> &'static (PathBuf, String) {
    static TOOLS: OnceLock<(PathBuf, String)> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let asm: Vec<String> = ASM_JARS
            .iter()
            .map(|j| debian_jar("libasm-java", j).display().to_string())
            .collect();
        let out = work_dir().join("tools");
        let _ = fs::remove_dir_all(&out);
        let hooks = out.join("hooks");
        let verify = out.join("verify");
        let root = repo_root();
        javac(&hooks, "", &root.join("tools/hooks/ferrofluid/Hooks.java"));
        javac(
            &verify,
            &asm.join(":"),
            &root.join("tools/verify/ferrofluid/tools/Verify.java"),
        );
        let cp = format!("{}:{}", asm.join(":"), verify.display());
        // The verifier must be able to fail, or its "0 failed" would mean nothing.
        let self_test = run(Command::new(jdk().join("bin/java")).args([
            "-cp",
            &cp,
            "ferrofluid.tools.Verify",
            "--self-test",
        ]));
        assert!(
            self_test.status.success(),
            "verifier self-test failed:\n{}",
            text(&self_test)
        );
        (hooks, cp)
    })
}

fn javac(out: &Path, classpath: &str, source: &Path) {
    let flags: &[&str] = if classpath.is_empty() {
        &[]
    } else {
        &["-cp", classpath]
    };
    ferrofluid_testkit::javac(jdk(), flags, out, [source]);
}

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Calls `visit` with the entry name and bytes of every class in `path`.
fn for_each_class(path: &Path, mut visit: impl FnMut(&str, &[u8])) {
    archive::for_each_entry::<ArchiveError>(path, |entry| {
        if let Entry::File(name, data) = entry {
            if name.ends_with(".class") {
                visit(&name, &data);
            }
        }
        Ok(())
    })
    .unwrap_or_else(|e| panic!("{e}"));
}

fn file_name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn round_trip_is_byte_identical() {
    let mut report =
        String::from("| corpus | file | classes | byte-identical |\n|---|---|---:|---:|\n");
    let mut failures = Vec::new();
    let (mut total, mut total_same) = (0usize, 0usize);
    for corpus in corpora() {
        for input in &corpus.inputs {
            let (mut classes, mut same) = (0usize, 0usize);
            for_each_class(input, |name, bytes| {
                classes += 1;
                match ferrofluid_classfile::patch::rewrite_unchanged(bytes) {
                    Ok(out) if out == bytes => same += 1,
                    Ok(out) => failures.push(format!(
                        "{}!{name}: differs ({} bytes in, {} out, first difference at {})",
                        file_name(input),
                        bytes.len(),
                        out.len(),
                        bytes
                            .iter()
                            .zip(&out)
                            .position(|(a, b)| a != b)
                            .unwrap_or(bytes.len().min(out.len()))
                    )),
                    Err(e) => failures.push(format!("{}!{name}: {e}", file_name(input))),
                }
            });
            assert!(classes > 0, "{} has no classes", input.display());
            let _ = writeln!(
                report,
                "| {} | {} | {classes} | {same} |",
                corpus.name,
                file_name(input)
            );
            total += classes;
            total_same += same;
        }
    }
    let _ = writeln!(report, "| all | | {total} | {total_same} |");
    println!("{report}");
    fs::create_dir_all(work_dir()).unwrap();
    fs::write(work_dir().join("report-round-trip.md"), &report).unwrap();
    assert!(
        failures.is_empty(),
        "{} of {total} classes do not round-trip:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
}

/// Counts parsed from `ferrofluid instrument`'s summary.
#[derive(Debug, Default)]
struct Summary {
    patched: usize,
    unchanged: usize,
    failed: usize,
    methods_patched: usize,
    skipped: String,
}

fn parse_summary(out: &str) -> Summary {
    let mut s = Summary::default();
    for line in out.lines() {
        if let Some(rest) = line.strip_prefix("classes: ") {
            let nums: Vec<usize> = rest
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|w| w.parse().ok())
                .collect();
            // "A patched, B unchanged (C not selected), D failed"
            (s.patched, s.unchanged, s.failed) = (nums[0], nums[1], nums[3]);
        } else if let Some(rest) = line.strip_prefix("methods: ") {
            s.methods_patched = rest.split(' ').next().unwrap().parse().unwrap();
            // "N patched, M skipped (reason k, ...)" -> "M (reason k, ...)"
            let skipped = rest.split_once(" patched, ").map(|(_, r)| r);
            s.skipped = skipped.unwrap_or_default().replacen(" skipped", "", 1);
        }
    }
    s
}

fn instrumented_name(input: &Path) -> String {
    let name = file_name(input);
    format!(
        "{}.jar",
        name.trim_end_matches(".jar").trim_end_matches(".jmod")
    )
}

/// Instruments every corpus jar with `probe`, verifies all of them in one JVM, and runs
/// the real programs from the patched jars.
fn check_probe(probe: ProbeKind) {
    let (hooks, verify_cp) = tools();
    let dir = work_dir().join(probe.name());
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();

    let mut report = format!(
        "### probe `{probe}`\n\n| corpus | file | classes patched | unchanged | failed | methods patched | methods skipped | ASM verified | ASM failed |\n|---|---|---:|---:|---:|---:|---|---:|---:|\n"
    );
    let mut rows = Vec::new();
    let mut targets = Vec::new();
    let mut instrumented = BTreeMap::new();
    let mut problems = Vec::new();
    for corpus in corpora() {
        for input in &corpus.inputs {
            let output = dir.join(instrumented_name(input));
            let result = run(Command::new(env!("CARGO_BIN_EXE_ferrofluid"))
                .arg("instrument")
                .arg(input)
                .arg(&output)
                .args(["--probe", probe.name()]));
            let out = text(&result);
            assert!(
                result.status.success(),
                "ferrofluid instrument {} failed:\n{out}",
                input.display()
            );
            let summary = parse_summary(&out);
            if summary.failed > 0 {
                problems.push(format!(
                    "{}: {} classes failed to instrument",
                    input.display(),
                    summary.failed
                ));
            }
            rows.push((corpus.name, input.clone(), output.clone(), summary));
            targets.push(format!("{}={}", output.display(), input.display()));
            instrumented.insert(input.clone(), output);
        }
    }

    // One JVM checks every patched class of every corpus with ASM, then loads and links the
    // classes of the Debian jars so HotSpot's verifier checks them too (StackMapTables
    // included, which ASM's analyzer ignores); the hooks must be resolvable for that.
    let classpath: Vec<String> = dependencies()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let verify = run(Command::new("timeout")
        .arg(VERIFY_TIMEOUT)
        .arg(jdk().join("bin/java"))
        .arg("-Xmx3g")
        .arg(format!("-Xbootclasspath/a:{}", hooks.display()))
        .args([
            "-cp",
            verify_cp,
            "ferrofluid.tools.Verify",
            "--link",
            "--threads",
            "1",
            "--show",
            "30",
        ])
        .args(["--classpath", &classpath.join(":")])
        .args(&targets));
    let verify_out = String::from_utf8_lossy(&verify.stdout).into_owned();
    let mut verified = BTreeMap::new();
    for line in verify_out.lines() {
        if let Some(rest) = line.strip_prefix("target ") {
            let (path, counts) = rest.rsplit_once(": ").unwrap();
            let nums: Vec<usize> = counts
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|w| w.parse().ok())
                .collect();
            verified.insert(PathBuf::from(path), (nums[0], nums[1]));
        }
    }
    if verified.is_empty() {
        // No per-target lines: the JVM died (timeout exits with 124, a signal has no code).
        panic!(
            "verifier JVM ended with {} before reporting:\n{}",
            verify.status,
            text(&verify)
        );
    }
    if !verify.status.success() {
        problems.push(format!("ASM verifier rejected classes:\n{}", text(&verify)));
    }
    for (corpus, input, output, s) in &rows {
        let (n, failed) = verified.get(output).copied().unwrap_or_else(|| {
            panic!(
                "no verifier line for {}:\n{}",
                output.display(),
                text(&verify)
            )
        });
        if n != s.patched + s.unchanged + s.failed {
            problems.push(format!(
                "{}: verifier saw {n} classes, instrument reported {}",
                output.display(),
                s.patched + s.unchanged + s.failed
            ));
        }
        let _ = writeln!(
            report,
            "| {corpus} | {} | {} | {} | {} | {} | {} | {n} | {failed} |",
            file_name(input),
            s.patched,
            s.unchanged,
            s.failed,
            s.methods_patched,
            s.skipped
        );
    }
    let totals = rows.iter().fold((0, 0, 0, 0), |t, (_, _, _, s)| {
        (
            t.0 + s.patched,
            t.1 + s.unchanged,
            t.2 + s.failed,
            t.3 + s.methods_patched,
        )
    });
    let _ = writeln!(
        report,
        "| all | | {} | {} | {} | {} | | | |",
        totals.0, totals.1, totals.2, totals.3
    );
    if let Some(last) = verify_out.lines().last() {
        let _ = writeln!(report, "\nASM: {last}\n");
    }
    // Failures the original classes have too (not counted), for the record.
    for line in verify_out.lines().filter(|l| l.starts_with("BASELINE ")) {
        let _ = writeln!(report, "- {line}");
    }
    report.push('\n');

    // The real programs, from the patched jars.
    let _ = writeln!(report, "| program | result |\n|---|---|");
    for program in programs() {
        let expected = original_run(program);
        let actual = run_program(
            program,
            &dir.join(format!("run-{}", program.name)),
            hooks,
            &instrumented,
        );
        let verdict = if actual == *expected {
            "same output".to_owned()
        } else {
            problems.push(format!(
                "{} differs with probe {probe}:\n--- original\n{}\n--- instrumented\n{}",
                program.name,
                expected.describe(),
                actual.describe()
            ));
            "DIFFERENT".to_owned()
        };
        let _ = writeln!(report, "| {} | {verdict} |", program.name);
    }
    println!("{report}");
    fs::write(
        work_dir().join(format!("report-{}.md", probe.name())),
        &report,
    )
    .unwrap();
    assert!(
        problems.is_empty(),
        "probe {probe}:\n{}",
        problems.join("\n")
    );
}

/// A real workload from Debian jars: main class, arguments, and output files to compare.
struct Program {
    name: &'static str,
    /// Jars on the class path; corpus jars among them are swapped for patched ones.
    classpath: Vec<PathBuf>,
    jvm_args: Vec<&'static str>,
    main: &'static str,
    /// Arguments; `{in}` is replaced by tools/programs, inputs are read from there.
    args: Vec<&'static str>,
    /// Files the program writes in its working directory.
    outputs: Vec<&'static str>,
}

fn programs() -> &'static [Program] {
    static PROGRAMS: OnceLock<Vec<Program>> = OnceLock::new();
    PROGRAMS.get_or_init(|| {
        let j = |n: &str| debian_jar("one of the corpus packages or their dependencies", n);
        let scala = [
            "scala-library-2.11.jar",
            "scala-compiler-2.11.jar",
            "scala-reflect-2.11.jar",
            "scala-xml_2.11.jar",
        ];
        let fop_cp = [
            "fop.jar",
            "batik-all.jar",
            "xalan2.jar",
            "serializer.jar",
            "commons-io.jar",
            "xml-apis.jar",
            "commons-logging.jar",
            "xercesImpl.jar",
            "xmlgraphics-commons.jar",
            "xml-apis-ext.jar",
            "fontbox2.jar",
        ];
        vec![
            Program {
                name: "xalan-xslt",
                classpath: vec![j("xalan2.jar"), j("serializer.jar")],
                jvm_args: vec![],
                main: "org.apache.xalan.xslt.Process",
                args: vec![
                    "-IN",
                    "{in}/xalan-inventory.xml",
                    "-XSL",
                    "{in}/xalan-inventory.xsl",
                    "-OUT",
                    "out.html",
                ],
                outputs: vec!["out.html"],
            },
            Program {
                name: "h2-sql",
                classpath: vec![j("h2.jar")],
                jvm_args: vec![],
                main: "org.h2.tools.RunScript",
                args: vec![
                    "-url",
                    "jdbc:h2:mem:corpus",
                    "-script",
                    "{in}/h2-script.sql",
                    "-showResults",
                ],
                outputs: vec![],
            },
            Program {
                name: "groovy-script",
                classpath: vec![j("groovy-all.jar")],
                jvm_args: vec![],
                main: "groovy.ui.GroovyMain",
                args: vec!["{in}/GroovyScript.groovy"],
                outputs: vec![],
            },
            Program {
                name: "jython-script",
                classpath: vec![j("jython.jar")],
                jvm_args: vec![
                    "-Dpython.cachedir.skip=true",
                    "-Dpython.home=/usr/share/jython",
                ],
                main: "org.python.util.jython",
                args: vec!["{in}/jython-script.py"],
                outputs: vec![],
            },
            Program {
                name: "scala-script",
                classpath: scala.iter().map(|n| j(n)).collect(),
                jvm_args: vec!["-Dscala.usejavacp=true"],
                main: "scala.tools.nsc.MainGenericRunner",
                args: vec!["-nc", "{in}/scala-script.scala"],
                outputs: vec![],
            },
            Program {
                name: "batik-rasterize",
                classpath: [
                    "batik-all.jar",
                    "xmlgraphics-commons.jar",
                    "xml-apis-ext.jar",
                    "commons-io.jar",
                    "commons-logging.jar",
                ]
                .iter()
                .map(|n| j(n))
                .collect(),
                jvm_args: vec![],
                main: "org.apache.batik.apps.rasterizer.Main",
                args: vec![
                    "-scriptSecurityOff",
                    "-d",
                    "out.png",
                    "{in}/batik-drawing.svg",
                ],
                outputs: vec!["out.png"],
            },
            Program {
                name: "fop-pdf",
                classpath: fop_cp.iter().map(|n| j(n)).collect(),
                jvm_args: vec![],
                main: "org.apache.fop.cli.Main",
                args: vec!["-q", "-fo", "{in}/fop-document.fo", "-pdf", "out.pdf"],
                outputs: vec!["out.pdf"],
            },
            Program {
                name: "asm-textify",
                classpath: ASM_JARS.iter().map(|n| j(n)).collect(),
                jvm_args: vec![],
                main: "org.objectweb.asm.util.Textifier",
                args: vec!["java.util.HashMap"],
                outputs: vec![],
            },
        ]
    })
}

/// What a program did: exit status, stdout, and its output files (PDF dates blanked).
#[derive(Debug, PartialEq, Eq)]
struct RunResult {
    status: Option<i32>,
    stdout: String,
    files: Vec<(String, Vec<u8>)>,
    /// Kept for diagnosis only: JUL log lines carry timestamps, so stderr is not compared.
    stderr_for_humans: IgnoredInEq,
}

impl RunResult {
    fn describe(&self) -> String {
        let files: Vec<String> = self
            .files
            .iter()
            .map(|(n, d)| format!("{n}: {} bytes", d.len()))
            .collect();
        format!(
            "exit {:?}\nstdout:\n{}\nfiles: {}\nstderr:\n{}",
            self.status,
            self.stdout,
            files.join(", "),
            self.stderr_for_humans.0
        )
    }
}

/// A string that every instance compares equal to.
#[derive(Debug)]
struct IgnoredInEq(String);

impl PartialEq for IgnoredInEq {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for IgnoredInEq {}

fn original_run(program: &Program) -> &'static RunResult {
    static ORIGINALS: OnceLock<BTreeMap<&'static str, RunResult>> = OnceLock::new();
    let originals = ORIGINALS.get_or_init(|| {
        let (hooks, _) = tools();
        let dir = work_dir().join("original");
        let _ = fs::remove_dir_all(&dir);
        programs()
            .iter()
            .map(|p| {
                let result = run_program(p, &dir.join(p.name), hooks, &BTreeMap::new());
                assert_eq!(
                    result.status,
                    Some(0),
                    "{} fails even uninstrumented:\n{}",
                    p.name,
                    result.describe()
                );
                (p.name, result)
            })
            .collect()
    });
    &originals[program.name]
}

fn run_program(
    program: &Program,
    dir: &Path,
    hooks: &Path,
    instrumented: &BTreeMap<PathBuf, PathBuf>,
) -> RunResult {
    fs::create_dir_all(dir).unwrap();
    let inputs = repo_root().join("tools/programs");
    let inputs = fs::canonicalize(&inputs).unwrap_or(inputs);
    let cp: Vec<String> = program
        .classpath
        .iter()
        .map(|j| instrumented.get(j).unwrap_or(j).display().to_string())
        .collect();
    let out = run(Command::new("timeout")
        .arg(JVM_TIMEOUT)
        .arg(jdk().join("bin/java"))
        .current_dir(dir)
        .arg("-Xverify:all")
        .arg(format!("-Xbootclasspath/a:{}", hooks.display()))
        .arg("-Djava.awt.headless=true")
        .args(&program.jvm_args)
        .args(["-cp", &cp.join(":"), program.main])
        .args(
            program
                .args
                .iter()
                .map(|a| a.replace("{in}", &inputs.display().to_string())),
        ));
    let files = program
        .outputs
        .iter()
        .map(|name| {
            let data = fs::read(dir.join(name)).unwrap_or_default();
            (
                name.to_string(),
                if name.ends_with(".pdf") {
                    blank_pdf_dates(data)
                } else {
                    data
                },
            )
        })
        .collect();
    RunResult {
        status: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        files,
        stderr_for_humans: IgnoredInEq(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

/// Zeroes what FOP derives from the clock (creation dates, document id), keeping lengths.
fn blank_pdf_dates(mut pdf: Vec<u8>) -> Vec<u8> {
    let n = pdf.len();
    let mut i = 0;
    while i < n {
        // "D:" + 14 digits (PDF dates), "dddd-dd-ddTdd:dd:dd" (XMP dates).
        if pdf[i..].starts_with(b"D:")
            && i + 16 <= n
            && pdf[i + 2..i + 16].iter().all(u8::is_ascii_digit)
        {
            pdf[i + 2..i + 16].fill(b'0');
        } else if i + 19 <= n && is_iso_date(&pdf[i..i + 19]) {
            for b in &mut pdf[i..i + 19] {
                if b.is_ascii_digit() {
                    *b = b'0';
                }
            }
        } else if pdf[i..].starts_with(b"/ID [<") {
            let mut j = i + 6;
            while j < n && pdf[j] != b']' {
                if pdf[j].is_ascii_hexdigit() {
                    pdf[j] = b'0';
                }
                j += 1;
            }
        }
        i += 1;
    }
    pdf
}

fn is_iso_date(s: &[u8]) -> bool {
    let shape = b"dddd-dd-ddTdd:dd:dd";
    s.iter().zip(shape).all(|(c, p)| {
        if *p == b'd' {
            c.is_ascii_digit()
        } else {
            c == p
        }
    })
}

#[test]
fn pdf_dates_are_blanked_but_nothing_else() {
    let pdf = b"/CreationDate (D:20261121085307Z) <xmp:CreateDate>2026-11-21T08:53:07Z</xmp:CreateDate> /ID [<E2F3> <0A>] 12-34".to_vec();
    assert_eq!(
        String::from_utf8(blank_pdf_dates(pdf)).unwrap(),
        "/CreationDate (D:00000000000000Z) <xmp:CreateDate>0000-00-00T00:00:00Z</xmp:CreateDate> /ID [<0000> <00>] 12-34"
    );
}

#[test]
fn probe_entry_exit() {
    check_probe(ProbeKind::EntryExit);
}

#[test]
fn probe_blocks() {
    check_probe(ProbeKind::Blocks);
}

#[test]
fn probe_blocks_precise() {
    check_probe(ProbeKind::BlocksPrecise);
}

#[test]
fn probe_alloc() {
    check_probe(ProbeKind::Alloc);
}

#[test]
fn probe_native() {
    check_probe(ProbeKind::Native);
}
