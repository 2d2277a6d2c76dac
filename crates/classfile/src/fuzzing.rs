//! Fuzz logic shared by the `read_patch` cargo-fuzz target (`fuzz/`) and the smoke
//! test that runs the committed seed corpus under `cargo test`.

use crate::attributes::{decode, read_all, Attribute, ClassSummary, Context, Location};
use crate::class::{ClassFile, RawAttribute};
use crate::probes::{instrument, ProbeKind, ProbeOptions};
use crate::Result;

/// What one input did: the `read_all` result, and per probe whether `instrument`
/// rewrote the class (`Some(true)`), left it unchanged (`Some(false)`) or failed (`None`).
#[derive(Debug)]
pub struct Outcome {
    /// `read_all` on the input.
    pub read: Result<ClassSummary>,
    /// One entry per [`ProbeKind::ALL`], in that order.
    pub patched: Vec<Option<bool>>,
}

/// Reads `data` with [`read_all`], then runs [`instrument`] with every probe on it,
/// selecting every method. Panics (the fuzzer's failure signal) when a patched class
/// does not read back with `read_all` although the input did, or names another class.
pub fn read_patch(data: &[u8]) -> Outcome {
    let read = read_all(data);
    if read.is_err() {
        decode_each(data);
    }
    let mut patched = Vec::with_capacity(ProbeKind::ALL.len());
    for kind in ProbeKind::ALL {
        let options = ProbeOptions::new(kind);
        let mut next_id = 0u32;
        let mut select = |_: &crate::MethodSite<'_>| {
            next_id += 1;
            Some(next_id)
        };
        let Ok(out) = instrument(data, &options, &mut select) else {
            patched.push(None);
            continue;
        };
        let Some(bytes) = out.bytes else {
            patched.push(Some(false));
            continue;
        };
        // An input that does not pass read_all may carry its defect into the output
        // (untouched bytes are copied verbatim), so only valid inputs must stay valid.
        if let Ok(before) = &read {
            match read_all(&bytes) {
                Ok(after) => {
                    assert_eq!(
                        after.name, before.name,
                        "{kind}: the patched class has another name"
                    );
                    assert_eq!(
                        after.fields, before.fields,
                        "{kind}: the patched class has other fields"
                    );
                }
                Err(e) => panic!("{kind}: the patched class does not read back: {e}"),
            }
        }
        patched.push(Some(true));
    }
    Outcome { read, patched }
}

/// `read_all` stops at the first error; this decodes every attribute on its own (and
/// the attributes of each decoded `Code`), so one bad attribute does not hide the rest
/// from the fuzzer. Errors are expected; only panics matter.
fn decode_each(data: &[u8]) {
    let Ok(class) = ClassFile::parse(data) else {
        return;
    };
    let cp = &class.constant_pool;
    let each = |list: &[RawAttribute<'_>], location: Location| {
        for &raw in list {
            if let Ok(Attribute::Code(code)) = decode(raw, cp, Context::new(&class, location)) {
                for &inner in &code.attributes {
                    let _ = decode(inner, cp, Context::new(&class, Location::Code));
                }
            }
        }
    };
    each(&class.attributes, Location::Class);
    for field in &class.fields {
        each(&field.attributes, Location::Field);
    }
    for method in &class.methods {
        each(&method.attributes, Location::Method);
    }
}
