//! Fuzz logic shared by the `read_patch` cargo-fuzz target (`fuzz/`) and the smoke
//! test that runs the committed seed corpus under `cargo test`.

use crate::attributes::{read_all, ClassSummary};
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
