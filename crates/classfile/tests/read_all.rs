//! "Read every class file": `read_all` over every class of the JDK's jmods, each
//! cross-checked against the independent `cafebabe` parser.
//!
//! Run with `--release` (about 20 s; debug builds take minutes):
//! `cargo test --release -p ferrofluid-classfile --test read_all -- --nocapture`.

use std::collections::BTreeMap;
use std::io::{Cursor as IoCursor, Read};
use std::path::{Path, PathBuf};

use ferrofluid_classfile::attributes::{
    decode, kind_of, read_all, Attribute, AttributeKind, Context, Location,
};
use ferrofluid_classfile::{ClassFile, RawAttribute};

const JDK17: &str = "/usr/lib/jvm/java-17-openjdk-amd64";
const JDK25: &str = "/usr/lib/jvm/temurin-25-jdk-amd64";

/// Every `classes/**.class` entry of every jmod under `dir`, as (jmod name, entry name, bytes).
fn jmod_classes(dir: &Path) -> Vec<(String, String, Vec<u8>)> {
    let mut jmods: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jmod"))
        .collect();
    jmods.sort();
    assert!(!jmods.is_empty(), "no .jmod files in {}", dir.display());
    let mut out = Vec::new();
    for jmod in &jmods {
        let bytes = std::fs::read(jmod).unwrap();
        // A jmod is the magic "JM" 0x01 0x00 followed by a zip archive.
        assert_eq!(
            &bytes[..4],
            b"JM\x01\x00",
            "{} is not a jmod",
            jmod.display()
        );
        let mut zip = zip::ZipArchive::new(IoCursor::new(&bytes[4..]))
            .unwrap_or_else(|e| panic!("{}: bad zip: {e}", jmod.display()));
        let name = jmod.file_name().unwrap().to_string_lossy().into_owned();
        for i in 0..zip.len() {
            let mut entry = zip.by_index(i).unwrap();
            if entry.name().starts_with("classes/") && entry.name().ends_with(".class") {
                let mut data = Vec::with_capacity(entry.size() as usize);
                entry.read_to_end(&mut data).unwrap();
                out.push((name.clone(), entry.name().to_owned(), data));
            }
        }
    }
    out
}

/// Totals over a corpus, printed at the end.
#[derive(Default)]
struct Totals {
    classes: usize,
    bytes: usize,
    fields: usize,
    methods: usize,
    code_bytes: usize,
    attributes: u64,
    misplaced: usize,
    by_kind: BTreeMap<&'static str, u64>,
    versions: BTreeMap<u16, usize>,
}

fn check_corpus(label: &str, classes: &[(String, String, Vec<u8>)]) -> Totals {
    let mut totals = Totals::default();
    let mut failures = Vec::new();
    for (jmod, entry, bytes) in classes {
        match read_all(bytes) {
            Ok(summary) => {
                totals.classes += 1;
                totals.bytes += bytes.len();
                totals.fields += summary.fields;
                totals.methods += summary.methods;
                totals.code_bytes += summary.code_bytes;
                totals.attributes += summary.attributes() as u64;
                totals.misplaced += summary.misplaced;
                *totals.versions.entry(summary.major).or_default() += 1;
                for &kind in AttributeKind::ALL {
                    *totals.by_kind.entry(kind.name()).or_default() += summary.count(kind) as u64;
                }
                if let Err(why) = cross_check(bytes) {
                    failures.push(format!("{jmod}!{entry}: differs from cafebabe: {why}"));
                }
            }
            Err(e) => failures.push(format!("{jmod}!{entry}: {e}")),
        }
    }
    println!(
        "{label}: {} classes, {} bytes, {} fields, {} methods, {} code bytes, {} attributes ({} outside the places JVMS lists)",
        totals.classes, totals.bytes, totals.fields, totals.methods, totals.code_bytes, totals.attributes, totals.misplaced
    );
    println!("{label}: class-file versions {:?}", totals.versions);
    for (name, n) in &totals.by_kind {
        println!("{label}:   {name:40} {n:>9}");
    }
    assert!(
        failures.is_empty(),
        "{label}: {} failures, first ones:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
    totals
}

/// Compares what `ferrofluid` and `cafebabe` see: names, counts, attribute names,
/// `Code` sizes and handler counts, and the lengths of common tables.
fn cross_check(bytes: &[u8]) -> Result<(), String> {
    let mut options = cafebabe::ParseOptions::default();
    options.parse_bytecode(false);
    let theirs = cafebabe::parse_class_with_options(bytes, &options)
        .map_err(|e| format!("cafebabe failed: {e}"))?;
    let ours = ClassFile::parse(bytes).map_err(|e| e.to_string())?;
    let cp = &ours.constant_pool;
    let ctx = Context::new(&ours, Location::Class);
    let same = |what: &str, a: String, b: String| {
        if a == b {
            Ok(())
        } else {
            Err(format!("{what}: {a} vs {b}"))
        }
    };
    same(
        "this_class",
        ours.name().unwrap().into_owned(),
        theirs.this_class.to_string(),
    )?;
    same(
        "major",
        ours.major.to_string(),
        theirs.major_version.to_string(),
    )?;
    same(
        "fields",
        ours.fields.len().to_string(),
        theirs.fields.len().to_string(),
    )?;
    same(
        "methods",
        ours.methods.len().to_string(),
        theirs.methods.len().to_string(),
    )?;
    for (f, g) in ours.fields.iter().zip(&theirs.fields) {
        same(
            "field name",
            f.name(cp).unwrap().into_owned(),
            g.name.to_string(),
        )?;
        compare_attributes(&f.attributes, &g.attributes, cp, ctx.at(Location::Field))?;
    }
    for (m, n) in ours.methods.iter().zip(&theirs.methods) {
        same(
            "method name",
            m.name(cp).unwrap().into_owned(),
            n.name.to_string(),
        )?;
        compare_attributes(&m.attributes, &n.attributes, cp, ctx.at(Location::Method))?;
    }
    compare_attributes(&ours.attributes, &theirs.attributes, cp, ctx)
}

fn compare_attributes(
    ours: &[RawAttribute<'_>],
    theirs: &[cafebabe::attributes::AttributeInfo<'_>],
    cp: &ferrofluid_classfile::ConstantPool<'_>,
    ctx: Context,
) -> Result<(), String> {
    use cafebabe::attributes::AttributeData as T;
    let names: Vec<_> = ours
        .iter()
        .map(|a| a.name(cp).unwrap().into_owned())
        .collect();
    let their_names: Vec<_> = theirs.iter().map(|a| a.name.to_string()).collect();
    if names != their_names {
        return Err(format!("attribute names {names:?} vs {their_names:?}"));
    }
    for (raw, info) in ours.iter().zip(theirs) {
        // Whatever we do not know, cafebabe does not know either.
        if kind_of(raw, cp).unwrap() == AttributeKind::Unknown && !matches!(info.data, T::Other(_))
        {
            return Err(format!(
                "{} is unknown to us but not to cafebabe",
                info.name
            ));
        }
        let decoded = decode(*raw, cp, ctx).map_err(|e| e.to_string())?;
        let mismatch = |what: &str, a: usize, b: usize| {
            if a == b {
                Ok(())
            } else {
                Err(format!("{}: {what} {a} vs {b}", info.name))
            }
        };
        match (&decoded, &info.data) {
            (Attribute::Code(a), T::Code(b)) => {
                mismatch("max_stack", a.max_stack as usize, b.max_stack as usize)?;
                mismatch("max_locals", a.max_locals as usize, b.max_locals as usize)?;
                mismatch("code length", a.code.len(), b.code.len())?;
                mismatch("handlers", a.exception_table.len(), b.exception_table.len())?;
                for (h, i) in a.exception_table.iter().zip(&b.exception_table) {
                    mismatch("handler_pc", h.handler_pc as usize, i.handler_pc as usize)?;
                }
                compare_attributes(&a.attributes, &b.attributes, cp, ctx.at(Location::Code))?;
            }
            (Attribute::LineNumberTable(a), T::LineNumberTable(b)) => {
                mismatch("entries", a.len(), b.len())?;
                for (x, y) in a.iter().zip(b) {
                    mismatch("line", x.line as usize, y.line_number as usize)?;
                }
            }
            (Attribute::LocalVariableTable(a), T::LocalVariableTable(b)) => {
                mismatch("entries", a.len(), b.len())?
            }
            (Attribute::InnerClasses(a), T::InnerClasses(b)) => {
                mismatch("entries", a.len(), b.len())?
            }
            (Attribute::BootstrapMethods(a), T::BootstrapMethods(b)) => {
                mismatch("entries", a.len(), b.len())?;
                for (x, y) in a.iter().zip(b) {
                    mismatch("arguments", x.arguments.len(), y.arguments.len())?;
                }
            }
            (Attribute::RuntimeVisibleAnnotations(a), T::RuntimeVisibleAnnotations(b))
            | (Attribute::RuntimeInvisibleAnnotations(a), T::RuntimeInvisibleAnnotations(b)) => {
                mismatch("annotations", a.len(), b.len())?;
                for (x, y) in a.iter().zip(b) {
                    mismatch("elements", x.elements.len(), y.elements.len())?;
                }
            }
            (Attribute::RuntimeVisibleTypeAnnotations(a), T::RuntimeVisibleTypeAnnotations(b))
            | (
                Attribute::RuntimeInvisibleTypeAnnotations(a),
                T::RuntimeInvisibleTypeAnnotations(b),
            ) => mismatch("type annotations", a.len(), b.len())?,
            (Attribute::MethodParameters(a), T::MethodParameters(b)) => {
                mismatch("parameters", a.len(), b.len())?
            }
            (Attribute::Exceptions(a), T::Exceptions(b)) => {
                mismatch("exceptions", a.len(), b.len())?
            }
            (Attribute::NestMembers(a), T::NestMembers(b))
            | (Attribute::PermittedSubclasses(a), T::PermittedSubclasses(b)) => {
                mismatch("classes", a.len(), b.len())?
            }
            (Attribute::ModulePackages(a), T::ModulePackages(b)) => {
                mismatch("packages", a.len(), b.len())?
            }
            (Attribute::Module(a), T::Module(b)) => {
                mismatch("requires", a.requires.len(), b.requires.len())?;
                mismatch("exports", a.exports.len(), b.exports.len())?;
                mismatch("opens", a.opens.len(), b.opens.len())?;
                mismatch("uses", a.uses.len(), b.uses.len())?;
                mismatch("provides", a.provides.len(), b.provides.len())?;
            }
            (Attribute::Record(a), T::Record(b)) => {
                mismatch("components", a.len(), b.len())?;
                for (x, y) in a.iter().zip(b) {
                    compare_attributes(
                        &x.attributes,
                        &y.attributes,
                        cp,
                        ctx.at(Location::RecordComponent),
                    )?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[test]
fn every_jdk17_jmod_class() {
    let home = std::env::var("JAVA_HOME")
        .ok()
        .filter(|h| Path::new(h).join("jmods").is_dir());
    let home = home.unwrap_or_else(|| JDK17.to_owned());
    let jmods = Path::new(&home).join("jmods");
    assert!(
        jmods.is_dir(),
        "{} is missing: install a JDK 17 with jmods (Debian: openjdk-17-jdk) or set JAVA_HOME",
        jmods.display()
    );
    let classes = jmod_classes(&jmods);
    let totals = check_corpus("jdk17", &classes);
    // JDK 17 has ~26,500 classes; every known attribute kind but SourceDebugExtension
    // (which only JSP/Kotlin-style compilers write) occurs in it.
    assert!(totals.classes > 20_000, "only {} classes", totals.classes);
    // Facts of javac 17 output: every class names its source, every method body has
    // line numbers, every module-info carries jlink's ModuleTarget.
    assert_eq!(totals.by_kind["SourceFile"], totals.classes as u64);
    assert_eq!(totals.by_kind["LineNumberTable"], totals.by_kind["Code"]);
    assert_eq!(totals.by_kind["Module"], totals.by_kind["ModuleTarget"]);
    assert_eq!(totals.misplaced, 0);
    // The kinds the JDK does not use; tests/data/valid covers them.
    let absent: Vec<&str> = totals
        .by_kind
        .iter()
        .filter(|(_, &n)| n == 0)
        .map(|(&k, _)| k)
        .collect();
    assert_eq!(
        absent,
        [
            "ModuleMainClass",
            "RuntimeInvisibleParameterAnnotations",
            "RuntimeInvisibleTypeAnnotations",
            "RuntimeVisibleParameterAnnotations",
            "RuntimeVisibleTypeAnnotations",
            "SourceDebugExtension",
            "Synthetic",
            "Unknown"
        ]
    );
}

/// Every class of every (non-symlink) jar in `dir`, as (jar name, entry name, bytes).
fn jar_classes(dir: &Path) -> Vec<(String, String, Vec<u8>)> {
    let mut jars: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    jars.retain(|p| p.extension().is_some_and(|x| x == "jar") && !p.is_symlink());
    jars.sort();
    let mut out = Vec::new();
    for jar in &jars {
        let Ok(mut zip) = zip::ZipArchive::new(std::fs::File::open(jar).unwrap()) else {
            continue;
        };
        let name = jar.file_name().unwrap().to_string_lossy().into_owned();
        for i in 0..zip.len() {
            let Ok(mut entry) = zip.by_index(i) else {
                continue;
            };
            // Multi-release jars keep newer variants under META-INF/versions: read those too.
            if entry.name().ends_with(".class") {
                let mut data = Vec::with_capacity(entry.size() as usize);
                if entry.read_to_end(&mut data).is_ok() {
                    out.push((name.clone(), entry.name().to_owned(), data));
                }
            }
        }
    }
    out
}

#[test]
fn every_debian_jar_class_if_present() {
    let classes = jar_classes(Path::new("/usr/share/java"));
    if classes.is_empty() {
        println!("skipped: no jars in /usr/share/java");
        return;
    }
    check_corpus("debian-jars", &classes);
}

#[test]
fn every_jdk25_jmod_class_if_present() {
    let jmods = Path::new(JDK25).join("jmods");
    if !jmods.is_dir() {
        // Since JDK 24 a JDK may ship without jmods (JEP 493); Temurin 25 does.
        println!("skipped: {} is missing", jmods.display());
        return;
    }
    let totals = check_corpus("jdk25", &jmod_classes(&jmods));
    assert!(totals.classes > 20_000, "only {} classes", totals.classes);
}
