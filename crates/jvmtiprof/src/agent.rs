//! What an agent writer needs from JVMTI, in safe Rust: the entry points the JVM calls
//! ([`export_agent!`](crate::export_agent)), and a JVMTI environment with its capabilities and
//! event callbacks as closures ([`Agent::builder`]).
//!
//! Each [`Agent`] is a JVMTI environment of its own, as the sampler and the interceptor of this
//! crate are: environments do not share callbacks or capabilities, so the parts of an agent
//! (and several agents in one JVM) do not step on each other. Every callback runs under
//! `catch_unwind`: a panic is logged and the JVM carries on.
//!
//! ```no_run
//! use jvmtiprof::agent::{Agent, AgentContext};
//!
//! fn start(ctx: AgentContext) -> Result<(), jvmtiprof::Error> {
//!     let agent = Agent::builder(ctx.vm)
//!         .on_vm_init(|_env, _thread| eprintln!("the VM is up"))
//!         .on_class_prepare(|env, _thread, class| {
//!             let _ = (env, class);
//!         })
//!         .build()?;
//!     // Dropping the handle leaves the environment to the JVM's end.
//!     drop(agent);
//!     Ok(())
//! }
//! jvmtiprof::export_agent!(start);
//! ```

use std::ops::{Deref, DerefMut};

use ferrofluid_jvmti::{sys, Class, JavaVm, JniEnv, Jvmti, MethodId, Object};

use crate::error::{Error, Result};

/// How the agent was loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// At JVM startup (`-agentpath:`, `Agent_OnLoad`): every capability is still available; no
    /// Java code has run and JNI cannot be used until `VMInit`.
    OnLoad,
    /// Into a running JVM (the attach mechanism, `Agent_OnAttach`): JNI is usable, some
    /// capabilities are not available any more.
    Live,
}

/// What the JVM passed to the agent's entry point.
#[derive(Debug, Clone)]
pub struct AgentContext {
    /// The JVM.
    pub vm: JavaVm,
    /// The option string after `=` in `-agentpath:lib.so=OPTIONS` (or the attach `load`'s).
    pub options: String,
    /// How the agent was loaded.
    pub phase: Phase,
}

/// JVMTI capabilities: the raw `jvmtiCapabilities` bit field, set with its `set_can_*` methods
/// (`caps.set_can_tag_objects(1)`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Capabilities(pub sys::jvmtiCapabilities);

impl Deref for Capabilities {
    type Target = sys::jvmtiCapabilities;
    fn deref(&self) -> &sys::jvmtiCapabilities {
        &self.0
    }
}

impl DerefMut for Capabilities {
    fn deref_mut(&mut self) -> &mut sys::jvmtiCapabilities {
        &mut self.0
    }
}

/// A JVMTI event an [`Agent`] can receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Event {
    /// The VM finished starting ([`AgentBuilder::on_vm_init`]).
    VmInit,
    /// The VM is about to end ([`AgentBuilder::on_vm_death`]).
    VmDeath,
    /// A thread started ([`AgentBuilder::on_thread_start`]).
    ThreadStart,
    /// A thread is about to end ([`AgentBuilder::on_thread_end`]).
    ThreadEnd,
    /// A class was loaded ([`AgentBuilder::on_class_load`]).
    ClassLoad,
    /// A class was prepared ([`AgentBuilder::on_class_prepare`]).
    ClassPrepare,
    /// Class bytes about to be defined or retransformed ([`AgentBuilder::on_class_file_load`]).
    ClassFileLoadHook,
    /// A method was compiled ([`AgentBuilder::on_compiled_method_load`]).
    CompiledMethodLoad,
    /// Compiled code was unloaded ([`AgentBuilder::on_compiled_method_unload`]).
    CompiledMethodUnload,
    /// The VM generated code (interpreter, stubs) ([`AgentBuilder::on_dynamic_code`]).
    DynamicCodeGenerated,
    /// A garbage collection started ([`AgentBuilder::on_gc_start`]).
    GarbageCollectionStart,
    /// A garbage collection finished ([`AgentBuilder::on_gc_finish`]).
    GarbageCollectionFinish,
    /// A thread dump was requested (`SIGQUIT`, `jcmd Thread.print`) ([`AgentBuilder::on_data_dump`]).
    DataDumpRequest,
}

impl Event {
    pub(crate) fn raw(self) -> sys::jvmtiEvent {
        match self {
            Event::VmInit => sys::JVMTI_EVENT_VM_INIT,
            Event::VmDeath => sys::JVMTI_EVENT_VM_DEATH,
            Event::ThreadStart => sys::JVMTI_EVENT_THREAD_START,
            Event::ThreadEnd => sys::JVMTI_EVENT_THREAD_END,
            Event::ClassLoad => sys::JVMTI_EVENT_CLASS_LOAD,
            Event::ClassPrepare => sys::JVMTI_EVENT_CLASS_PREPARE,
            Event::ClassFileLoadHook => sys::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK,
            Event::CompiledMethodLoad => sys::JVMTI_EVENT_COMPILED_METHOD_LOAD,
            Event::CompiledMethodUnload => sys::JVMTI_EVENT_COMPILED_METHOD_UNLOAD,
            Event::DynamicCodeGenerated => sys::JVMTI_EVENT_DYNAMIC_CODE_GENERATED,
            Event::GarbageCollectionStart => sys::JVMTI_EVENT_GARBAGE_COLLECTION_START,
            Event::GarbageCollectionFinish => sys::JVMTI_EVENT_GARBAGE_COLLECTION_FINISH,
            Event::DataDumpRequest => sys::JVMTI_EVENT_DATA_DUMP_REQUEST,
        }
    }
}

/// Class bytes the JVM is about to define (or redefine), as `ClassFileLoadHook` sees them.
#[derive(Debug)]
pub struct ClassFileLoad<'a> {
    /// Internal name (`java/lang/String`); `None` for a class defined without one (hidden classes
    /// have theirs only in their bytes).
    pub name: Option<&'a str>,
    /// The class file.
    pub bytes: &'a [u8],
    /// Whether a loaded class is being retransformed or redefined (`false`: loaded for the first
    /// time).
    pub redefining: bool,
    /// The defining loader (`None`: the bootstrap loader).
    pub loader: Option<Object<'a>>,
}

/// A method the JIT compiled, as `CompiledMethodLoad` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompiledCode {
    /// The method compiled (with whatever it inlined).
    pub method: MethodId,
    /// Where its code starts.
    pub address: usize,
    /// Its code's length in bytes.
    pub size: usize,
}

type Thread1 = dyn Fn(&JniEnv<'_>, Object<'_>) + Send + Sync;
type ClassFn = dyn Fn(&JniEnv<'_>, Object<'_>, Class<'_>) + Send + Sync;
type EnvFn = dyn Fn(&JniEnv<'_>) + Send + Sync;
type CodeFn = dyn Fn(&CompiledCode) + Send + Sync;
type DynamicCodeFn = dyn Fn(&str, usize, usize) + Send + Sync;

/// The closures of one environment, reached from its callbacks through the environment's local
/// storage.
#[derive(Default)]
pub(crate) struct Callbacks {
    pub vm_init: Option<Box<Thread1>>,
    pub vm_death: Option<Box<EnvFn>>,
    pub thread_start: Option<Box<Thread1>>,
    pub thread_end: Option<Box<Thread1>>,
    pub class_load: Option<Box<ClassFn>>,
    pub class_prepare: Option<Box<ClassFn>>,
    #[allow(clippy::type_complexity)]
    pub class_file_load: Option<
        Box<dyn Fn(Option<&JniEnv<'_>>, &ClassFileLoad<'_>) -> Option<Vec<u8>> + Send + Sync>,
    >,
    pub compiled_method_load: Option<Box<CodeFn>>,
    pub compiled_method_unload: Option<Box<dyn Fn(MethodId, usize) + Send + Sync>>,
    pub dynamic_code: Option<Box<DynamicCodeFn>>,
    pub gc_start: Option<Box<dyn Fn() + Send + Sync>>,
    pub gc_finish: Option<Box<dyn Fn() + Send + Sync>>,
    pub data_dump: Option<Box<dyn Fn() + Send + Sync>>,
}

impl Callbacks {
    /// The events that have a closure.
    fn events(&self) -> Vec<Event> {
        let mut e = Vec::new();
        let mut add = |present: bool, event| {
            if present {
                e.push(event)
            }
        };
        add(self.vm_init.is_some(), Event::VmInit);
        add(self.vm_death.is_some(), Event::VmDeath);
        add(self.thread_start.is_some(), Event::ThreadStart);
        add(self.thread_end.is_some(), Event::ThreadEnd);
        add(self.class_load.is_some(), Event::ClassLoad);
        add(self.class_prepare.is_some(), Event::ClassPrepare);
        add(self.class_file_load.is_some(), Event::ClassFileLoadHook);
        add(
            self.compiled_method_load.is_some(),
            Event::CompiledMethodLoad,
        );
        add(
            self.compiled_method_unload.is_some(),
            Event::CompiledMethodUnload,
        );
        add(self.dynamic_code.is_some(), Event::DynamicCodeGenerated);
        add(self.gc_start.is_some(), Event::GarbageCollectionStart);
        add(self.gc_finish.is_some(), Event::GarbageCollectionFinish);
        add(self.data_dump.is_some(), Event::DataDumpRequest);
        e
    }
}

/// Builds an [`Agent`]: a JVMTI environment with capabilities and event closures.
#[must_use = "nothing happens until build()"]
pub struct AgentBuilder {
    vm: JavaVm,
    caps: Capabilities,
    callbacks: Callbacks,
    disabled: Vec<Event>,
}

/// A JVMTI environment with the capabilities and event closures it was built with.
///
/// Dropping it leaves the environment in place (its events keep coming); [`Agent::dispose`]
/// ends it.
#[derive(Debug)]
pub struct Agent {
    vm: JavaVm,
    jvmti: Jvmti,
}

impl Agent {
    /// Starts building an environment of `vm`.
    pub fn builder(vm: JavaVm) -> AgentBuilder {
        AgentBuilder {
            vm,
            caps: Capabilities::default(),
            callbacks: Callbacks::default(),
            disabled: Vec::new(),
        }
    }

    /// The JVM.
    pub fn vm(&self) -> JavaVm {
        self.vm
    }

    /// The environment, for the JVMTI calls this crate does not wrap.
    pub fn jvmti(&self) -> Jvmti {
        self.jvmti
    }

    /// Turns one event on or off (it must have a closure to have any effect).
    pub fn set_event(&self, event: Event, enabled: bool) -> Result<()> {
        self.jvmti
            .set_event_notification_mode(enabled, event.raw())
            .map_err(Error::from)
    }

    /// The capabilities this JVM could still grant (in this phase, to a new environment).
    pub fn potential_capabilities(vm: JavaVm) -> Result<Capabilities> {
        let jvmti = vm.jvmti()?;
        let caps = jvmti.potential_capabilities();
        let _ = jvmti.dispose();
        Ok(Capabilities(caps?))
    }

    /// Ends the environment: its events stop, its capabilities are given back. Its closures are
    /// kept (a callback may still be running on another thread).
    pub fn dispose(self) -> Result<()> {
        self.jvmti.dispose().map_err(Error::from)
    }
}

impl AgentBuilder {
    /// Asks for capabilities; [`build`](Self::build) fails, naming them, if the JVM refuses.
    pub fn capabilities(mut self, f: impl FnOnce(&mut Capabilities)) -> Self {
        f(&mut self.caps);
        self
    }

    /// `VMInit`: the VM is up; JNI can be used from here on (with the `JniEnv` given).
    pub fn on_vm_init(
        mut self,
        f: impl Fn(&JniEnv<'_>, Object<'_>) + Send + Sync + 'static,
    ) -> Self {
        self.callbacks.vm_init = Some(Box::new(f));
        self
    }

    /// `VMDeath`: the VM is about to end (the place to write a report).
    pub fn on_vm_death(mut self, f: impl Fn(&JniEnv<'_>) + Send + Sync + 'static) -> Self {
        self.callbacks.vm_death = Some(Box::new(f));
        self
    }

    /// `ThreadStart`, on the new thread, before it runs Java code.
    pub fn on_thread_start(
        mut self,
        f: impl Fn(&JniEnv<'_>, Object<'_>) + Send + Sync + 'static,
    ) -> Self {
        self.callbacks.thread_start = Some(Box::new(f));
        self
    }

    /// `ThreadEnd`, on the ending thread.
    pub fn on_thread_end(
        mut self,
        f: impl Fn(&JniEnv<'_>, Object<'_>) + Send + Sync + 'static,
    ) -> Self {
        self.callbacks.thread_end = Some(Box::new(f));
        self
    }

    /// `ClassLoad` (thread, class).
    pub fn on_class_load(
        mut self,
        f: impl Fn(&JniEnv<'_>, Object<'_>, Class<'_>) + Send + Sync + 'static,
    ) -> Self {
        self.callbacks.class_load = Some(Box::new(f));
        self
    }

    /// `ClassPrepare` (thread, class): the class's methods and fields can be listed.
    pub fn on_class_prepare(
        mut self,
        f: impl Fn(&JniEnv<'_>, Object<'_>, Class<'_>) + Send + Sync + 'static,
    ) -> Self {
        self.callbacks.class_prepare = Some(Box::new(f));
        self
    }

    /// `ClassFileLoadHook`: return new bytes to define instead, or `None` to leave the class as
    /// it is. The `JniEnv` is `None` in the primordial phase. Classes loaded before the closure
    /// is set can be seen again with `RetransformClasses` (capability `can_retransform_classes`,
    /// which also makes this environment's hook run on retransformation).
    pub fn on_class_file_load(
        mut self,
        f: impl Fn(Option<&JniEnv<'_>>, &ClassFileLoad<'_>) -> Option<Vec<u8>> + Send + Sync + 'static,
    ) -> Self {
        self.callbacks.class_file_load = Some(Box::new(f));
        self
    }

    /// `CompiledMethodLoad` (capability `can_generate_compiled_method_load_events`). While any
    /// environment has this event on, HotSpot records debug information at every instruction of
    /// the code it compiles, not only at safepoints (what `-XX:+DebugNonSafepoints` does).
    pub fn on_compiled_method_load(
        mut self,
        f: impl Fn(&CompiledCode) + Send + Sync + 'static,
    ) -> Self {
        self.caps.set_can_generate_compiled_method_load_events(1);
        self.callbacks.compiled_method_load = Some(Box::new(f));
        self
    }

    /// `CompiledMethodUnload` (method, code address).
    pub fn on_compiled_method_unload(
        mut self,
        f: impl Fn(MethodId, usize) + Send + Sync + 'static,
    ) -> Self {
        self.caps.set_can_generate_compiled_method_load_events(1);
        self.callbacks.compiled_method_unload = Some(Box::new(f));
        self
    }

    /// `DynamicCodeGenerated` (name, address, size): the interpreter, stubs, adapters.
    pub fn on_dynamic_code(
        mut self,
        f: impl Fn(&str, usize, usize) + Send + Sync + 'static,
    ) -> Self {
        self.callbacks.dynamic_code = Some(Box::new(f));
        self
    }

    /// `GarbageCollectionStart` (no JNI or JVMTI call is allowed in it).
    pub fn on_gc_start(mut self, f: impl Fn() + Send + Sync + 'static) -> Self {
        self.caps.set_can_generate_garbage_collection_events(1);
        self.callbacks.gc_start = Some(Box::new(f));
        self
    }

    /// `GarbageCollectionFinish` (no JNI or JVMTI call is allowed in it).
    pub fn on_gc_finish(mut self, f: impl Fn() + Send + Sync + 'static) -> Self {
        self.caps.set_can_generate_garbage_collection_events(1);
        self.callbacks.gc_finish = Some(Box::new(f));
        self
    }

    /// `DataDumpRequest` (`SIGQUIT`, `jcmd PID Thread.print`).
    pub fn on_data_dump(mut self, f: impl Fn() + Send + Sync + 'static) -> Self {
        self.callbacks.data_dump = Some(Box::new(f));
        self
    }

    /// Leaves `event` off although it has a closure (turn it on later with [`Agent::set_event`]).
    pub fn disabled(mut self, event: Event) -> Self {
        self.disabled.push(event);
        self
    }

    /// Creates the environment, takes the capabilities, installs the closures and turns their
    /// events on. On failure nothing is left behind.
    pub fn build(self) -> Result<Agent> {
        let jvmti = self.vm.jvmti()?;
        let events = self.callbacks.events();
        let setup = || -> Result<()> {
            add_capabilities(jvmti, &self.caps)?;
            crate::ffi::events::install(jvmti, self.callbacks)?;
            for event in events {
                if !self.disabled.contains(&event) {
                    jvmti.set_event_notification_mode(true, event.raw())?;
                }
            }
            Ok(())
        };
        match setup() {
            Ok(()) => Ok(Agent { vm: self.vm, jvmti }),
            Err(e) => {
                let _ = jvmti.dispose();
                Err(e)
            }
        }
    }
}

/// Adds `caps`; when the JVM refuses, the error names the capabilities it cannot grant.
pub(crate) fn add_capabilities(jvmti: Jvmti, caps: &Capabilities) -> Result<()> {
    match jvmti.add_capabilities(caps) {
        Ok(()) => Ok(()),
        Err(e) => {
            let potential = jvmti.potential_capabilities().unwrap_or_default();
            let missing = missing_capabilities(caps, &potential);
            if missing.is_empty() {
                Err(e.into())
            } else {
                Err(Error::Capabilities(missing.join(", ")))
            }
        }
    }
}

/// The names of the capabilities in `wanted` that `potential` lacks.
fn missing_capabilities(
    wanted: &sys::jvmtiCapabilities,
    potential: &sys::jvmtiCapabilities,
) -> Vec<String> {
    macro_rules! check {
        ($($name:ident),* $(,)?) => {{
            let mut missing = Vec::new();
            $(if wanted.$name() != 0 && potential.$name() == 0 {
                missing.push(stringify!($name).to_owned());
            })*
            missing
        }};
    }
    check!(
        can_tag_objects,
        can_generate_field_modification_events,
        can_generate_field_access_events,
        can_get_bytecodes,
        can_get_synthetic_attribute,
        can_get_owned_monitor_info,
        can_get_current_contended_monitor,
        can_get_monitor_info,
        can_pop_frame,
        can_redefine_classes,
        can_signal_thread,
        can_get_source_file_name,
        can_get_line_numbers,
        can_get_source_debug_extension,
        can_access_local_variables,
        can_maintain_original_method_order,
        can_generate_single_step_events,
        can_generate_exception_events,
        can_generate_frame_pop_events,
        can_generate_breakpoint_events,
        can_suspend,
        can_redefine_any_class,
        can_get_current_thread_cpu_time,
        can_get_thread_cpu_time,
        can_generate_method_entry_events,
        can_generate_method_exit_events,
        can_generate_all_class_hook_events,
        can_generate_compiled_method_load_events,
        can_generate_monitor_events,
        can_generate_vm_object_alloc_events,
        can_generate_native_method_bind_events,
        can_generate_garbage_collection_events,
        can_generate_object_free_events,
        can_force_early_return,
        can_get_owned_monitor_stack_depth_info,
        can_get_constant_pool,
        can_set_native_method_prefix,
        can_retransform_classes,
        can_retransform_any_class,
        can_generate_resource_exhaustion_heap_events,
        can_generate_resource_exhaustion_threads_events,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_capabilities_are_named() {
        let mut wanted = sys::jvmtiCapabilities::default();
        wanted.set_can_tag_objects(1);
        wanted.set_can_retransform_classes(1);
        let mut potential = sys::jvmtiCapabilities::default();
        potential.set_can_tag_objects(1);
        assert_eq!(
            missing_capabilities(&wanted, &potential),
            vec!["can_retransform_classes"]
        );
    }

    #[test]
    fn events_follow_the_closures() {
        let callbacks = Callbacks {
            vm_death: Some(Box::new(|_| {})),
            gc_finish: Some(Box::new(|| {})),
            ..Default::default()
        };
        assert_eq!(
            callbacks.events(),
            vec![Event::VmDeath, Event::GarbageCollectionFinish]
        );
    }
}
