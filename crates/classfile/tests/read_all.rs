//! "Read every class file": `read_all` over every class of JDK 17's jmods, of JDK 25
//! and of the Debian jars in /usr/share/java, each cross-checked against the
//! independent `cafebabe` parser; then exact checks of hand-compiled samples.
//!
//! Run with `--release` (about 30 s, plus 20 s once to extract JDK 25's image;
//! debug builds take minutes):
//! `cargo test --release -p ferrofluid-classfile --test read_all -- --nocapture`.

use std::collections::BTreeMap;
use std::io::{Cursor as IoCursor, Read};
use std::path::{Path, PathBuf};

use ferrofluid_classfile::attributes::{
    decode, kind_of, read_all, Attribute, AttributeKind, Context, Location,
};
use ferrofluid_classfile::{ClassFile, RawAttribute};
use ferrofluid_testkit::{JDK17_HOME as JDK17, JDK25_HOME as JDK25};

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
    instructions: usize,
    frames: usize,
    attributes: u64,
    misplaced: usize,
    /// Classes cafebabe cannot parse for a reason we know is cafebabe's.
    cafebabe_gaps: usize,
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
                totals.instructions += summary.instructions;
                totals.frames += summary.frames;
                totals.attributes += summary.attributes() as u64;
                totals.misplaced += summary.misplaced;
                *totals.versions.entry(summary.major).or_default() += 1;
                for &kind in AttributeKind::ALL {
                    *totals.by_kind.entry(kind.name()).or_default() += summary.count(kind) as u64;
                }
                match cross_check(bytes) {
                    // cafebabe 0.9 rejects dynamic constants (condy) as bootstrap
                    // arguments, which JVMS allows since class-file version 55.
                    Err(why)
                        if why.starts_with(CAFEBABE_FAILED)
                            && has_dynamic_bootstrap_argument(bytes) =>
                    {
                        println!("{label}: {jmod}!{entry}: skipped cross-check, {why}");
                        totals.cafebabe_gaps += 1;
                    }
                    Err(why) => {
                        failures.push(format!("{jmod}!{entry}: differs from cafebabe: {why}"))
                    }
                    Ok(()) => {}
                }
            }
            Err(e) => failures.push(format!("{jmod}!{entry}: {e}")),
        }
    }
    println!(
        "{label}: {} classes, {} bytes, {} fields, {} methods, {} code bytes, {} instructions, {} frames",
        totals.classes,
        totals.bytes,
        totals.fields,
        totals.methods,
        totals.code_bytes,
        totals.instructions,
        totals.frames
    );
    println!(
        "{label}: {} attributes ({} outside the places JVMS lists)",
        totals.attributes, totals.misplaced
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

const CAFEBABE_FAILED: &str = "cafebabe failed: ";

/// True when a bootstrap method of the class takes a CONSTANT_Dynamic argument.
fn has_dynamic_bootstrap_argument(bytes: &[u8]) -> bool {
    let class = ClassFile::parse(bytes).unwrap();
    let cp = &class.constant_pool;
    class.attributes.iter().any(|raw| {
        let ctx = Context::new(&class, Location::Class);
        matches!(decode(*raw, cp, ctx), Ok(Attribute::BootstrapMethods(methods))
            if methods.iter().flat_map(|m| &m.arguments).any(|&a| cp.tag(a) == Some(17)))
    })
}

/// Compares what `ferrofluid` and `cafebabe` see: names, counts, attribute names,
/// `Code` sizes and handler counts, and the lengths of common tables.
fn cross_check(bytes: &[u8]) -> Result<(), String> {
    let mut options = cafebabe::ParseOptions::default();
    options.parse_bytecode(false);
    let theirs = cafebabe::parse_class_with_options(bytes, &options)
        .map_err(|e| format!("{CAFEBABE_FAILED}{e}"))?;
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
    assert_eq!(totals.cafebabe_gaps, 0);
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
fn every_jdk25_class_if_present() {
    let home = Path::new(JDK25);
    let jmods = home.join("jmods");
    let classes = if jmods.is_dir() {
        jmod_classes(&jmods)
    } else if home.join("lib/modules").is_file() {
        // Since JDK 24 a JDK may ship without jmods (JEP 493), as Temurin 25 does:
        // extract its run-time image once (about 20 s) and keep it for later runs.
        jimage_classes(home)
    } else {
        println!("skipped: no JDK 25 at {JDK25}");
        return;
    };
    let totals = check_corpus("jdk25", &classes);
    assert!(totals.classes > 20_000, "only {} classes", totals.classes);
    // All but a handful are Java 25 classes (one jdk.jpackage resource class is 52).
    assert!(totals.versions[&69] > 20_000, "{:?}", totals.versions);
    // Only jdk.jpackage's PackageBuilder passes a dynamic constant to a bootstrap method.
    assert!(
        totals.cafebabe_gaps <= 1,
        "{} classes not cross-checked",
        totals.cafebabe_gaps
    );
    assert_eq!(totals.misplaced, 0);
}

/// Every class of the JDK's `lib/modules`, extracted with its `jimage` tool into this
/// test's scratch directory, as (module, path, bytes).
fn jimage_classes(home: &Path) -> Vec<(String, String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("jdk25-image");
    let done = dir.join(".extracted");
    if !done.exists() {
        let _ = std::fs::remove_dir_all(&dir);
        let status = std::process::Command::new(home.join("bin/jimage"))
            .arg("extract")
            .arg("--dir")
            .arg(&dir)
            .arg(home.join("lib/modules"))
            .status()
            .expect("run jimage");
        assert!(status.success(), "jimage extract failed: {status}");
        std::fs::write(&done, b"").unwrap();
    }
    let mut out = Vec::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "class") {
                let rel = path
                    .strip_prefix(&dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                let (module, name) = rel.split_once('/').unwrap();
                out.push((
                    module.to_owned(),
                    name.to_owned(),
                    std::fs::read(&path).unwrap(),
                ));
            }
        }
    }
    out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    out
}

// Hand-compiled samples (sources beside them in tests/data/valid) cover what the
// JDK's own classes do not use. Their values are checked exactly.

fn sample(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/valid")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Decodes every attribute in `list`, at `location`.
fn decode_all<'a>(
    class: &ClassFile<'a>,
    list: &[RawAttribute<'a>],
    location: Location,
) -> Vec<Attribute<'a>> {
    let ctx = Context::new(class, location);
    list.iter()
        .map(|raw| decode(*raw, &class.constant_pool, ctx).unwrap())
        .collect()
}

fn utf8(class: &ClassFile<'_>, index: u16) -> String {
    class.constant_pool.utf8(index).unwrap().into_owned()
}

fn method<'c, 'a>(class: &'c ClassFile<'a>, name: &str) -> &'c ferrofluid_classfile::Member<'a> {
    let cp = &class.constant_pool;
    class
        .methods
        .iter()
        .find(|m| m.name(cp).unwrap() == name)
        .unwrap()
}

#[test]
fn kitchen_sample_counts() {
    let summary = read_all(&sample("Kitchen.class")).unwrap();
    assert_eq!(
        (
            summary.name.as_str(),
            summary.major,
            summary.fields,
            summary.methods
        ),
        ("Kitchen", 61, 3, 5)
    );
    let count = |k| summary.count(k);
    use AttributeKind as K;
    assert_eq!(count(K::Code), 5);
    assert_eq!(count(K::RuntimeVisibleTypeAnnotations), 3); // class, field `items`, code of `sum`
    assert_eq!(count(K::RuntimeInvisibleTypeAnnotations), 2); // class, code of `sum`
    assert_eq!(count(K::RuntimeVisibleParameterAnnotations), 1);
    assert_eq!(count(K::RuntimeInvisibleParameterAnnotations), 1);
    assert_eq!(count(K::MethodParameters), 1);
    assert_eq!(count(K::ConstantValue), 2);
    assert_eq!(count(K::BootstrapMethods), 1);
    assert_eq!(summary.misplaced, 0);
    // As `javap -c -v` counts them.
    assert_eq!((summary.instructions, summary.frames), (28, 1));
}

#[test]
fn kitchen_sample_method_attributes() {
    use ferrofluid_classfile::attributes::{ElementValue, TargetInfo};
    let bytes = sample("Kitchen.class");
    let class = ClassFile::parse(&bytes).unwrap();
    let sum = decode_all(&class, &method(&class, "sum").attributes, Location::Method);
    let kinds: Vec<_> = sum.iter().map(|a| a.kind().name()).collect();
    assert_eq!(
        kinds,
        [
            "Code",
            "Exceptions",
            "MethodParameters",
            "RuntimeVisibleParameterAnnotations",
            "RuntimeInvisibleParameterAnnotations"
        ]
    );
    let Attribute::MethodParameters(params) = &sum[2] else {
        unreachable!()
    };
    let names: Vec<_> = params
        .iter()
        .map(|p| (utf8(&class, p.name), p.access))
        .collect();
    assert_eq!(names, [("a".to_owned(), 0x0010), ("b".to_owned(), 0)]);
    let Attribute::RuntimeVisibleParameterAnnotations(visible) = &sum[3] else {
        unreachable!()
    };
    assert_eq!(visible.len(), 2);
    assert_eq!(utf8(&class, visible[0][0].type_index), "LInfo;");
    let pair = &visible[0][0].elements[0];
    assert_eq!(utf8(&class, pair.name), "name");
    let ElementValue::Const { tag: b's', index } = pair.value else {
        panic!("{:?}", pair.value)
    };
    assert_eq!(utf8(&class, index), "a");
    assert!(visible[1].is_empty());
    let Attribute::RuntimeInvisibleParameterAnnotations(hidden) = &sum[4] else {
        unreachable!()
    };
    assert_eq!(utf8(&class, hidden[1][0].type_index), "LNote;");

    let Attribute::Code(code) = &sum[0] else {
        unreachable!()
    };
    assert_eq!(
        (code.max_stack, code.max_locals, code.code.len()),
        (2, 5, 18)
    );
    let handler = code.exception_table[0];
    assert_eq!(
        (handler.start_pc, handler.end_pc, handler.handler_pc),
        (5, 13, 14)
    );
    assert_eq!(
        class.constant_pool.class_name(handler.catch_type).unwrap(),
        "java/lang/RuntimeException"
    );
    let nested = decode_all(&class, &code.attributes, Location::Code);
    let kinds: Vec<_> = nested.iter().map(|a| a.kind().name()).collect();
    assert_eq!(
        kinds,
        [
            "LineNumberTable",
            "LocalVariableTable",
            "LocalVariableTypeTable",
            "StackMapTable",
            "RuntimeVisibleTypeAnnotations",
            "RuntimeInvisibleTypeAnnotations"
        ]
    );
    let Attribute::RuntimeVisibleTypeAnnotations(visible) = &nested[4] else {
        unreachable!()
    };
    let targets: Vec<_> = visible
        .iter()
        .map(|t| (t.target_type, t.target.clone()))
        .collect();
    let local = ferrofluid_classfile::attributes::LocalVarTarget {
        start_pc: 5,
        length: 13,
        index: 3,
    };
    assert_eq!(
        targets,
        [
            (0x40, TargetInfo::LocalVar(vec![local])),
            (
                0x42,
                TargetInfo::Catch {
                    exception_table_index: 0
                }
            )
        ]
    );
    let Attribute::RuntimeInvisibleTypeAnnotations(hidden) = &nested[5] else {
        unreachable!()
    };
    assert_eq!(hidden[0].target_type, 0x47); // the cast `(@Hidden Object)`
    assert!(matches!(
        hidden[0].target,
        TargetInfo::TypeArgument { index: 0, .. }
    ));
}

#[test]
fn kitchen_sample_class_attributes() {
    use ferrofluid_classfile::attributes::{TargetInfo, TypePathEntry};
    let bytes = sample("Kitchen.class");
    let class = ClassFile::parse(&bytes).unwrap();
    let attributes = decode_all(&class, &class.attributes, Location::Class);
    let kinds: Vec<_> = attributes.iter().map(|a| a.kind().name()).collect();
    assert_eq!(
        kinds,
        [
            "Signature",
            "SourceFile",
            "RuntimeVisibleTypeAnnotations",
            "RuntimeInvisibleTypeAnnotations",
            "NestMembers",
            "BootstrapMethods",
            "InnerClasses"
        ]
    );
    let Attribute::RuntimeVisibleTypeAnnotations(visible) = &attributes[2] else {
        unreachable!()
    };
    let targets: Vec<_> = visible.iter().map(|t| t.target.clone()).collect();
    // `<@Visible T ...>` and `implements @Visible Runnable` (interface 0).
    assert_eq!(
        targets,
        [
            TargetInfo::Supertype { index: 0 },
            TargetInfo::TypeParameter { index: 0 }
        ]
    );
    let Attribute::RuntimeInvisibleTypeAnnotations(hidden) = &attributes[3] else {
        unreachable!()
    };
    // `T extends @Hidden Comparable<T>`: bound 1 of type parameter 0 (bound 0 is the absent class bound).
    assert_eq!(
        hidden[0].target,
        TargetInfo::TypeParameterBound {
            type_parameter: 0,
            bound: 1
        }
    );
    assert_eq!(hidden[0].path, Vec::<TypePathEntry>::new());
    let Attribute::NestMembers(members) = &attributes[4] else {
        unreachable!()
    };
    let names: Vec<_> = members
        .iter()
        .map(|&i| class.constant_pool.class_name(i).unwrap().into_owned())
        .collect();
    assert_eq!(names, ["Kitchen$Inner", "Kitchen$Point"]);
    let Attribute::BootstrapMethods(methods) = &attributes[5] else {
        unreachable!()
    };
    assert_eq!(methods.len(), 1);
    assert_eq!(methods[0].arguments.len(), 3);
    let Attribute::InnerClasses(inner) = &attributes[6] else {
        unreachable!()
    };
    let rows: Vec<_> = inner
        .iter()
        .map(|c| (utf8(&class, c.inner_name), c.access))
        .collect();
    assert_eq!(
        rows,
        [
            ("Inner".to_owned(), 0),
            ("Point".to_owned(), 0x0018),
            ("Lookup".to_owned(), 0x0019)
        ]
    );
}

#[test]
fn annotation_defaults_cover_all_element_value_tags() {
    use ferrofluid_classfile::attributes::ElementValue;
    let bytes = sample("Info.class");
    let class = ClassFile::parse(&bytes).unwrap();
    let cp = &class.constant_pool;
    let mut seen = Vec::new();
    for m in &class.methods {
        for attribute in decode_all(&class, &m.attributes, Location::Method) {
            let Attribute::AnnotationDefault(value) = attribute else {
                continue;
            };
            let shape = match value {
                ElementValue::Const { tag, index } => {
                    format!("{}:{:?}", tag as char, cp.get(index).unwrap())
                }
                ElementValue::Enum {
                    type_name,
                    const_name,
                } => format!("e:{}.{}", utf8(&class, type_name), utf8(&class, const_name)),
                ElementValue::Class(i) => format!("c:{}", utf8(&class, i)),
                ElementValue::Annotation(a) => format!("@:{}", utf8(&class, a.type_index)),
                ElementValue::Array(values) => format!("[:{values:?}"),
            };
            seen.push(format!("{}={shape}", m.name(cp).unwrap()));
        }
    }
    let int = |v: i32| format!("Integer({v})");
    assert_eq!(
        seen,
        [
            "type=c:V".to_owned(),
            "kind=e:Ljava/lang/annotation/ElementType;.FIELD".to_owned(),
            format!(
                "numbers=[:[Const {{ tag: 73, index: {} }}, Const {{ tag: 73, index: {} }}]",
                index_of(&class, 1),
                index_of(&class, 2)
            ),
            "nested=@:Ljava/lang/Deprecated;".to_owned(),
            "ratio=D:Double(0.5)".to_owned(),
            "big=J:Long(1099511627776)".to_owned(),
            "f=F:Float(1.5)".to_owned(),
            format!("c=C:{}", int(99)),
            format!("b=B:{}", int(1)),
            format!("s=S:{}", int(2)),
            format!("z=Z:{}", int(1)),
        ]
    );
}

/// Index of the Integer constant `value` in `class`'s pool.
fn index_of(class: &ClassFile<'_>, value: i32) -> u16 {
    let cp = &class.constant_pool;
    (1..cp.count())
        .find(|&i| cp.get(i).unwrap() == ferrofluid_classfile::Constant::Integer(value))
        .unwrap()
}

#[test]
fn record_components_and_their_attributes() {
    let bytes = sample("Kitchen$Point.class");
    let class = ClassFile::parse(&bytes).unwrap();
    let attributes = decode_all(&class, &class.attributes, Location::Class);
    let components = attributes
        .iter()
        .find_map(|a| {
            if let Attribute::Record(c) = a {
                Some(c)
            } else {
                None
            }
        })
        .unwrap();
    let shape: Vec<_> = components
        .iter()
        .map(|c| {
            let kinds: Vec<_> = decode_all(&class, &c.attributes, Location::RecordComponent)
                .iter()
                .map(|a| a.kind().name())
                .collect();
            (utf8(&class, c.name), utf8(&class, c.descriptor), kinds)
        })
        .collect();
    assert_eq!(
        shape,
        [
            (
                "x".to_owned(),
                "I".to_owned(),
                vec!["RuntimeVisibleTypeAnnotations"]
            ),
            (
                "y".to_owned(),
                "I".to_owned(),
                vec!["RuntimeVisibleAnnotations"]
            ),
        ]
    );
    assert_eq!(read_all(&bytes).unwrap().count(AttributeKind::Record), 1);
}

#[test]
fn module_info_with_all_directives() {
    let bytes = sample("module-info.class");
    let class = ClassFile::parse(&bytes).unwrap();
    let cp = &class.constant_pool;
    let attributes = decode_all(&class, &class.attributes, Location::Class);
    let kinds: Vec<_> = attributes.iter().map(|a| a.kind().name()).collect();
    assert_eq!(
        kinds,
        ["SourceFile", "Module", "ModulePackages", "ModuleMainClass"]
    );
    let Attribute::Module(module) = &attributes[1] else {
        unreachable!()
    };
    let module_name = |i: u16| match cp.get(i).unwrap() {
        ferrofluid_classfile::Constant::Module { name } => utf8(&class, name),
        other => panic!("{other:?}"),
    };
    let package_name = |i: u16| match cp.get(i).unwrap() {
        ferrofluid_classfile::Constant::Package { name } => utf8(&class, name),
        other => panic!("{other:?}"),
    };
    assert_eq!(module_name(module.name), "kitchen.mod");
    assert_eq!(utf8(&class, module.version), "1.2");
    let requires: Vec<_> = module
        .requires
        .iter()
        .map(|r| (module_name(r.module), r.flags))
        .collect();
    assert_eq!(
        requires,
        [
            ("java.base".to_owned(), 0x8000),
            ("java.logging".to_owned(), 0),
            ("java.sql".to_owned(), 0x0060)
        ]
    );
    assert_eq!(package_name(module.exports[0].package), "p");
    assert!(module.exports[0].to.is_empty());
    assert_eq!(module_name(module.opens[0].to[0]), "java.base");
    assert_eq!(cp.class_name(module.uses[0]).unwrap(), "java/lang/Runnable");
    assert_eq!(cp.class_name(module.provides[0].with[0]).unwrap(), "p/Main");
    let Attribute::ModulePackages(packages) = &attributes[2] else {
        unreachable!()
    };
    assert_eq!(
        packages
            .iter()
            .map(|&p| package_name(p))
            .collect::<Vec<_>>(),
        ["p"]
    );
    let Attribute::ModuleMainClass(main) = attributes[3] else {
        unreachable!()
    };
    assert_eq!(cp.class_name(main).unwrap(), "p/Main");
    assert_eq!(read_all(&bytes).unwrap().name, "module-info");
}
