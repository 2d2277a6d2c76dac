//! How a workload's time splits between bytecode and native code, read from a `native` run's
//! profile: IPA's per-program native share (its Table II) for the suite's programs.

use ferrofluid_profile::Document;

/// All threads' time in bytecode and in native methods (with `--cpu`, their CPU time too), and
/// the native method with the most native time (CPU time when measured).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NativeShare {
    pub bytecode_ns: u64,
    pub native_ns: u64,
    /// With `--cpu`: bytecode and native CPU time.
    pub cpu: Option<(u64, u64)>,
    /// Distinct native methods that ran through a wrapper.
    pub natives: usize,
    /// The native method with the most native (CPU) time (`Class.method`) and that time.
    pub top: Option<(String, u64)>,
}

fn share_of(bytecode: u64, native: u64) -> f64 {
    let whole = bytecode + native;
    if whole == 0 {
        0.0
    } else {
        native as f64 / whole as f64
    }
}

impl NativeShare {
    /// The native share of the threads' time, 0..=1.
    pub fn share(&self) -> f64 {
        share_of(self.bytecode_ns, self.native_ns)
    }

    /// The native share of the threads' CPU time, 0..=1, when measured.
    pub fn cpu_share(&self) -> Option<f64> {
        self.cpu.map(|(b, n)| share_of(b, n))
    }
}

/// The split in a `native` profile's JSON document; `None` for another document.
pub fn native_share(json: &[u8]) -> Option<NativeShare> {
    let doc = Document::from_json_slice(json).ok()?;
    let natives = doc.natives.as_ref()?;
    let cpu = doc.bytecode_cpu_ns.zip(doc.native_cpu_ns);
    let weight = |n: &ferrofluid_profile::json::NativeDoc| match cpu {
        Some(_) => n.native_cpu_ns.unwrap_or(0),
        None => n.native_ns,
    };
    let top = natives
        .iter()
        .max_by_key(|n| weight(n))
        .map(|n| (format!("{}.{}", n.class, n.method), weight(n)));
    Some(NativeShare {
        bytecode_ns: doc.bytecode_ns.unwrap_or(0),
        native_ns: doc.native_ns.unwrap_or(0),
        cpu,
        natives: natives.len(),
        top,
    })
}

/// The median of `shares` by native share of the CPU time, else of the time (the lower middle
/// one of an even count: one run's numbers, not a mix of two).
pub fn median(mut shares: Vec<NativeShare>) -> Option<NativeShare> {
    let key = |s: &NativeShare| s.cpu_share().unwrap_or_else(|| s.share());
    shares.sort_by(|a, b| key(a).total_cmp(&key(b)));
    let n = shares.len();
    (n > 0).then(|| shares.swap_remove((n - 1) / 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NATIVE: &str = r#"{"format":"ferrofluid","version":1,"mode":"native",
      "methods":{"instrumented":0,"called":2},
      "bytecode_ns":750,"native_ns":250,
      "natives":[
        {"class":"java.lang.Thread","method":"sleep","descriptor":"(J)V","calls":2,"native_ns":200},
        {"class":"java.io.FileInputStream","method":"readBytes","descriptor":"([BII)I","calls":9,"native_ns":50}],
      "threads":[]}"#;

    #[test]
    fn a_native_profile_gives_its_split_and_top_native() {
        let s = native_share(NATIVE.as_bytes()).unwrap();
        assert_eq!(
            s,
            NativeShare {
                bytecode_ns: 750,
                native_ns: 250,
                cpu: None,
                natives: 2,
                top: Some(("java.lang.Thread.sleep".into(), 200)),
            }
        );
        assert_eq!((s.share(), s.cpu_share()), (0.25, None));
        // With CPU times the top native is the one with the most CPU time.
        let with_cpu = NATIVE
            .replace(
                r#""native_ns":250,"#,
                r#""native_ns":250,"bytecode_cpu_ns":600,"native_cpu_ns":200,"#,
            )
            .replace(
                r#""native_ns":200}"#,
                r#""native_ns":200,"native_cpu_ns":1}"#,
            )
            .replace(
                r#""native_ns":50}"#,
                r#""native_ns":50,"native_cpu_ns":49}"#,
            );
        let s = native_share(with_cpu.as_bytes()).unwrap();
        assert_eq!(s.cpu, Some((600, 200)));
        assert_eq!(s.cpu_share(), Some(0.25));
        assert_eq!(
            s.top,
            Some(("java.io.FileInputStream.readBytes".into(), 49))
        );
        let cpu = r#"{"format":"ferrofluid","version":1,"mode":"cpu",
          "methods":{"instrumented":0,"called":0},"threads":[]}"#;
        assert_eq!(native_share(cpu.as_bytes()), None);
    }

    #[test]
    fn the_median_is_one_run_s() {
        let of = |native_ns| NativeShare {
            bytecode_ns: 100,
            native_ns,
            ..NativeShare::default()
        };
        assert_eq!(median(vec![of(50), of(10), of(30), of(20)]), Some(of(20)));
        assert_eq!(median(vec![]), None);
    }
}
