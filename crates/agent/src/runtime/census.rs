//! Classes the JIT inlined into much of the compiled code. Retransforming a class discards
//! every compiled method holding one of its methods (HotSpot deoptimises them: their code is
//! stale), and probes added to a small method inlined everywhere make every compilation that
//! inlines it larger. For `java.lang.String` on a busy server that is most of the code cache:
//! with two cores busy serving, the JIT takes minutes to recompile it, and the server runs in
//! the interpreter meanwhile (docs/decisions/0067-classes-inlined-everywhere.md). The census
//! reads the code cache when a session starts ([`crate::ffi::census`]); sessions that count
//! calls with sampled time leave these classes uninstrumented.

use std::collections::{HashMap, HashSet};

use ferrofluid_jvmti::{JniEnv, Jvmti};

use crate::ffi;

/// The share of the compiled methods a class must be inlined into (or be the class of) to be
/// left alone. On the live-server benchmark's Jetty (~2,500 compiled methods at attach) 5% left
/// 4-5 classes alone (`String`, `Object`, `StringLatin1`, ...) and the server took 25 s to get
/// back to its throughput; 2% left 17 and it was back in 10-15 s.
pub const SHARE: f64 = 0.02;

/// Compiled methods the code cache must hold for any class to be left alone: a JVM that has
/// compiled little (a program just started, a small test) recompiles what it loses in moments,
/// and its profile keeps every count.
pub const MIN_COMPILED: usize = 1_000;

/// The packages of the JDK's own classes (internal names).
pub const JDK_PACKAGES: &[&str] = &["java/", "javax/", "jdk/", "sun/", "com/sun/"];

/// What the code cache held when the census was taken.
#[derive(Debug, Default)]
pub struct Census {
    /// Compiled methods.
    pub compiled: usize,
    /// Per class (internal name), the compiled methods holding one of its methods.
    pub by_class: HashMap<String, usize>,
}

impl Census {
    /// Reads the JVM's code cache: the class of every method each compiled method holds.
    pub fn take(jvmti: Jvmti, env: &JniEnv<'_>) -> Result<Census, String> {
        let vm = env.java_vm().map_err(|e| e.to_string())?;
        let code = ffi::census::compiled_code(vm)?;
        let mut census = Census {
            compiled: code.len(),
            by_class: HashMap::new(),
        };
        // Too little compiled for any class to be left alone: no class names to look up.
        if census.compiled < MIN_COMPILED {
            return Ok(census);
        }
        let mut class_of: HashMap<usize, Option<String>> = HashMap::new();
        for methods in code {
            let classes: HashSet<String> = methods
                .into_iter()
                .filter_map(|m| {
                    class_of
                        .entry(m.as_raw() as usize)
                        .or_insert_with(|| jvmti.method_class_name(env, m).ok())
                        .clone()
                })
                .collect();
            for class in classes {
                *census.by_class.entry(class).or_default() += 1;
            }
        }
        Ok(census)
    }

    /// The JDK's classes ([`JDK_PACKAGES`]) inlined into at least [`SHARE`] of the compiled
    /// methods that `keep` does not name, with their compiled methods, the most inlined first;
    /// none while the code cache holds fewer than [`MIN_COMPILED`]. The application's classes
    /// are what a profile is for: they keep their probes however widely inlined.
    pub fn inlined_everywhere(&self, keep: impl Fn(&str) -> bool) -> Vec<(String, usize)> {
        self.inlined_into(SHARE, keep)
    }

    /// As [`Census::inlined_everywhere`], for classes inlined into at least `share` of the
    /// compiled methods.
    pub fn inlined_into(&self, share: f64, keep: impl Fn(&str) -> bool) -> Vec<(String, usize)> {
        if self.compiled < MIN_COMPILED {
            return Vec::new();
        }
        let least = (self.compiled as f64 * share).ceil() as usize;
        let mut classes: Vec<(String, usize)> = self
            .by_class
            .iter()
            .filter(|&(class, &n)| {
                n >= least && JDK_PACKAGES.iter().any(|p| class.starts_with(p)) && !keep(class)
            })
            .map(|(class, &n)| (class.clone(), n))
            .collect();
        classes.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        classes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn census(compiled: usize, classes: &[(&str, usize)]) -> Census {
        Census {
            compiled,
            by_class: classes.iter().map(|&(c, n)| (c.to_owned(), n)).collect(),
        }
    }

    #[test]
    fn classes_inlined_into_a_large_share_of_the_code_are_left_alone() {
        // 10,000 compiled methods: 2% is 200.
        let c = census(
            10_000,
            &[
                ("java/lang/String", 4_000),
                ("java/lang/Math", 200),
                ("java/util/HashMap", 199),
                ("java/lang/Integer", 900),
                // The application's own classes keep their probes, however inlined.
                ("com/acme/Value", 3_000),
            ],
        );
        let keep = |class: &str| class == "java/lang/Integer";
        assert_eq!(
            c.inlined_everywhere(keep),
            [
                ("java/lang/String".to_owned(), 4_000),
                ("java/lang/Math".to_owned(), 200)
            ]
        );
        // A JVM that compiled little: nothing, whatever the share.
        let young = census(MIN_COMPILED - 1, &[("java/lang/String", 900)]);
        assert!(young.inlined_everywhere(|_| false).is_empty());
        let grown = census(MIN_COMPILED, &[("java/lang/String", 900)]);
        assert_eq!(grown.inlined_everywhere(|_| false).len(), 1);
        assert!(Census::default().inlined_everywhere(|_| false).is_empty());
    }
}
