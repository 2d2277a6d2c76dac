//! Test harness: compiles a Java program under `tests/java/<case>`, runs it on JDK 17
//! to learn which classes the JVM really loads and which methods it really invokes
//! (`-Xlog:class+load`, `-XX:+LogTouchedMethods`), and feeds those classes to a planner.

#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use ferrofluid_subgraph::{Batch, LoaderId, MethodId, Planner, BOOTSTRAP};
use ferrofluid_testkit::JDK17_HOME;

/// Loader id the tests give the application class loader.
pub const APP: LoaderId = 1;

/// The bytes of class `class`, compiled by javac (`--release 17`) from
/// `tests/java/<case>/<class>.java`.
pub fn class_file(case: &str, class: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/java")
        .join(case)
        .join(format!("{class}.java"));
    ferrofluid_testkit::javac(
        Path::new(JDK17_HOME),
        &["--release", "17"],
        dir.path(),
        [src],
    );
    std::fs::read(dir.path().join(format!("{class}.class"))).unwrap()
}

/// Every class of `java.base`, by internal name.
pub fn java_base() -> &'static HashMap<String, Vec<u8>> {
    static CLASSES: OnceLock<HashMap<String, Vec<u8>>> = OnceLock::new();
    CLASSES.get_or_init(|| {
        let path = Path::new(JDK17_HOME).join("jmods/java.base.jmod");
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // A jmod is a zip after a 4-byte `JM\1\0` header.
        assert_eq!(&bytes[..4], b"JM\x01\x00");
        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(&bytes[4..])).unwrap();
        let mut out = HashMap::new();
        for i in 0..zip.len() {
            let mut entry = zip.by_index(i).unwrap();
            let Some(name) = entry
                .name()
                .strip_prefix("classes/")
                .and_then(|n| n.strip_suffix(".class"))
                .map(str::to_owned)
            else {
                continue;
            };
            if name == "module-info" {
                continue;
            }
            let mut data = Vec::with_capacity(entry.size() as usize);
            entry.read_to_end(&mut data).unwrap();
            out.insert(name, data);
        }
        out
    })
}

/// A method as `(internal class, name, descriptor)`.
pub type Sig = (String, String, String);

/// What one run of a Java program showed.
pub struct Run {
    /// Compiled classes.
    pub dir: tempfile::TempDir,
    /// Classes in the order the JVM loaded them, with their loader: JDK classes
    /// (bootstrap) and the program's own (application loader). Hidden classes are left
    /// out: the JVM does not offer them to a class-file load hook.
    pub loaded: Vec<(LoaderId, String)>,
    /// Methods the JVM invoked at least once.
    pub touched: HashSet<Sig>,
}

impl Run {
    /// The bytes of a loaded class.
    pub fn bytes(&self, loader: LoaderId, class: &str) -> Vec<u8> {
        if loader == BOOTSTRAP {
            java_base()
                .get(class)
                .unwrap_or_else(|| panic!("{class} not in java.base"))
                .clone()
        } else {
            std::fs::read(self.dir.path().join(format!("{class}.class"))).unwrap()
        }
    }

    /// Registers the loaded classes (all, or all but `except`) and plans them.
    pub fn load_all(&self, planner: &mut Planner, except: &[&str]) -> Batch {
        planner.set_loader_parent(APP, BOOTSTRAP);
        for (loader, class) in &self.loaded {
            if except.contains(&class.as_str()) {
                continue;
            }
            assert!(planner
                .add_class(*loader, &self.bytes(*loader, class))
                .unwrap());
        }
        planner.plan()
    }

    /// Whether the JVM invoked the method `id`.
    pub fn was_invoked(&self, planner: &Planner, id: MethodId) -> bool {
        let m = planner.method(id).unwrap();
        self.touched.contains(&(
            m.class.to_owned(),
            m.name.to_owned(),
            m.descriptor.to_owned(),
        ))
    }

    /// Plays the run's first invocations against the planner until nothing new is
    /// instrumented that the run invoked (what the agent sees when every method the
    /// program runs reports its first call). Returns the batches, in order.
    pub fn replay(&self, planner: &mut Planner) -> Vec<Batch> {
        let mut batches = Vec::new();
        loop {
            let next: Vec<MethodId> = (0..planner.counters().instrumented as MethodId)
                .filter(|&id| !planner.is_invoked(id) && self.was_invoked(planner, id))
                .collect();
            if next.is_empty() {
                return batches;
            }
            for id in next {
                batches.push(planner.first_invocation(id).unwrap());
            }
        }
    }
}

fn source_dir(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/java")
        .join(case)
}

/// Compiles `tests/java/<case>/*.java` and runs `main`.
pub fn compile_and_run(case: &str, main: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let bin = Path::new(JDK17_HOME).join("bin");
    let sources: Vec<PathBuf> = std::fs::read_dir(source_dir(case))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "java"))
        .collect();
    ferrofluid_testkit::javac(Path::new(JDK17_HOME), &[], dir.path(), &sources);
    let load_log = dir.path().join("load.log");
    let out = Command::new(bin.join("java"))
        .arg("-Xshare:off")
        .arg(format!("-Xlog:class+load=info:file={}", load_log.display()))
        .args([
            "-XX:+UnlockDiagnosticVMOptions",
            "-XX:+LogTouchedMethods",
            "-XX:+PrintTouchedMethodsAtExit",
            "-cp",
        ])
        .arg(dir.path())
        .arg(main)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{main} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let touched = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let (class_method, descriptor) = l.split_once(':')?;
            let (class, method) = class_method.rsplit_once('.')?;
            Some((class.to_owned(), method.to_owned(), descriptor.to_owned()))
        })
        .collect();
    let loaded = std::fs::read_to_string(&load_log)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let rest = l.split("[class,load] ").nth(1)?;
            let (name, source) = rest.split_once(" source: ")?;
            let internal = name.replace('.', "/");
            if source.starts_with("jrt:/java.base") || source == "shared objects file" {
                // jlink generates a few classes (SystemModules$default...) that are in the
                // runtime image but not in the jmod.
                java_base()
                    .contains_key(&internal)
                    .then_some((BOOTSTRAP, internal))
            } else if source.starts_with("file:") {
                Some((APP, internal))
            } else {
                None
            }
        })
        .collect();
    Run {
        dir,
        loaded,
        touched,
    }
}

/// `Class.method` for each method of a batch, in batch order.
pub fn names(planner: &Planner, batch: &Batch) -> Vec<String> {
    batch
        .ids()
        .map(|id| {
            let m = planner.method(id).unwrap();
            format!("{}.{}", m.class, m.name)
        })
        .collect()
}

/// Reports the first invocation of `id` and names what it revealed.
pub fn first(planner: &mut Planner, id: MethodId) -> Vec<String> {
    let batch = planner.first_invocation(id).unwrap();
    names(planner, &batch)
}
