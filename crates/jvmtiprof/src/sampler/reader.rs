//! The consumer side, off the signal: records out of the ring as [`Sample`]s, with frame types
//! from the walk's compiled frame and the code map (the interpreter's range; compiled code where
//! `CompiledMethodLoad` is the JVM's only way to tell).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ferrofluid_jvmti::{JniEnv, MethodId};

use crate::codemap::Blob;
use crate::ring::KIND_REPEAT;
use crate::threads::{self, JavaThread, ThreadKey};

use super::handler::{
    FIELDS, F_ENV, F_KEY, F_META, F_PC, F_TIME, F_USER, F_WEIGHT, S_BUSY, S_FAULT, S_NOT_JAVA,
    S_NOT_WALKED, S_UNAVAILABLE, S_VM_CODE, S_WALKED, T_IDLE, T_RUNNING, T_SYSCALL,
};
use super::support::SupportState;
use super::{Clock, Shared, Stats, WalkError};

/// What kind of code a frame was running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameType {
    /// Bytecode in the interpreter (the innermost frame, interrupted in the interpreter).
    Interpreted,
    /// Code the JIT compiled for this method (the innermost compiled method of the sample).
    Compiled,
    /// A method the JIT inlined into its caller's compiled code.
    Inlined,
    /// A native method.
    Native,
    /// A Java frame whose tier is not known (below the innermost compiled method, the walk does
    /// not say).
    Java,
}

impl FrameType {
    /// A short stable name: `interpreted`, `compiled`, `inlined`, `native`, `java`.
    pub fn name(self) -> &'static str {
        match self {
            FrameType::Interpreted => "interpreted",
            FrameType::Compiled => "compiled",
            FrameType::Inlined => "inlined",
            FrameType::Native => "native",
            FrameType::Java => "java",
        }
    }
}

/// One frame of a sample, innermost first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Frame {
    /// The method (`None` when the JVM had no `jmethodID` for it yet). Valid while its class is
    /// loaded; [`MethodResolver`](crate::stack::MethodResolver) names it (JVMTI checks ids, so a
    /// stale one only fails to resolve).
    pub method: Option<MethodId>,
    /// The bytecode index (-1 when not known; -3 for a native method).
    pub bci: i32,
    /// What kind of code the frame was running.
    pub kind: FrameType,
}

/// What the thread was doing when sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SampleState {
    /// Running (CPU samples are, by definition).
    Running,
    /// Blocked in a system call (a wall-clock sample that interrupted one).
    Syscall,
    /// It had not run since its last sample (wall clock: a repeat of that sample's stack).
    Idle,
    /// Not known.
    Unknown,
}

/// One sample, as [`Samples::drain`] hands it out.
#[derive(Debug, Clone, Copy)]
pub struct Sample<'a> {
    /// The thread sampled.
    pub thread: ThreadKey,
    /// The sampler's clock.
    pub clock: Clock,
    /// When (`CLOCK_MONOTONIC`, ns).
    pub time_ns: u64,
    /// The time it stands for (ns): the interval, or what elapsed since the thread's last sample.
    pub weight_ns: u64,
    /// What the thread was doing.
    pub state: SampleState,
    /// The interrupted program counter (0 for a repeat).
    pub pc: usize,
    /// The Java stack, innermost frame first (empty with an `error`).
    pub frames: &'a [Frame],
    /// Why there is no stack, if there is none.
    pub error: Option<WalkError>,
    /// The words the [`SignalHandler`](super::SignalHandler) set.
    pub user: [u64; 2],
    /// A repeat of the thread's previous sample (wall clock, the thread had not run).
    pub repeated: bool,
    /// The thread's `JNIEnv` address (0 for a non-Java thread), which identifies a Java thread.
    pub jni_env: usize,
}

struct Last {
    frames: Vec<Frame>,
    error: Option<WalkError>,
}

/// The samples of a [`Sampler`](super::Sampler), read off the signal. One consumer.
pub struct Samples {
    shared: Arc<Shared>,
    support: Arc<SupportState>,
    frames: Vec<Frame>,
    last: HashMap<ThreadKey, Last>,
    /// `JNIEnv` address → Java thread, learnt from `Thread.eetop`.
    java: HashMap<usize, JavaThread>,
    /// The offset of a thread's `JNIEnv` from its VM thread structure (`Thread.eetop`).
    env_offset: Option<isize>,
    java_refreshed: u64,
}

impl Samples {
    pub(crate) fn new(shared: Arc<Shared>, support: Arc<SupportState>) -> Samples {
        Samples {
            shared,
            support,
            frames: Vec::new(),
            last: HashMap::new(),
            java: HashMap::new(),
            env_offset: None,
            java_refreshed: 0,
        }
    }

    /// Hands every sample recorded so far to `f`, in the order the ring got them, and frees their
    /// space. Returns how many.
    pub fn drain(&mut self, mut f: impl FnMut(&Sample<'_>)) -> usize {
        let Samples {
            shared,
            support,
            frames,
            last,
            ..
        } = self;
        let codemap = &support.codemap;
        shared.ring.drain(|kind, words| {
            let Some(fields) = words.get(..FIELDS) else {
                return;
            };
            let l = |i: usize| fields[i].load(Ordering::Relaxed);
            let key_word = l(F_KEY);
            let thread = ThreadKey::new(key_word as u32, (key_word >> 32) as u32);
            let meta = l(F_META);
            let clock = if meta & 0xff == 1 {
                Clock::Wall
            } else {
                Clock::Cpu
            };
            let state = match (meta >> 8) & 0xff {
                T_RUNNING => SampleState::Running,
                T_SYSCALL => SampleState::Syscall,
                T_IDLE => SampleState::Idle,
                _ => SampleState::Unknown,
            };
            let status = (meta >> 16) & 0xff;
            let compiled = ((meta >> 24) & 0xff).checked_sub(1).map(|c| c as usize);
            let n = (meta >> 32) as u32 as i32;
            let pc = l(F_PC) as usize;
            let repeated = kind == KIND_REPEAT;
            let error;
            if repeated {
                let previous = last.get(&thread);
                frames.clear();
                if let Some(p) = previous {
                    frames.extend_from_slice(&p.frames);
                }
                error = previous.map_or(Some(WalkError::NotWalked), |p| p.error);
            } else {
                error = match status {
                    S_WALKED => None,
                    S_VM_CODE => Some(WalkError::Vm(n)),
                    S_FAULT => Some(WalkError::Fault),
                    S_BUSY => Some(WalkError::Busy),
                    S_NOT_JAVA => Some(WalkError::NotJavaThread),
                    S_UNAVAILABLE => Some(WalkError::Unavailable),
                    S_NOT_WALKED => Some(WalkError::NotWalked),
                    _ => Some(WalkError::NotWalked),
                };
                frames.clear();
                if error.is_none() {
                    decode_frames(&words[FIELDS..], n.max(0) as usize, frames);
                    type_frames(frames, pc, compiled, |pc| codemap.find(pc));
                }
                if clock == Clock::Wall {
                    let entry = last.entry(thread).or_insert(Last {
                        frames: Vec::new(),
                        error: None,
                    });
                    entry.frames.clear();
                    entry.frames.extend_from_slice(frames);
                    entry.error = error;
                }
            }
            f(&Sample {
                thread,
                clock,
                time_ns: l(F_TIME),
                weight_ns: l(F_WEIGHT),
                state,
                pc,
                frames,
                error,
                user: [l(F_USER), l(F_USER + 1)],
                repeated,
                jni_env: l(F_ENV) as usize,
            });
        })
    }

    /// The sampler's counters (also readable after it stopped).
    pub fn stats(&self) -> Stats {
        self.shared.stats.snapshot()
    }

    /// Bytes of the ring holding samples not drained yet.
    pub fn pending_bytes(&self) -> usize {
        self.shared.ring.used() * 8
    }

    /// Code ranges the frame typing knows: the JVM's generated code (the interpreter, stubs), and
    /// its compiled methods where they come from `CompiledMethodLoad` (docs/jvmtiprof.md, "Frame
    /// types").
    pub fn known_code_blobs(&self) -> usize {
        self.support.codemap.len()
    }

    /// The Java thread a sample came from (its id and name), on a Java thread (`env`). Threads
    /// started while a sampler ran are known from their start; threads that ran before are looked
    /// up among the live threads (their `Thread.eetop` locates their `JNIEnv`); a thread that
    /// ended since is `None`.
    pub fn java_thread(&mut self, env: &JniEnv<'_>, sample: &Sample<'_>) -> Option<JavaThread> {
        if sample.jni_env == 0 {
            return None;
        }
        if let Some(t) = self
            .support
            .java_threads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&sample.jni_env)
        {
            return Some(t.clone());
        }
        if let Some(t) = threads::registry().java(sample.thread) {
            return Some(t);
        }
        if let Some(t) = self.java.get(&sample.jni_env) {
            return Some(t.clone());
        }
        // Not known: look at the live threads again, at most every 100 ms.
        let now = crate::ffi::os::monotonic_ns();
        if now.saturating_sub(self.java_refreshed) < 100_000_000 {
            return None;
        }
        self.java_refreshed = now;
        self.refresh_java_threads(env);
        self.java.get(&sample.jni_env).cloned()
    }

    fn refresh_java_threads(&mut self, env: &JniEnv<'_>) {
        let Some(jvmti) = self.support.jvmti() else {
            return;
        };
        if self.env_offset.is_none() {
            // This thread's own JNIEnv and eetop give the (per-JVM constant) offset between them.
            let Ok(me) = jvmti.current_thread(env) else {
                return;
            };
            let eetop = env.long_field(me, c"eetop").unwrap_or(0);
            env.delete_local_ref(me);
            let offset = env.as_raw() as isize - eetop as isize;
            if eetop == 0 || !(0..1 << 16).contains(&offset) {
                return;
            }
            self.env_offset = Some(offset);
        }
        let Some(offset) = self.env_offset else {
            return;
        };
        let Ok(all) = jvmti.all_threads(env) else {
            return;
        };
        for &thread in all.iter() {
            let eetop = env.long_field(thread, c"eetop").unwrap_or(0);
            if eetop != 0 {
                let id = env.long_field(thread, c"tid").unwrap_or(-1);
                let name = jvmti
                    .thread_info(env, thread)
                    .map(|i| i.name)
                    .unwrap_or_default();
                self.java
                    .insert((eetop as isize + offset) as usize, JavaThread { id, name });
            }
            env.delete_local_ref(thread);
        }
    }
}

/// Frames as the walk wrote them: two words each, the bytecode index in the low half of the
/// first, the `jmethodID` in the second.
fn decode_frames(words: &[AtomicU64], n: usize, out: &mut Vec<Frame>) {
    for pair in words.chunks_exact(2).take(n) {
        let bci = pair[0].load(Ordering::Relaxed) as u32 as i32;
        let method = crate::ffi::method_id(pair[1].load(Ordering::Relaxed) as usize);
        out.push(Frame {
            method,
            bci,
            kind: if bci == -3 {
                FrameType::Native
            } else {
                FrameType::Java
            },
        });
    }
}

/// Types the innermost frames from where the program counter was: in compiled code, the frames
/// above the compiled method are inlined into it; in the interpreter, the top frame is
/// interpreted. The compiled frame is the one the walk found (`compiled`, from HotSpot's own
/// structures) or, without it, the one the code map's compiled-code events name.
fn type_frames(
    frames: &mut [Frame],
    pc: usize,
    compiled: Option<usize>,
    find: impl Fn(usize) -> Option<Blob>,
) {
    let mark = |frames: &mut [Frame], root: usize| {
        if root < frames.len() && frames[..root].iter().all(|f| f.kind == FrameType::Java) {
            for f in &mut frames[..root] {
                f.kind = FrameType::Inlined;
            }
            frames[root].kind = FrameType::Compiled;
        }
    };
    if let Some(root) = compiled {
        mark(frames, root);
        return;
    }
    match find(pc) {
        Some(Blob::Compiled(method)) => {
            let root = frames
                .iter()
                .position(|f| f.method.is_some_and(|m| m.as_raw() as usize == method));
            if let Some(root) = root {
                mark(frames, root);
            }
        }
        Some(Blob::Interpreter) => {
            if let Some(top) = frames.first_mut().filter(|f| f.kind == FrameType::Java) {
                top.kind = FrameType::Interpreted;
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(m: usize, kind: FrameType) -> Frame {
        Frame {
            method: crate::ffi::method_id(m),
            bci: 1,
            kind,
        }
    }

    #[test]
    fn compiled_code_types_the_frames_it_inlined() {
        let mut frames = vec![
            frame(1, FrameType::Java),
            frame(2, FrameType::Java),
            frame(3, FrameType::Java),
            frame(4, FrameType::Java),
        ];
        let expected = [
            FrameType::Inlined,
            FrameType::Inlined,
            FrameType::Compiled,
            FrameType::Java,
        ];
        let mut by_walk = frames.clone();
        type_frames(&mut frames, 50, None, |_| Some(Blob::Compiled(3)));
        let kinds: Vec<_> = frames.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, expected);
        // The walk's answer, where it has one, without the code map.
        type_frames(&mut by_walk, 50, Some(2), |_| None);
        let kinds: Vec<_> = by_walk.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, expected);
        let mut frames = vec![frame(1, FrameType::Java), frame(2, FrameType::Java)];
        type_frames(&mut frames, 50, None, |_| Some(Blob::Interpreter));
        assert_eq!(frames[0].kind, FrameType::Interpreted);
        assert_eq!(frames[1].kind, FrameType::Java);
        let mut frames = vec![frame(1, FrameType::Native), frame(2, FrameType::Java)];
        type_frames(&mut frames, 50, None, |_| Some(Blob::Compiled(9)));
        assert_eq!(frames[0].kind, FrameType::Native);
    }
}
