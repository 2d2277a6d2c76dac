//! What the registered engines ask of the JVM, taken from it: the capabilities of every
//! registered engine (their union) when the agent loads, and each session's events while it
//! runs. A [`Capability`] or [`JvmEvent`] variant maps to JVMTI here, in one match arm each.

use ferrofluid_jvmti::{sys, Jvmti};

use super::{Capability, Engine, JvmEvent};

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
        }
        caps
    }

    fn bit(self) -> u32 {
        1 << self as u32
    }

    /// Useful only to an agent loaded with the JVM (the `native` engine's): not asked for at
    /// an attach.
    fn at_load_only(self) -> bool {
        matches!(self, Capability::NativePrefix | Capability::EarlyStart)
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
/// be taken), for every capability a registered engine needs or would use. One refused is
/// logged and the sessions of the engines that require it are refused ([`super::select`]);
/// an error only if it is one that every engine requires (nothing could be measured).
pub fn take_capabilities(jvmti: Jvmti) -> ferrofluid_jvmti::Result<Granted> {
    let engines: Vec<&dyn Engine> = super::registered().map(|e| e.engine).collect();
    let live = jvmti.phase().is_ok_and(|p| p == sys::JVMTI_PHASE_LIVE);
    let mut granted = 0;
    let mut asked = 0;
    for capability in engines.iter().flat_map(|e| {
        let needs = e.needs();
        needs.capabilities.iter().chain(needs.optional).copied()
    }) {
        if asked & capability.bit() != 0 || (live && capability.at_load_only()) {
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
            Capability::NativePrefix,
            Capability::EarlyStart,
        ];
        let bits = all.iter().fold(0, |bits, c| {
            assert_eq!(bits & c.bit(), 0, "{c:?}");
            bits | c.bit()
        });
        assert_eq!(bits.count_ones(), 5);
        let tags = Capability::TagObjects.jvmti();
        assert_eq!(
            (tags.can_tag_objects(), tags.can_retransform_classes()),
            (1, 0)
        );
    }
}
