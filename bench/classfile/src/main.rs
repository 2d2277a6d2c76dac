//! Reads and patches every class of the given jmods with the `entry-exit` probe on one
//! thread, and prints the throughput. `bench/classfile/run.sh` runs it beside ASM.
//!
//! Usage: ferrofluid-bench-classfile [--warmup N] [--passes N] JMOD...

use std::io::{Cursor, Read};
use std::time::Instant;

use ferrofluid_classfile::{instrument, MethodSite, ProbeKind, ProbeOptions};

fn main() {
    let mut warmup = 3;
    let mut passes = 5;
    let mut paths = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--warmup" => warmup = args.next().and_then(|n| n.parse().ok()).expect("--warmup N"),
            "--passes" => passes = args.next().and_then(|n| n.parse().ok()).expect("--passes N"),
            _ => paths.push(a),
        }
    }
    let classes = load(&paths);
    let bytes: usize = classes.iter().map(Vec::len).sum();
    let options = ProbeOptions::new(ProbeKind::EntryExit);

    let mut best = f64::INFINITY;
    let mut checksum = 0usize;
    for pass in 0..warmup + passes {
        let start = Instant::now();
        let mut next_id = 0u32;
        let mut patched = 0usize;
        for class in &classes {
            let mut select = |_: &MethodSite<'_>| {
                next_id += 1;
                Some(next_id)
            };
            // Read, patch, write: what a ClassFileLoadHook does per class.
            let out = instrument(class, &options, &mut select).expect("JDK classes are readable");
            patched += out.bytes.as_ref().map_or(0, Vec::len);
        }
        let secs = start.elapsed().as_secs_f64();
        if pass >= warmup {
            best = best.min(secs);
        }
        checksum = patched;
    }
    println!(
        "ferrofluid classes={} bytes={} passes={passes} best_seconds={best:.4} classes_per_second={:.0} mb_per_second={:.1} output_bytes={checksum}",
        classes.len(),
        bytes,
        classes.len() as f64 / best,
        bytes as f64 / best / 1e6
    );
}

/// Every `classes/**.class` of the jmods (a jmod is "JM\x01\x00" + a zip), in memory.
fn load(paths: &[String]) -> Vec<Vec<u8>> {
    let mut classes = Vec::new();
    for path in paths {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
        let zip = data.strip_prefix(b"JM\x01\x00").unwrap_or_else(|| panic!("{path} is not a jmod"));
        let mut archive = zip::ZipArchive::new(Cursor::new(zip)).expect("jmod zip");
        for i in 0..archive.len() {
            let mut file = archive.by_index(i).expect("jmod entry");
            if file.name().starts_with("classes/") && file.name().ends_with(".class") {
                let mut buf = Vec::new();
                file.read_to_end(&mut buf).expect("jmod entry data");
                classes.push(buf);
            }
        }
    }
    classes
}
