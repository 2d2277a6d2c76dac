//! Naming what samples hold: `jmethodID`s to class, method, descriptor, source file and line,
//! resolved off the signal through JVMTI and cached.
//!
//! ```no_run
//! use jvmtiprof::stack::MethodResolver;
//! # fn f(env: &jvmtiprof::JniEnv<'_>, vm: jvmtiprof::JavaVm, mut samples: jvmtiprof::sampler::Samples) -> Result<(), jvmtiprof::Error> {
//! let mut names = MethodResolver::new(vm)?;
//! samples.drain(|s| {
//!     for frame in s.frames {
//!         if let Some(m) = frame.method.and_then(|m| names.resolve(env, m)) {
//!             println!("  at {}.{}({}:{:?})", m.class, m.name, m.source.as_deref().unwrap_or("?"), m.line(frame.bci));
//!         }
//!     }
//! });
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use ferrofluid_jvmti::{JavaVm, JniEnv, Jvmti, LineEntry, MethodId};

use crate::agent::{add_capabilities, Capabilities};
use crate::error::Result;

/// HotSpot: the address range of the code the JIT compiled for `method` (a `jmethodID` of a
/// loaded class) as it is now, read from the JVM's own structures (the layout its VMStructs
/// table gives), without a JVMTI event; its on-stack-replacement compilations aside. `None`
/// when the method has no compiled code or the JVM does not describe where it keeps it. A
/// snapshot: the JIT may replace the code at any time.
pub fn compiled_code_range(method: MethodId) -> Option<std::ops::Range<usize>> {
    crate::ffi::vmstructs::get()?.code_range(method)
}

/// A method, named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodInfo {
    /// The class's binary name in Java form (`java.util.HashMap$Node`).
    pub class: String,
    /// The method's name (`<init>` for a constructor).
    pub name: String,
    /// The method's descriptor (`(Ljava/lang/Object;)I`).
    pub descriptor: String,
    /// The class's source file, if it says.
    pub source: Option<String>,
    lines: Vec<LineEntry>,
}

impl MethodInfo {
    /// The source line of bytecode index `bci`, if the method has a line number table.
    pub fn line(&self, bci: i32) -> Option<u32> {
        if bci < 0 {
            return None;
        }
        self.lines
            .iter()
            .filter(|e| e.start <= bci as i64)
            .max_by_key(|e| e.start)
            .map(|e| e.line.max(0) as u32)
    }

    /// `class.name` (`java.util.HashMap.get`), the usual frame name of stack traces and flame graphs.
    pub fn qualified_name(&self) -> String {
        format!("{}.{}", self.class, self.name)
    }
}

/// Resolves and caches method names. Lives on the consumer's side; its calls need a Java thread.
pub struct MethodResolver {
    jvmti: Jvmti,
    cache: HashMap<usize, Option<Arc<MethodInfo>>>,
}

impl MethodResolver {
    /// A resolver with a JVMTI environment of its own (line numbers and source files need their
    /// capabilities).
    pub fn new(vm: JavaVm) -> Result<MethodResolver> {
        let jvmti = vm.jvmti()?;
        let mut caps = Capabilities::default();
        caps.set_can_get_line_numbers(1);
        caps.set_can_get_source_file_name(1);
        if let Err(e) = add_capabilities(jvmti, &caps) {
            let _ = jvmti.dispose();
            return Err(e);
        }
        Ok(MethodResolver {
            jvmti,
            cache: HashMap::new(),
        })
    }

    /// The method's names, `None` if the JVM no longer knows it (its class was unloaded).
    pub fn resolve(&mut self, env: &JniEnv<'_>, method: MethodId) -> Option<Arc<MethodInfo>> {
        let jvmti = self.jvmti;
        self.cache
            .entry(method.as_raw() as usize)
            .or_insert_with(|| resolve(jvmti, env, method).map(Arc::new))
            .clone()
    }

    /// Methods resolved so far.
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// Whether nothing was resolved yet.
    pub fn is_empty(&self) -> bool {
        self.cache.is_empty()
    }
}

impl Drop for MethodResolver {
    fn drop(&mut self) {
        let _ = self.jvmti.dispose();
    }
}

fn resolve(jvmti: Jvmti, env: &JniEnv<'_>, method: MethodId) -> Option<MethodInfo> {
    let name = jvmti.method_name(method).ok()?;
    let class = jvmti.method_declaring_class(env, method).ok()?;
    let signature = jvmti
        .class_signature(class)
        .map(|(s, _)| s)
        .unwrap_or_default();
    let source = jvmti.source_file_name(class).ok().flatten();
    env.delete_local_ref(class.as_object());
    let lines = jvmti.line_number_table(method).unwrap_or_default();
    Some(MethodInfo {
        class: java_name(&signature),
        name: name.name,
        descriptor: name.signature,
        source,
        lines,
    })
}

/// `Ljava/util/Map$Entry;` → `java.util.Map$Entry`; array signatures stay as they are.
pub fn java_name(signature: &str) -> String {
    match signature
        .strip_prefix('L')
        .and_then(|s| s.strip_suffix(';'))
    {
        Some(internal) => internal.replace('/', "."),
        None => signature.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_lines() {
        assert_eq!(java_name("Ljava/util/Map$Entry;"), "java.util.Map$Entry");
        assert_eq!(java_name("[I"), "[I");
        let m = MethodInfo {
            class: "a.B".into(),
            name: "run".into(),
            descriptor: "()V".into(),
            source: None,
            lines: vec![
                LineEntry { start: 0, line: 10 },
                LineEntry { start: 5, line: 11 },
                LineEntry { start: 9, line: 14 },
            ],
        };
        assert_eq!(m.line(0), Some(10));
        assert_eq!(m.line(7), Some(11));
        assert_eq!(m.line(30), Some(14));
        assert_eq!(m.line(-1), None);
        assert_eq!(m.qualified_name(), "a.B.run");
    }
}

/// A frame of a stack taken at a safepoint ([`safepoint_stacks`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SafepointFrame {
    /// The method.
    pub method: MethodId,
    /// The bytecode index (-1 for a native method).
    pub location: i64,
}

/// A thread's stack taken at a safepoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadStack {
    /// The thread's `JVMTI_THREAD_STATE_*` bits.
    pub state: i32,
    /// Innermost frame first.
    pub frames: Vec<SafepointFrame>,
}

impl ThreadStack {
    /// Whether the thread is runnable in Java code (not waiting, and not in a native method):
    /// what a sampler of "CPU" stacks built on `GetAllStackTraces` keeps.
    pub fn is_running_java(&self) -> bool {
        let runnable = ferrofluid_jvmti::sys::JVMTI_THREAD_STATE_RUNNABLE as i32;
        let native = ferrofluid_jvmti::sys::JVMTI_THREAD_STATE_IN_NATIVE as i32;
        self.state & runnable != 0 && self.state & native == 0
    }
}

/// Every thread's stack through JVMTI `GetAllStackTraces`, which stops all threads at a
/// safepoint: the classic way to sample Java stacks, and the one with safepoint bias (a thread
/// is seen only where compiled code polls for a safepoint: a hot loop without a poll is charged
/// to the code after it). For contrast with the [`sampler`](crate::sampler), which walks each
/// thread where its signal interrupted it.
pub fn safepoint_stacks(
    jvmti: Jvmti,
    env: &JniEnv<'_>,
    max_frames: usize,
) -> Result<Vec<ThreadStack>> {
    crate::ffi::stacks::all_stack_traces(jvmti, env, max_frames)
}
