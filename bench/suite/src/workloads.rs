//! The workloads: real programs from Debian packages, driven deterministically, each printing
//! `checksum NAME HEX` as its last line. Drivers are in `bench/suite/java/suite/`, scripts in
//! `bench/suite/programs/`.

use std::path::{Path, PathBuf};

/// Where Debian installs its jars.
pub const DEBIAN_JAVA: &str = "/usr/share/java";

/// One workload. `args` may use `{scale}`, `{work}` (the prepared work directory), `{programs}`
/// (bench/suite/programs) and `{run}` (this run's own directory, also the JVM's working directory).
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    pub name: &'static str,
    /// One line for the table: what the program does.
    pub what: &'static str,
    /// Debian jars (file names without `.jar`; a versioned `NAME-1.2.jar` is found too).
    pub jars: &'static [&'static str],
    /// Whether the suite's compiled drivers go on the class path.
    pub drivers: bool,
    pub jvm_args: &'static [&'static str],
    pub main: &'static str,
    pub args: &'static [&'static str],
    /// Scale of the timed run (5-30 s baseline on the reference machine).
    pub scale: u32,
    /// Scale of the CI smoke run, for the workloads in the smoke subset.
    pub smoke_scale: Option<u32>,
    /// Root of the "lazy from main" mode.
    pub main_root: &'static str,
    /// A root whose call subgraph takes roughly 10% of the run, chosen once with
    /// tools/pick-root.py from a JFR recording of this workload (`root_share`: the share of JFR's
    /// execution samples whose stack contains it). Where the method has overloads that call each
    /// other, the pattern names one by its descriptor, one every call goes through (javac's and
    /// Xerces' innermost; Jython's five-argument `initialize`, which does the work, while the
    /// private one below it is a short helper): code-region mode counts each overload's
    /// outermost invocations separately, so `region` must name one method for the suite's
    /// charged / region measure to compare the same invocations.
    pub root: &'static str,
    pub root_share: &'static str,
    /// The method measured by code-region mode.
    pub region: &'static str,
    /// Debian packages it needs (for messages).
    pub packages: &'static str,
}

/// Arguments every workload's JVM gets: fixed locale (messages and number formats) and headless AWT.
pub const COMMON_JVM_ARGS: [&str; 3] = [
    "-Duser.language=en",
    "-Duser.country=US",
    "-Djava.awt.headless=true",
];

const FOP_JARS: &[&str] = &[
    "fop",
    "batik-all",
    "xalan2",
    "serializer",
    "commons-io",
    "xml-apis",
    "commons-logging",
    "xercesImpl",
    "xmlgraphics-commons",
    "xml-apis-ext",
    "fontbox2",
];

pub const WORKLOADS: &[Workload] = &[
    Workload {
        name: "javac",
        what: "javac (in-process) compiles the first SCALE files (in path order) of the JDK 17 java.xml sources",
        jars: &[],
        drivers: true,
        jvm_args: &[],
        main: "suite.Javac",
        args: &["{scale}", "{work}/javac-src/java.xml", "{run}/javac-out"],
        scale: 200,
        smoke_scale: None,
        main_root: "suite.Javac::main",
        root: "com.sun.tools.javac.main.JavaCompiler::parseFiles(Ljava/lang/Iterable;Z)Lcom/sun/tools/javac/util/List;",
        root_share: "13%",
        region: "com.sun.tools.javac.main.JavaCompiler::parseFiles(Ljava/lang/Iterable;Z)Lcom/sun/tools/javac/util/List;",
        packages: "openjdk-17-jdk-headless (sources from openjdk-17-source, downloaded by prepare)",
    },
    Workload {
        name: "xalan",
        what: "Xalan XSLT: keys, grouping, sorting, number formatting over generated inventories",
        jars: &["xalan2", "serializer"],
        drivers: true,
        jvm_args: &[],
        main: "suite.Xalan",
        args: &["{scale}"],
        scale: 55,
        smoke_scale: Some(0),
        main_root: "suite.Xalan::main",
        root: "org.apache.xpath.functions.FuncGenerateId::execute",
        root_share: "11%",
        region: "org.apache.xpath.functions.FuncGenerateId::execute",
        packages: "libxalan2-java",
    },
    Workload {
        name: "fop",
        what: "FOP lays out and renders generated documents (paragraphs, tables) to PDF",
        jars: FOP_JARS,
        drivers: true,
        jvm_args: &[],
        main: "suite.FopPdf",
        args: &["{scale}"],
        scale: 10,
        smoke_scale: None,
        main_root: "suite.FopPdf::main",
        root: "org.apache.fop.layoutmgr.table.TableLayoutManager::getNextKnuthElements",
        root_share: "12%",
        region: "org.apache.fop.layoutmgr.table.TableLayoutManager::getNextKnuthElements",
        packages: "fop",
    },
    Workload {
        name: "batik",
        what: "Batik parses and rasterizes generated SVG drawings to PNG",
        jars: &[
            "batik-all",
            "xmlgraphics-commons",
            "xml-apis-ext",
            "commons-io",
            "commons-logging",
        ],
        drivers: true,
        jvm_args: &[],
        main: "suite.Batik",
        args: &["{scale}"],
        scale: 5,
        smoke_scale: None,
        main_root: "suite.Batik::main",
        root: "org.apache.batik.bridge.GVTBuilder::build",
        root_share: "13%",
        region: "org.apache.batik.bridge.GVTBuilder::build",
        packages: "libbatik-java",
    },
    Workload {
        name: "h2",
        what: "H2 in-memory SQL: batch inserts, joins, aggregates, point queries, updates",
        jars: &["h2"],
        drivers: true,
        jvm_args: &[],
        main: "suite.H2",
        args: &["{scale}"],
        scale: 27,
        smoke_scale: Some(0),
        main_root: "suite.H2::main",
        root: "org.h2.engine.SessionLocal::commit",
        root_share: "12%",
        region: "org.h2.engine.SessionLocal::commit",
        packages: "libh2-java",
    },
    Workload {
        name: "lucene",
        what: "Lucene 8 indexes generated documents in memory, then runs term/boolean/phrase/prefix queries",
        jars: &["lucene-core"],
        drivers: true,
        jvm_args: &[],
        main: "suite.Lucene",
        args: &["{scale}"],
        scale: 4,
        smoke_scale: None,
        main_root: "suite.Lucene::main",
        root: "org.apache.lucene.search.IndexSearcher::doc",
        root_share: "9%",
        region: "org.apache.lucene.search.IndexSearcher::doc",
        packages: "liblucene8-java",
    },
    Workload {
        name: "jython",
        what: "Jython 2.7 runs a Python benchmark script (trees, generators, dicts, strings, recursion, exceptions)",
        jars: &["jython"],
        drivers: false,
        jvm_args: &[
            "-Dpython.cachedir.skip=true",
            "-Dpython.home=/usr/share/jython",
        ],
        main: "org.python.util.jython",
        args: &["{programs}/bench.py", "{scale}"],
        scale: 32,
        smoke_scale: None,
        main_root: "org.python.util.jython::main",
        root: "org.python.core.PySystemState::initialize(Ljava/util/Properties;Ljava/util/Properties;[Ljava/lang/String;Ljava/lang/ClassLoader;Lorg/python/core/adapter/ExtensiblePyObjectAdapter;)V",
        root_share: "13%",
        region: "org.python.core.PySystemState::initialize(Ljava/util/Properties;Ljava/util/Properties;[Ljava/lang/String;Ljava/lang/ClassLoader;Lorg/python/core/adapter/ExtensiblePyObjectAdapter;)V",
        packages: "jython",
    },
    Workload {
        name: "groovy",
        what: "Groovy 2.4 runs a benchmark script (closures, dynamic dispatch, collections, exceptions)",
        jars: &["groovy-all"],
        drivers: false,
        jvm_args: &[],
        main: "groovy.ui.GroovyMain",
        args: &["{programs}/bench.groovy", "{scale}"],
        scale: 100,
        smoke_scale: None,
        main_root: "groovy.ui.GroovyMain::main",
        root: "org.codehaus.groovy.runtime.DefaultGroovyMethods::collect",
        root_share: "13%",
        region: "org.codehaus.groovy.runtime.DefaultGroovyMethods::collect",
        packages: "groovy",
    },
    Workload {
        name: "asm-threads",
        what: "multi-threaded: 8 threads run ASM (parse, data-flow analysis, write) over 3000 java.base classes",
        jars: &["asm", "asm-tree", "asm-analysis"],
        drivers: true,
        jvm_args: &[],
        main: "suite.AsmThreads",
        args: &["{scale}"],
        scale: 5,
        smoke_scale: None,
        main_root: "suite.AsmThreads::main",
        root: "org.objectweb.asm.tree.ClassNode::accept",
        root_share: "11%",
        region: "org.objectweb.asm.tree.ClassNode::accept",
        packages: "libasm-java",
    },
    Workload {
        name: "xerces-errors",
        what: "exception-heavy: Xerces parses small documents, 1/3 malformed, 1/3 aborted by a handler exception",
        jars: &["xercesImpl"],
        drivers: true,
        jvm_args: &[],
        main: "suite.XercesErrors",
        args: &["{scale}"],
        scale: 36,
        smoke_scale: Some(0),
        main_root: "suite.XercesErrors::main",
        root: "org.apache.xerces.impl.XMLErrorReporter::reportError(Lorg/apache/xerces/xni/XMLLocator;Ljava/lang/String;Ljava/lang/String;[Ljava/lang/Object;SLjava/lang/Exception;)Ljava/lang/String;",
        root_share: "9%",
        region: "org.apache.xerces.impl.XMLErrorReporter::reportError(Lorg/apache/xerces/xni/XMLLocator;Ljava/lang/String;Ljava/lang/String;[Ljava/lang/Object;SLjava/lang/Exception;)Ljava/lang/String;",
        packages: "libxerces2-java",
    },
];

/// The jar `NAME.jar` in `dir`, or else the highest-sorting `NAME-<version>.jar`.
pub fn find_jar(dir: &Path, name: &str) -> Option<PathBuf> {
    let exact = dir.join(format!("{name}.jar"));
    if exact.is_file() {
        return Some(exact);
    }
    let prefix = format!("{name}-");
    let mut versioned: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix(&prefix))
                .is_some_and(|rest| {
                    rest.starts_with(|c: char| c.is_ascii_digit()) && rest.ends_with(".jar")
                })
        })
        .collect();
    versioned.sort();
    versioned.pop()
}

/// Looks a workload up by name.
pub fn by_name(name: &str) -> Option<&'static Workload> {
    WORKLOADS.iter().find(|w| w.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versioned_jar_is_found_when_the_plain_name_is_missing() {
        let dir = std::env::temp_dir().join(format!("suite-jars-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for f in [
            "lucene-core-8.7.0.jar",
            "lucene-core-8.10.0.jar",
            "lucene-corex-9.jar",
            "h2.jar",
        ] {
            std::fs::write(dir.join(f), b"").unwrap();
        }
        assert_eq!(find_jar(&dir, "h2"), Some(dir.join("h2.jar")));
        // Sorted by name: 8.7.0 > 8.10.0; either is a lucene-core, never lucene-corex.
        assert_eq!(
            find_jar(&dir, "lucene-core"),
            Some(dir.join("lucene-core-8.7.0.jar"))
        );
        assert_eq!(find_jar(&dir, "asm"), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn workload_names_are_unique_and_the_smoke_subset_is_small() {
        let mut names: Vec<_> = WORKLOADS.iter().map(|w| w.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), WORKLOADS.len());
        assert!(WORKLOADS.len() >= 8);
        let smoke = WORKLOADS.iter().filter(|w| w.smoke_scale.is_some()).count();
        assert_eq!(smoke, 3);
    }
}
