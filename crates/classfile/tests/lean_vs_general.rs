//! Differential test of the two code editors: `entry-exit` through the lean editor
//! (`code::lean`, the default) and through the general one (`code::edit`) must give
//! the same class bytes for every class of JDK 17's `java.base`. The one allowed
//! difference: a constructor's `max_stack`, which the general editor computes
//! exactly from its dataflow and the lean one bounds (declared + 1); the lean value
//! must then be at least the general one.
//!
//! `cargo test --release -p ferrofluid-classfile --test lean_vs_general -- --nocapture`
//! (a few seconds in release).

use std::io::{Cursor as IoCursor, Read};

use ferrofluid_classfile::{instrument, ClassFile, MethodSite, ProbeKind, ProbeOptions};

fn jdk_classes() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    {
        let path =
            std::path::Path::new(ferrofluid_testkit::JDK17_HOME).join("jmods/java.base.jmod");
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut zip = zip::ZipArchive::new(IoCursor::new(&bytes[4..])).unwrap();
        for i in 0..zip.len() {
            let mut entry = zip.by_index(i).unwrap();
            if entry.name().starts_with("classes/") && entry.name().ends_with(".class") {
                let mut data = Vec::new();
                entry.read_to_end(&mut data).unwrap();
                out.push((entry.name().to_owned(), data));
            }
        }
    }
    out
}

/// The `Code` attribute's `max_stack` offset in `method` (a span of `class`), if any.
fn max_stack_at(class: &ClassFile<'_>, method: usize) -> Option<usize> {
    let m = &class.methods[method];
    m.attribute(&class.constant_pool, "Code")
        .map(|a| a.data_offset())
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}

/// Compares two outputs method by method; returns the number of constructors whose
/// `max_stack` differed (allowed), panics on any other difference.
fn compare(name: &str, lean: &[u8], general: &[u8]) -> usize {
    let (l, g) = (
        ClassFile::parse(lean).unwrap(),
        ClassFile::parse(general).unwrap(),
    );
    assert_eq!(
        &lean[..l.methods_offset],
        &general[..g.methods_offset],
        "{name}: header, pool or fields differ"
    );
    assert_eq!(l.methods.len(), g.methods.len(), "{name}: method count");
    let mut ctors = 0;
    for i in 0..l.methods.len() {
        let (ls, gs) = (
            &lean[l.methods[i].span.clone()],
            &general[g.methods[i].span.clone()],
        );
        if ls == gs {
            continue;
        }
        let mname = l.methods[i].name(&l.constant_pool).unwrap();
        // Left behind for `javap -c -v` when the test fails.
        let dir = std::env::temp_dir();
        std::fs::write(dir.join("lean_vs_general.lean.class"), lean).unwrap();
        std::fs::write(dir.join("lean_vs_general.general.class"), general).unwrap();
        assert_eq!(mname, "<init>", "{name}: method {i} ({mname}) differs");
        let (la, ga) = (max_stack_at(&l, i).unwrap(), max_stack_at(&g, i).unwrap());
        let (lm, gm) = (u16_at(lean, la), u16_at(general, ga));
        assert!(lm >= gm, "{name}: {mname} max_stack {lm} < {gm}");
        let mut patched = ls.to_vec();
        let at = la - l.methods[i].span.start;
        patched[at..at + 2].copy_from_slice(&gm.to_be_bytes());
        assert_eq!(patched, gs, "{name}: {mname} differs beyond max_stack");
        ctors += 1;
    }
    assert_eq!(
        &lean[l.attributes_offset..],
        &general[g.attributes_offset..],
        "{name}: class attributes differ"
    );
    ctors
}

#[test]
fn lean_editor_matches_general_editor_on_the_jdk() {
    let classes = jdk_classes();
    assert!(classes.len() > 6_000, "only {} classes", classes.len());
    let lean_opts = ProbeOptions::new(ProbeKind::EntryExit);
    let mut general_opts = lean_opts.clone();
    general_opts.lean_editor = false;
    let (mut identical, mut ctor_stack, mut patched_methods) = (0usize, 0usize, 0usize);
    for (k, (name, bytes)) in classes.iter().enumerate() {
        // Small ids (iconst/bipush/sipush) and large ones (ldc, ldc_w) alternate by class.
        let base = if k % 2 == 0 { 0 } else { 1 << 20 };
        let run = |opts: &ProbeOptions| {
            let mut next = base;
            let mut select = |_: &MethodSite<'_>| {
                next += 1;
                Some(next)
            };
            instrument(bytes, opts, &mut select).unwrap()
        };
        let (l, g) = (run(&lean_opts), run(&general_opts));
        assert_eq!(l.methods, g.methods, "{name}: method outcomes differ");
        patched_methods += l.methods.iter().filter(|m| m.result.is_ok()).count();
        match (&l.bytes, &g.bytes) {
            (Some(a), Some(b)) if a == b => identical += 1,
            (Some(a), Some(b)) => {
                ctor_stack += compare(name, a, b);
            }
            (None, None) => identical += 1,
            _ => panic!("{name}: one editor patched, the other did not"),
        }
    }
    println!(
        "classes={} identical={identical} patched_methods={patched_methods} constructors_with_larger_max_stack={ctor_stack}",
        classes.len()
    );
    assert!(patched_methods > 50_000, "{patched_methods}");
}
