//! `ferrofluid instrument`: static instrumentation of a `.class`, directory, `.jar`
//! or `.jmod`, written to a directory or `.jar`, with a summary of what was patched.

#[path = "../archive.rs"]
mod archive;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ferrofluid_classfile::{instrument, MethodSite, ProbeKind, ProbeOptions, Selection};

use archive::{ArchiveError, Entry, Output};

/// Arguments of `ferrofluid instrument`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    ferrofluid instrument app.jar out.jar --probe entry-exit\n  \
    ferrofluid instrument classes/ out/ --probe blocks --include 'com.acme.*'\n  \
    ferrofluid instrument $JAVA_HOME/jmods/java.base.jmod base/ --probe alloc --verbose")]
pub struct InstrumentArgs {
    /// Input: a .class file, a directory, a .jar or a .jmod.
    pub input: PathBuf,
    /// Output: a .jar (by extension), a .class (for a .class input), else a directory.
    pub output: PathBuf,
    /// Probe to insert: entry-exit, blocks, blocks-precise, alloc or native.
    #[arg(long)]
    pub probe: ProbeKind,
    /// Classes to patch, e.g. 'org.apache.*' or com.acme.Foo ('*' matches any text, dots or
    /// slashes); repeatable or comma-separated. Other classes are copied unchanged.
    #[arg(long, value_delimiter = ',', default_value = "*")]
    pub include: Vec<String>,
    /// Print one line per class and per method.
    #[arg(long)]
    pub verbose: bool,
}

/// Runs `ferrofluid instrument`.
pub fn run(args: InstrumentArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let patterns = Patterns::new(&args.include);
    let options = ProbeOptions::new(args.probe);
    // Check the input before creating anything, so a typo leaves no empty output behind.
    archive::InputKind::of(&args.input)?;
    let mut output = Output::create(&args.output, &args.input)?;
    let mut ids = SequentialIds {
        patterns: &patterns,
        next_method: 0,
        next_site: 0,
    };
    let mut summary = Summary::default();
    let input = args.input.as_path();

    let stats = archive::for_each_entry::<ArchiveError>(input, |entry| match entry {
        Entry::Dir(name) => output.add_dir(&name, input),
        Entry::File(name, _) if archive::is_signature_file(&name) => {
            summary.signatures_dropped.push(name);
            Ok(())
        }
        Entry::File(name, data) if name.ends_with(".class") => {
            let patched =
                instrument_class(&name, &data, &options, &mut ids, &mut summary, args.verbose);
            output.write(&name, patched.as_deref().unwrap_or(&data), input)
        }
        Entry::File(name, data) => {
            summary.other_copied += 1;
            output.write(&name, &data, input)
        }
    })?;
    output.finish()?;
    summary.jmod_other = stats.jmod_other;

    print!("{}", summary.render(args.probe, &args.input, &args.output));
    Ok(ExitCode::SUCCESS)
}

/// Instruments one class; returns new bytes, or `None` to copy the input unchanged.
fn instrument_class(
    entry: &str,
    data: &[u8],
    options: &ProbeOptions,
    ids: &mut SequentialIds<'_>,
    summary: &mut Summary,
    verbose: bool,
) -> Option<Vec<u8>> {
    // The engine promises not to panic; if it ever does, one class is lost, not the run.
    let result = catch_unwind(AssertUnwindSafe(|| instrument(data, options, ids)))
        .unwrap_or_else(|panic| Err(PanicError(panic_message(&panic)).into_class_error()));
    let out = match result {
        Ok(out) => out,
        Err(err) => {
            summary.classes_failed += 1;
            if verbose {
                println!("failed     {entry}: {err} (copied unchanged)");
            }
            return None;
        }
    };
    let patched = out.methods.iter().filter(|m| m.result.is_ok()).count();
    let skipped = out.methods.len() - patched;
    summary.methods_patched += patched;
    for m in &out.methods {
        if let Err(reason) = &m.result {
            *summary.skipped.entry(reason.key()).or_default() += 1;
        }
    }
    let state = if out.bytes.is_some() {
        summary.classes_patched += 1;
        "patched"
    } else {
        summary.classes_unchanged += 1;
        if !ids.patterns.matches(&out.class_name) {
            summary.classes_not_selected += 1;
        }
        "unchanged"
    };
    if verbose {
        let mut line = format!("{state:<10} {}", out.class_name);
        if out.methods.is_empty() {
            line.push_str(if ids.patterns.matches(&out.class_name) {
                " (no methods)"
            } else {
                " (not selected)"
            });
        } else {
            let _ = write!(line, " ({patched} methods patched, {skipped} skipped)");
        }
        println!("{line}");
        for m in &out.methods {
            match &m.result {
                Ok(()) => println!("  #{} {}{} patched", m.id, m.name, m.descriptor),
                Err(reason) => println!(
                    "  #{} {}{} skipped {}: {reason}",
                    m.id,
                    m.name,
                    m.descriptor,
                    reason.key()
                ),
            }
        }
    }
    out.bytes
}

/// A panic inside the engine, reported like a class error.
struct PanicError(String);

impl PanicError {
    fn into_class_error(self) -> ferrofluid_classfile::ClassError {
        ferrofluid_classfile::ClassError::new(
            ferrofluid_classfile::ErrorKind::BadCode,
            0,
            format!("engine panicked: {}", self.0),
        )
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

/// Hands out method ids and allocation-site ids in visiting order, to selected classes only.
struct SequentialIds<'p> {
    patterns: &'p Patterns,
    next_method: u32,
    next_site: u32,
}

impl Selection for SequentialIds<'_> {
    fn method_id(&mut self, method: &MethodSite<'_>) -> Option<u32> {
        if !self.patterns.matches(method.class) {
            return None;
        }
        let id = self.next_method;
        self.next_method += 1;
        Some(id)
    }

    fn alloc_site_id(&mut self, _method_id: u32, _bci: u32, _type_name: &str) -> u32 {
        let id = self.next_site;
        self.next_site += 1;
        id
    }
}

/// Class-name globs over internal names: `*` matches any text (including `/`).
#[derive(Debug)]
struct Patterns(Vec<String>);

impl Patterns {
    fn new(patterns: &[String]) -> Patterns {
        // Users write Java names (org.apache.*); the engine reports internal names (org/apache/X).
        Patterns(
            patterns
                .iter()
                .map(|p| p.trim().replace('.', "/"))
                .filter(|p| !p.is_empty())
                .collect(),
        )
    }

    fn matches(&self, class: &str) -> bool {
        self.0.iter().any(|p| glob(p.as_bytes(), class.as_bytes()))
    }
}

/// Wildcard match with `*` only, by the classic backtrack-to-last-star walk (linear in practice).
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Counts printed at the end of a run.
#[derive(Debug, Default)]
struct Summary {
    classes_patched: usize,
    classes_unchanged: usize,
    classes_not_selected: usize,
    classes_failed: usize,
    methods_patched: usize,
    skipped: BTreeMap<&'static str, usize>,
    other_copied: usize,
    signatures_dropped: Vec<String>,
    jmod_other: usize,
}

impl Summary {
    fn render(&self, probe: ProbeKind, input: &Path, output: &Path) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "instrumented {} -> {} with probe {probe}",
            input.display(),
            output.display()
        );
        let _ = writeln!(
            s,
            "classes: {} patched, {} unchanged ({} not selected), {} failed",
            self.classes_patched,
            self.classes_unchanged,
            self.classes_not_selected,
            self.classes_failed
        );
        let skipped: usize = self.skipped.values().sum();
        let reasons: Vec<String> = self
            .skipped
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let _ = write!(
            s,
            "methods: {} patched, {skipped} skipped",
            self.methods_patched
        );
        if !reasons.is_empty() {
            let _ = write!(s, " ({})", reasons.join(", "));
        }
        s.push('\n');
        let _ = writeln!(s, "other entries: {} copied unchanged", self.other_copied);
        if !self.signatures_dropped.is_empty() {
            let _ = writeln!(
                s,
                "signature files dropped (patched classes would break the signature): {}",
                self.signatures_dropped.join(", ")
            );
        }
        if self.jmod_other > 0 {
            let _ = writeln!(
                s,
                "jmod entries outside classes/ not copied (native libraries, config, legal): {}",
                self.jmod_other
            );
        }
        if self.classes_failed > 0 {
            let _ = writeln!(
                s,
                "failed classes were copied unchanged; run with --verbose to see why"
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_accept_dots_or_slashes_and_stars() {
        let p = Patterns::new(&["org.apache.*".to_owned(), "com/acme/Foo".to_owned()]);
        assert!(p.matches("org/apache/xalan/Process"));
        assert!(p.matches("com/acme/Foo"));
        assert!(!p.matches("com/acme/Foo$Inner"));
        assert!(!p.matches("org/apachex/Y"));
        assert!(!p.matches("java/lang/String"));
        assert!(Patterns::new(&["*".to_owned()]).matches("a/B"));
        assert!(Patterns::new(&["*Impl".to_owned()]).matches("a/b/FooImpl"));
        assert!(!Patterns::new(&["*Impl".to_owned()]).matches("a/b/FooImpl2"));
        assert!(Patterns::new(&["a.*.C*".to_owned()]).matches("a/x/y/Cz"));
    }

    #[test]
    fn ids_are_sequential_and_only_for_selected_classes() {
        let patterns = Patterns::new(&["a.*".to_owned()]);
        let mut ids = SequentialIds {
            patterns: &patterns,
            next_method: 0,
            next_site: 0,
        };
        let site = |class| MethodSite {
            class,
            name: "m",
            descriptor: "()V",
            access: 0,
        };
        assert_eq!(ids.method_id(&site("a/X")), Some(0));
        assert_eq!(ids.method_id(&site("b/X")), None);
        assert_eq!(ids.method_id(&site("a/Y")), Some(1));
        assert_eq!(ids.alloc_site_id(1, 7, "java/lang/Object"), 0);
        assert_eq!(ids.alloc_site_id(1, 9, "[I"), 1);
    }

    #[test]
    fn summary_lists_counts_and_skip_reasons() {
        let mut s = Summary {
            classes_patched: 3,
            classes_unchanged: 2,
            classes_not_selected: 1,
            classes_failed: 1,
            methods_patched: 10,
            other_copied: 4,
            signatures_dropped: vec!["META-INF/A.SF".to_owned(), "META-INF/A.RSA".to_owned()],
            ..Summary::default()
        };
        s.skipped.insert("abstract", 2);
        s.skipped.insert("native", 1);
        assert_eq!(
            s.render(ProbeKind::Blocks, Path::new("in.jar"), Path::new("out.jar")),
            "instrumented in.jar -> out.jar with probe blocks\n\
             classes: 3 patched, 2 unchanged (1 not selected), 1 failed\n\
             methods: 10 patched, 3 skipped (abstract 2, native 1)\n\
             other entries: 4 copied unchanged\n\
             signature files dropped (patched classes would break the signature): META-INF/A.SF, META-INF/A.RSA\n\
             failed classes were copied unchanged; run with --verbose to see why\n"
        );
    }
}
