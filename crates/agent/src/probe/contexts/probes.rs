//! The agent's side of the `count` engine's probes: `ferrofluid/Counts` keeps its calling
//! contexts in Java and asks the agent only at a root's entry and exit, at a method's first
//! entry in a recording and at a thread's first probe. The rules are the calling-context
//! engines' (`probe::thread`): root depth, extent, lazy revelation, agent work ignored.

use std::sync::atomic::Ordering;

use ferrofluid_jvmti::sys;

use crate::probe::flags::{self, ACTIVE, DROPPED, INVOKED, PENDING, ROOT};
use crate::probe::share;
use crate::probe::thread::{self, method_id, SWITCHES};
use crate::probe::vthread;

/// Answer bits of the natives ([`entry`], [`exit`], [`state`]), as `ferrofluid/Counts` reads
/// them: count this probe; the thread records from now on; the method's entries may count in
/// Java without asking; a virtual thread.
pub const COUNT_RECORD: u32 = 1;
pub const COUNT_RECORDING: u32 = 2;
pub const COUNT_READY: u32 = 4;
pub const COUNT_VIRTUAL: u32 = 8;

/// A root's entry (`!id`), or the first entry of a method in a recording: the answer says
/// whether the entry counts, whether the thread records, and (not a root) whether the method's
/// entries need no more asking: it is active and revealed. With no root every thread records,
/// and only first entries come here.
pub fn entry(env: *mut sys::JNIEnv, id: i32) -> u32 {
    let root_probe = id < 0;
    let id = method_id(id as u32);
    let f = flags::get(id);
    if f & (ACTIVE | DROPPED) != ACTIVE {
        return 0;
    }
    let all = SWITCHES.all_threads.load(Ordering::Relaxed);
    thread::with_local(|l| {
        if l.busy() {
            return 0;
        }
        l.sync();
        let root = root_probe && f & ROOT != 0;
        let depth = l.depth();
        let collecting = SWITCHES.collecting.load(Ordering::Relaxed);
        if root {
            if depth == 0 && collecting && !all {
                // Outside every root: the recording share decides (`probe::share`).
                let outer = l.gated_depth() == 0;
                if outer {
                    l.begin_measure();
                }
                if !share::admit() {
                    l.gated_entry();
                    return 0;
                }
            }
            l.root_entered(env, depth);
        } else if depth == 0 && !all {
            return 0;
        }
        if f & INVOKED == 0 {
            thread::first_invocation(l, env, id);
        } else if f & PENDING != 0 && collecting {
            SWITCHES.unrevealed.fetch_add(1, Ordering::Relaxed);
        }
        let mut out = 0;
        if SWITCHES.collecting.load(Ordering::Relaxed) {
            if all || l.recorded_entry(root, depth) {
                out |= COUNT_RECORD;
            }
            if all || l.recorded_exit() {
                out |= COUNT_RECORDING;
            }
        }
        if !root && flags::get(id) & (ACTIVE | INVOKED | PENDING) == ACTIVE | INVOKED {
            out |= COUNT_READY;
        }
        out
    })
    .unwrap_or(0)
}

/// A root's exit (`!id`): whether it counts and whether the thread still records after it.
pub fn exit(env: *mut sys::JNIEnv, id: i32) -> u32 {
    let mut out = 0;
    let root = id < 0 && flags::get(method_id(id as u32)) & ROOT != 0;
    if root {
        thread::with_local(|l| {
            if l.busy() {
                return;
            }
            l.sync();
            // The outermost frame ends a measured invocation: one the recording share left
            // out (root depth 0), or a recorded one leaving the extent.
            match l.depth() {
                0 if l.gated_exit() && l.gated_depth() == 0 => l.end_measure(false),
                1 if l.gated_depth() == 0 => l.end_measure(true),
                _ => {}
            }
        });
    }
    thread::exit_gated(env, id, 0, |_| out |= COUNT_RECORD);
    out | state() & COUNT_RECORDING
}

/// Whether this thread records now (the first probe of a thread in a recording), and whether
/// it is a virtual thread.
pub fn state() -> u32 {
    let virtual_thread = if vthread::mounted_key().is_some() {
        COUNT_VIRTUAL
    } else {
        0
    };
    let recording = SWITCHES.collecting.load(Ordering::Relaxed)
        && (SWITCHES.all_threads.load(Ordering::Relaxed)
            || thread::with_local(|l| {
                l.sync();
                !l.busy() && l.recorded_exit()
            })
            .unwrap_or(false));
    virtual_thread | if recording { COUNT_RECORDING } else { 0 }
}
