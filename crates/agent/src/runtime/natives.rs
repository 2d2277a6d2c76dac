//! What the natives of the hooks class other than the probes do, and the JNI call wrappers:
//! receivers, deferred sites and gateways reveal what the planner could not see
//! (`crate::ffi::natives` and `crate::ffi::jni_calls` convert and call this).

use ferrofluid_jvmti::{sys, Class, JniEnv, MethodId, Object};

use crate::ffi::{self, jni_calls::JniCalls};
use crate::probe::flags;
use crate::probe::thread::{in_extent, revealing};
use crate::runtime::threads::{self, THREAD_START_SITE};
use crate::runtime::{receiver, reveal};

/// The runtime's handler of the sites' natives and the JNI call wrappers.
pub struct Sites;

impl ffi::natives::Sites for Sites {
    const CLASS_KIND: i32 = reveal::CLASS;

    /// `Hooks.receiver(receiver, site)`: a receiver site or `Thread.start()` with a receiver;
    /// without one a deferred site, through `Hooks.site` (or a receiver site on null, about to
    /// throw).
    #[inline]
    fn receiver(env: *mut sys::JNIEnv, receiver: Option<Object<'_>>, site: u32) {
        let Some(receiver) = receiver else {
            if flags::SITES.get(site) & flags::FIRED == 0 && in_extent() {
                reached_without_receiver(env, site);
            }
            return;
        };
        if !in_extent() {
            return;
        }
        match site {
            THREAD_START_SITE => threads::thread_starting(receiver),
            site => ffi::with_env(env, |jni| {
                if let Some(jni) = jni {
                    receiver::reached_by(jni, receiver, site);
                }
            }),
        }
    }

    fn revealing() -> bool {
        revealing()
    }

    fn reveal_class(env: &JniEnv<'_>, class: Class<'_>) {
        reveal::reveal_class(env, class)
    }

    fn reveal(env: &JniEnv<'_>, target: Object<'_>, kind: i32) {
        reveal::revealed(env, target, kind)
    }
}

/// A deferred site not revealed yet, inside a root's extent.
#[cold]
fn reached_without_receiver(env: *mut sys::JNIEnv, site: u32) {
    ffi::with_env(env, |jni| {
        if let Some(jni) = jni {
            receiver::reached_without_receiver_by(jni, site);
        }
    })
}

impl JniCalls for Sites {
    fn method_called(env: &JniEnv<'_>, mid: MethodId) -> bool {
        reveal::method_called(env, mid);
        false
    }
}
