//! The native mode's parts of the document: the native methods with their calls, native time
//! and upcalls, written from and read back into [`crate::native::NativeSummary`].

use crate::json::document::{Document, NativeDoc, UpcallTargetDoc};
use crate::mode::Mode;
use crate::profile::Profile;

impl Profile {
    /// Fills the native mode's top-level keys of `doc` (none for other modes).
    pub(crate) fn write_native(&self, doc: &mut Document) {
        let Some(summary) = self.native.as_ref() else {
            return;
        };
        let total = self.native_total();
        doc.bytecode_ns = Some(total.bytecode_ns);
        doc.native_ns = Some(total.native_ns);
        doc.bytecode_cpu_ns = total.bytecode_cpu_ns;
        doc.native_cpu_ns = total.native_cpu_ns;
        doc.natives = Some(self.native_docs());
        doc.not_measured = Some(summary.not_measured.clone());
        doc.unattributed_upcalls = Some(summary.unattributed_upcalls).filter(|&n| n > 0);
    }

    /// The document's `natives` ([`Profile::native_rows`]).
    fn native_docs(&self) -> Vec<NativeDoc> {
        let name = |m| {
            self.methods.get(m).map_or_else(
                || ("?".to_owned(), "?".to_owned(), String::new()),
                |i| (i.class.clone(), i.method.clone(), i.descriptor.clone()),
            )
        };
        self.native_rows()
            .into_iter()
            .map(|row| {
                let (class, method, descriptor) = name(row.method);
                NativeDoc {
                    class,
                    method,
                    descriptor,
                    calls: row.calls,
                    native_ns: row.native_ns,
                    native_cpu_ns: row.native_cpu_ns,
                    upcalls: row.upcalls,
                    threads: row.threads,
                    upcall_targets: row
                        .targets
                        .iter()
                        .map(|&(m, calls)| {
                            let (class, method, descriptor) = name(m);
                            UpcallTargetDoc {
                                class,
                                method,
                                descriptor,
                                calls,
                            }
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// Reads the native mode's summary of `doc` into this profile (nothing for other modes).
    pub(crate) fn read_native(&mut self, doc: &Document, mode: Mode) {
        if mode != Mode::Native && doc.natives.is_none() {
            return;
        }
        let natives = doc
            .natives
            .iter()
            .flatten()
            .map(|n| self.methods.insert(&n.class, &n.method, &n.descriptor))
            .collect();
        self.native = Some(crate::native::NativeSummary {
            natives,
            not_measured: doc.not_measured.clone().unwrap_or_default(),
            unattributed_upcalls: doc.unattributed_upcalls.unwrap_or(0),
        });
    }
}
