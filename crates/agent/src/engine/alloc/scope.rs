//! The `alloc` engine with roots: only the allocations made while the thread is inside a root
//! invocation are counted (JFluid's context-sensitive activation), and the roots' call
//! subgraph is revealed as in the `cpu` mode (lazily by default, `--scheme`).
//!
//! Every method of the subgraph gets the `alloc` probes and, in a second pass over the patched
//! bytes, the entry/exit probes. Both call `ferrofluid/AllocScope` (`AllocScope.java`): its
//! `enter`/`exit`/`unwind` keep the thread's root depth in Java (a root's probes pass a negative
//! id) and go on to the hooks class, whose gates and natives reveal callees at a method's first
//! invocation inside a root, exactly as for `cpu`; its `alloc` hands an allocation to
//! `ferrofluid/Alloc` only while the thread's depth is positive. So an allocation costs no JNI
//! call, in a root or not (docs/decisions/0040-alloc-root-extent.md).
//!
//! Once a non-root method has been invoked (its callees revealed), its entry/exit probes have
//! nothing left to tell the agent: they are ended in Java (`Hooks.dropped[id] = 2`, the
//! adaptive mode's mechanism), so that only roots' probes keep a JNI call.

use std::sync::atomic::Ordering;

use ferrofluid_classfile::{
    instrument as patch, Instrumented, MethodOutcome, ProbeKind, ProbeOptions, Selection,
    SkipReason,
};
use ferrofluid_jvmti::{sys, JniEnv};

use super::STATE;
use crate::probe::flags::{self, DROPPED, INVOKED, PENDING, ROOT};


/// Whether the current `alloc` session counts only inside its roots.
pub fn rooted() -> bool {
    STATE.rooted.load(Ordering::SeqCst)
}

/// Sets up an `alloc` session (on a Java thread, before it is planned): with roots, defines and
/// resets `ferrofluid/AllocScope`. Without roots, or if the class cannot be defined, the
/// session's probes call `ferrofluid/Alloc` directly (the error is returned: then nothing must
/// be instrumented, since the roots could not be honoured).
pub fn configure(env: &JniEnv<'_>, rooted: bool) -> Result<(), String> {
    STATE.rooted.store(false, Ordering::SeqCst);
    if !rooted {
        return Ok(());
    }
    super::ffi::scope::install(env)?;
    STATE.rooted.store(true, Ordering::SeqCst);
    Ok(())
}

/// Instruments `bytes` with `options` (the session's probes, whose hooks name the counting
/// class): for an `alloc` session with roots, the `alloc` probes and then the entry/exit probes,
/// both calling `ferrofluid/AllocScope`; otherwise `options` alone.
pub fn instrument<'a>(
    bytes: &'a [u8],
    options: &ProbeOptions,
    selection: &mut dyn Selection,
) -> ferrofluid_classfile::Result<Instrumented<'a>> {
    if options.kind != ProbeKind::Alloc || !rooted() {
        return patch(bytes, options, selection);
    }
    let scope = super::ffi::scope::SCOPE_CLASS;
    let mut alloc = options.clone();
    alloc.hooks.alloc_class = scope.to_owned();
    let allocs = patch(bytes, &alloc, selection)?;
    let mut entries = ProbeOptions::new(ProbeKind::EntryExit);
    entries.hooks.class = scope.to_owned();
    entries.hooks.alloc_class = options.hooks.alloc_class.clone();
    if uses_itself(&allocs.class_name) {
        return patch(bytes, &entries, selection);
    }
    let (bytes, calls) = {
        let input = allocs.bytes.as_deref().unwrap_or(bytes);
        let calls = patch(input, &entries, selection)?;
        let results: Vec<Called> = calls
            .methods
            .into_iter()
            .map(|m| {
                (
                    m.id,
                    m.name.into_owned(),
                    m.descriptor.into_owned(),
                    m.result,
                )
            })
            .collect();
        (calls.bytes, results)
    };
    Ok(merge(allocs, bytes, &calls))
}

/// `ferrofluid/AllocScope.alloc` looks up its thread's depth in a `ThreadLocal`, and a thread's
/// first lookup allocates (its map, its entry): with `alloc` probes in `ThreadLocal`'s own code,
/// that allocation would call `AllocScope.alloc` again, whose lookup is still unfinished, until
/// the stack overflows. Those classes keep their entry/exit probes (the subgraph goes on through
/// them) without allocation probes; what they allocate inside a root is not counted.
fn uses_itself(class: &str) -> bool {
    class == "java/lang/ThreadLocal" || class.starts_with("java/lang/ThreadLocal$")
}

/// A method's outcome in the entry/exit pass: id, name, descriptor, result.
type Called = (u32, String, String, Result<(), SkipReason>);

/// One outcome per method of the two passes: patched if either pass patched it; a failure of
/// the `alloc` pass (other than finding no allocation) wins, since then its allocations are not
/// counted.
fn merge<'a>(
    allocs: Instrumented<'a>,
    bytes: Option<Vec<u8>>,
    calls: &[Called],
) -> Instrumented<'a> {
    let methods = allocs
        .methods
        .into_iter()
        .map(|a| {
            let entry = calls
                .iter()
                .find(|c| c.0 == a.id && c.1 == a.name && c.2 == a.descriptor);
            let result = match (&a.result, entry) {
                (Err(SkipReason::NothingToDo), Some(c)) => c.3.clone(),
                (r, _) => r.clone(),
            };
            MethodOutcome { result, ..a }
        })
        .collect();
    Instrumented {
        class_name: allocs.class_name,
        bytes: bytes.or(allocs.bytes),
        methods,
    }
}

/// The entry probe of method `id` (`!id` for a root) in an `alloc` session with roots: the
/// root depth, lazy revelation and agent-work rules of the `cpu` mode's hooks, recording
/// nothing; a non-root method invoked and revealed then ends its probes in Java.
#[inline(always)]
pub fn enter(env: *mut sys::JNIEnv, id: i32, start: u64) {
    crate::probe::thread::enter_gated(env, id, start, |_| {});
    let id = crate::probe::thread::method_id(id as u32);
    if flags::get(id) & (ROOT | INVOKED | PENDING | DROPPED) == INVOKED {
        settle(env, id);
    }
}

/// The exit or unwind probe of method `id`, as [`enter`].
#[inline(always)]
pub fn exit(env: *mut sys::JNIEnv, id: i32, start: u64) {
    crate::probe::thread::exit_gated(env, id, start, |_| {});
}

/// Method `id` (not a root) has been invoked and its callees revealed: its entry and exit
/// probes return in Java from now on.
#[cold]
fn settle(env: *mut sys::JNIEnv, id: u32) {
    flags::set(id, DROPPED);
    crate::ffi::with_env(env, |jni| {
        if let Some(jni) = jni {
            crate::probe::site_flags::drop_probes(jni, id, 2);
        }
    });
}

#[cfg(test)]
mod tests {
    use ferrofluid_profile::Mode;
    use ferrofluid_protocol::AgentOptions;
    use ferrofluid_subgraph::Scheme;

    /// The committed class file is what javac makes of the committed source.
    #[test]
    fn class_file_matches_its_source() {
        // With Alloc.java, compiled as it is (see its comment).
        let Some(made) = crate::testing::compiled_by(
            &[
                "src/engine/alloc/AllocScope.java",
                "src/engine/alloc/Alloc.java",
                "../../tools/hooks/ferrofluid/Hooks.java",
            ],
            &super::super::tracker::JAVAC,
            "ferrofluid/AllocScope.class",
        ) else {
            return;
        };
        let committed: &[u8] = include_bytes!("AllocScope.class");
        assert!(
            made == committed,
            "recompile AllocScope.java (see its comment)"
        );
    }

    /// With roots the subgraph is revealed as the scheme says; without, every class is planned
    /// as it loads.
    #[test]
    fn roots_keep_their_scheme() {
        let engine = crate::engine::find(Mode::Alloc).expect("alloc engine");
        let mut options: AgentOptions = "mode=alloc,root=A::b".parse().unwrap();
        assert_eq!(engine.plan(&options).scheme, Scheme::Lazy);
        options.scheme = Scheme::Total;
        assert_eq!(engine.plan(&options).scheme, Scheme::Total);
        let whole: AgentOptions = "mode=alloc".parse().unwrap();
        assert_eq!(engine.plan(&whole).scheme, Scheme::Eager);
    }
}
