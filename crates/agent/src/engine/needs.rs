//! What the registered engines ask of the JVM, taken from it: the capabilities of every
//! registered engine (their union) when the agent loads, and each session's events while it
//! runs. A [`Capability`] or [`JvmEvent`] variant maps to JVMTI here, in one match arm each.

use ferrofluid_jvmti::{sys, Jvmti};

use ferrofluid_protocol::Mode;

use super::{Capability, Engine, JvmEvent, Selected};

impl Capability {
    /// The JVMTI capabilities it stands for.
    fn jvmti(self) -> sys::jvmtiCapabilities {
        let mut caps = sys::jvmtiCapabilities::default();
        match self {
            Capability::RetransformClasses => caps.set_can_retransform_classes(1),
            Capability::TagObjects => caps.set_can_tag_objects(1),
            Capability::ReadBytecodes => {
                caps.set_can_get_bytecodes(1);
                caps.set_can_get_constant_pool(1);
            }
            Capability::ThreadCpuTime => caps.set_can_get_thread_cpu_time(1),
            Capability::NativePrefix => caps.set_can_set_native_method_prefix(1),
            Capability::EarlyStart => caps.set_can_generate_early_vmstart(1),
            Capability::EarlyClassHooks => caps.set_can_generate_early_class_hook_events(1),
        }
        caps
    }

    /// Asks the JVM for it now (an engine setting up at an attach what a load would have).
    pub(super) fn add(self, jvmti: Jvmti) -> ferrofluid_jvmti::Result<()> {
        jvmti.add_capabilities(&self.jvmti())
    }

    fn bit(self) -> u32 {
        1 << self as u32
    }

    /// Useful only to an agent loaded with the JVM (the `native` engine's): asked for only by
    /// the engine of the load options, never at an attach. They cost the whole run: early class
    /// hook events turn class data sharing off, so every JDK class is parsed from its bytes.
    fn at_load_only(self) -> bool {
        matches!(
            self,
            Capability::NativePrefix | Capability::EarlyStart | Capability::EarlyClassHooks
        )
    }
}

impl JvmEvent {
    /// The JVMTI event.
    fn jvmti(self) -> sys::jvmtiEvent {
        match self {
            JvmEvent::ClassFileLoadHook => sys::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK,
            JvmEvent::ClassPrepare => sys::JVMTI_EVENT_CLASS_PREPARE,
            JvmEvent::ThreadStart => sys::JVMTI_EVENT_THREAD_START,
            JvmEvent::ThreadEnd => sys::JVMTI_EVENT_THREAD_END,
        }
    }

    /// Whether the runtime keeps it enabled while the agent is attached, whatever the session.
    fn always_on(self) -> bool {
        RUNTIME_EVENTS.contains(&self.jvmti())
    }
}

/// The events the runtime keeps enabled while attached: the class bytes cache and module reads
/// (class load and preparation), the threads' rings (thread end), shutdown.
pub const RUNTIME_EVENTS: [sys::jvmtiEvent; 4] = [
    sys::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK,
    sys::JVMTI_EVENT_CLASS_PREPARE,
    sys::JVMTI_EVENT_THREAD_END,
    sys::JVMTI_EVENT_VM_DEATH,
];

/// The capabilities the JVM granted the agent (a bit per [`Capability`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Granted(u32);

impl Granted {
    /// Whether the agent holds `capability`.
    pub fn has(self, capability: Capability) -> bool {
        self.0 & capability.bit() != 0
    }
}

/// Asks the JVM, once per environment (at `Agent_OnLoad`/`Agent_OnAttach`, where some can only
/// be taken), for every capability a registered engine needs or would use; those only useful
/// at load only for the engine of the load options (`load_mode`, `None` at an attach). One
/// refused is logged and the sessions of the engines that require it are refused
/// ([`super::select`]); an error only if it is one that every engine requires (nothing could
/// be measured).
pub fn take_capabilities(
    jvmti: Jvmti,
    load_mode: Option<Mode>,
) -> ferrofluid_jvmti::Result<Granted> {
    let registered: Vec<Selected> = super::registered().collect();
    let engines: Vec<&dyn Engine> = registered.iter().map(|e| e.engine).collect();
    let mut granted = 0;
    let mut asked = 0;
    for (mode, capability) in registered.iter().flat_map(|e| {
        let needs = e.engine.needs();
        let mode = e.mode();
        needs
            .capabilities
            .iter()
            .chain(needs.optional)
            .map(move |&c| (mode, c))
    }) {
        if asked & capability.bit() != 0 || (capability.at_load_only() && load_mode != Some(mode)) {
            continue;
        }
        asked |= capability.bit();
        match jvmti.add_capabilities(&capability.jvmti()) {
            Ok(()) => granted |= capability.bit(),
            Err(e)
                if engines
                    .iter()
                    .all(|e| e.needs().capabilities.contains(&capability)) =>
            {
                return Err(e);
            }
            Err(e) => log::info!("capability {capability:?}: {e}; the modes needing it are off"),
        }
    }
    Ok(Granted(granted))
}

/// Enables the events `engine` needs and disables those only other engines need, before its
/// session instruments anything. The first that cannot be enabled is returned.
pub fn enable_for(jvmti: Jvmti, engine: &dyn Engine) -> Result<(), JvmEvent> {
    let wanted = engine.needs().events;
    for event in session_events().filter(|e| !wanted.contains(e)) {
        let _ = jvmti.set_event_notification_mode(false, event.jvmti());
    }
    for &event in wanted {
        if let Err(e) = jvmti.set_event_notification_mode(true, event.jvmti()) {
            log::warn!("enabling {event:?}: {e}");
            return Err(event);
        }
    }
    Ok(())
}

/// Disables every event only sessions need (the session ended, or the agent detaches).
pub fn disable_all(jvmti: Jvmti) {
    for event in session_events() {
        let _ = jvmti.set_event_notification_mode(false, event.jvmti());
    }
}

/// The events of registered engines that the runtime does not keep on.
fn session_events() -> impl Iterator<Item = JvmEvent> {
    let mut events: Vec<JvmEvent> = Vec::new();
    for event in super::registered().flat_map(|e| e.needs().events.iter().copied()) {
        if !event.always_on() && !events.contains(&event) {
            events.push(event);
        }
    }
    events.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_switch_only_the_events_the_runtime_does_not_keep() {
        assert_eq!(
            session_events().collect::<Vec<_>>(),
            [JvmEvent::ThreadStart]
        );
        assert!(JvmEvent::ClassFileLoadHook.always_on());
        assert!(!JvmEvent::ThreadStart.always_on());
    }

    #[test]
    fn each_capability_has_a_bit_of_its_own() {
        let all = [
            Capability::RetransformClasses,
            Capability::TagObjects,
            Capability::ReadBytecodes,
            Capability::ThreadCpuTime,
            Capability::NativePrefix,
            Capability::EarlyStart,
            Capability::EarlyClassHooks,
        ];
        let bits = all.iter().fold(0, |bits, c| {
            assert_eq!(bits & c.bit(), 0, "{c:?}");
            bits | c.bit()
        });
        assert_eq!(bits.count_ones(), 7);
        let load_only: Vec<_> = all.iter().filter(|c| c.at_load_only()).collect();
        assert_eq!(
            load_only,
            [
                &Capability::NativePrefix,
                &Capability::EarlyStart,
                &Capability::EarlyClassHooks
            ]
        );
        let tags = Capability::TagObjects.jvmti();
        assert_eq!(
            (tags.can_tag_objects(), tags.can_retransform_classes()),
            (1, 0)
        );
    }
}
