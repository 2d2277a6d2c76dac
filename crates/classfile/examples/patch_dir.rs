//! Instruments every `.class` under a directory into another directory.
//! Usage: `patch_dir PROBE IN_DIR OUT_DIR` (a developer aid; users run `ferrofluid instrument`).

use std::collections::BTreeMap;
use std::path::Path;

use ferrofluid_classfile::{instrument, MethodSite, ProbeKind, ProbeOptions};

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).expect("readable directory") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "class") {
            out.push(p);
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let kind: ProbeKind = args[1].parse().expect("probe");
    let (inp, outp) = (Path::new(&args[2]), Path::new(&args[3]));
    let mut files = Vec::new();
    walk(inp, &mut files);
    let options = ProbeOptions::new(kind);
    let mut next = 0u32;
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    let mut patched = 0;
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let rel = f.strip_prefix(inp).unwrap();
        let dest = outp.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        let r = instrument(&bytes, &options, &mut |_: &MethodSite<'_>| {
            next += 1;
            Some(next)
        })
        .unwrap();
        for m in &r.methods {
            match &m.result {
                Ok(()) => patched += 1,
                Err(e) => {
                    if std::env::var_os("VERBOSE").is_some() {
                        eprintln!("{}.{}{}: {e}", r.class_name, m.name, m.descriptor);
                    }
                    *skipped.entry(e.key().to_owned()).or_default() += 1
                }
            }
        }
        std::fs::write(dest, r.bytes.as_deref().unwrap_or(&bytes)).unwrap();
    }
    println!("patched {patched} methods, skipped {skipped:?}");
}
