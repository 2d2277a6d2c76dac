//! Where HotSpot keeps a method's compiled code, read from its VMStructs (what the sampler types
//! frames with, instead of `CompiledMethodLoad`), checked against what `CompiledMethodLoad`
//! itself says, in a JVM created in this process.

#[path = "../../jvmti/tests/common/mod.rs"]
mod live;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrofluid_jvmti::{sys, Primitive};
use jvmtiprof::agent::Agent;
use jvmtiprof::stack::compiled_code_range;

/// Small JDK methods taking and returning `long`s, called often enough through JNI for the JIT
/// to compile them.
const HOT: [(&std::ffi::CStr, &std::ffi::CStr, &std::ffi::CStr); 4] = [
    (c"java/lang/Long", c"divideUnsigned", c"(JJ)J"),
    (c"java/lang/Long", c"remainderUnsigned", c"(JJ)J"),
    (c"java/lang/Math", c"floorDiv", c"(JJ)J"),
    (c"java/lang/Math", c"floorMod", c"(JJ)J"),
];

#[test]
fn the_code_range_read_from_hotspot_is_the_one_compiled_method_load_gives() {
    let vm = live::vm();
    live::with_env("compiled-code", |jvmti, env| {
        let mut hot = Vec::new();
        for (class, name, descriptor) in HOT {
            let class = env.find_class(class.to_str().unwrap()).unwrap();
            for i in 0..30_000i64 {
                let args = [Primitive::Long(-1 - i), Primitive::Long(7 + i)];
                env.call_static_long_method(class, name, descriptor, &args)
                    .unwrap();
            }
            let methods = jvmti.class_methods(class).unwrap();
            hot.extend(methods.iter().copied().filter(|&m| {
                jvmti.method_name(m).is_ok_and(|n| {
                    n.name.as_bytes() == name.to_bytes()
                        && n.signature.as_bytes() == descriptor.to_bytes()
                })
            }));
            env.delete_local_ref(class.as_object());
        }
        assert_eq!(hot.len(), HOT.len());
        // The compilations run in the background: until each has its code.
        let deadline = Instant::now() + Duration::from_secs(20);
        while hot.iter().any(|&m| compiled_code_range(m).is_none()) {
            assert!(Instant::now() < deadline, "not compiled in 20 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        // And have finished what they queued (the last tier).
        std::thread::sleep(Duration::from_secs(1));

        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&events);
        let agent = Agent::builder(vm)
            .on_compiled_method_load(move |code| {
                sink.lock()
                    .unwrap()
                    .push((code.method, code.address, code.size))
            })
            .build()
            .unwrap();
        agent
            .jvmti()
            .generate_events(sys::JVMTI_EVENT_COMPILED_METHOD_LOAD)
            .unwrap();
        let events = std::mem::take(&mut *events.lock().unwrap());
        agent.dispose().unwrap();

        // A method's current code is one of its compilations the event names (the others are
        // replaced or on-stack-replacement code): the same range, for each hot method.
        for m in hot {
            let range = compiled_code_range(m).expect("still compiled");
            let named: Vec<_> = events
                .iter()
                .filter(|&&(method, _, _)| method == m)
                .map(|&(_, address, size)| address..address + size)
                .collect();
            assert!(
                named.contains(&range),
                "{:?}: {range:x?} read, the events say {named:x?}",
                jvmti.method_name(m)
            );
        }
    });
}
