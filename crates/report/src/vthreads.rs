//! Virtual threads in the text and HTML reports: there may be millions, so by default their
//! trees are merged into one entry, `virtual threads (N)`; [`VirtualThreads::Each`] lists them
//! one by one. The JSON document always keeps one entry per virtual thread.

use std::borrow::Cow;

use ferrofluid_profile::{CallTree, Profile, ThreadProfile};

/// How the text and HTML reports show virtual threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VirtualThreads {
    /// One entry for all of them, their trees merged (same contexts summed).
    #[default]
    Merged,
    /// One entry each, as platform threads.
    Each,
}

/// The name of the entry of `n` virtual threads merged.
pub fn merged_name(n: u64) -> String {
    format!("virtual threads ({n})")
}

/// How many virtual threads entry `t` stands for: one, or those a recording merged past its
/// cap (`ferrofluid_profile::merged_virtual_name`).
fn threads_of(t: &ThreadProfile) -> u64 {
    let past_cap = ferrofluid_profile::merged_virtual_name(0);
    let prefix = past_cap.trim_end_matches("0)");
    t.name
        .strip_prefix(prefix)
        .and_then(|rest| rest.strip_suffix(')'))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
}

/// `profile` as the reports show it with `mode`: with [`VirtualThreads::Merged`] and at least
/// one virtual thread, its virtual threads become one entry where the first of them was.
pub fn grouped(profile: &Profile, mode: VirtualThreads) -> Cow<'_, Profile> {
    if mode == VirtualThreads::Each || !profile.threads.iter().any(|t| t.virtual_thread) {
        return Cow::Borrowed(profile);
    }
    let mut tree = CallTree::new();
    let mut merged = ThreadProfile::new(String::new(), 0, CallTree::new());
    merged.virtual_thread = true;
    let mut count = 0;
    let mut threads = Vec::with_capacity(profile.threads.len());
    let mut at = None;
    for t in &profile.threads {
        if !t.virtual_thread {
            threads.push(t.clone());
            continue;
        }
        at.get_or_insert(threads.len());
        count += threads_of(t);
        tree.merge(&t.tree);
        merged.cpu_ns = match (merged.cpu_ns, t.cpu_ns) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        merged.overflow_calls += t.overflow_calls;
        merged.unmatched_exits += t.unmatched_exits;
        merged.dropped_events += t.dropped_events;
    }
    merged.name = merged_name(count);
    merged.tree = tree;
    threads.insert(at.unwrap_or(threads.len()), merged);
    Cow::Owned(Profile {
        threads,
        ..profile.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrofluid_profile::{Stamp, ThreadRecorder};

    fn thread(profile: &mut Profile, name: &str, id: u64, calls: u64, virt: bool) {
        let leaf = profile.methods.insert("A", "leaf", "()V");
        let mut rec = ThreadRecorder::default();
        for i in 0..calls {
            rec.enter(leaf, Stamp::wall(10 * i));
            rec.exit(leaf, Stamp::wall(10 * i + 5)).unwrap();
        }
        let mut t = ThreadProfile::new(name, id, rec.finish(Stamp::wall(10 * calls)));
        t.virtual_thread = virt;
        profile.threads.push(t);
    }

    fn calls(t: &ThreadProfile) -> u64 {
        let tree = &t.tree;
        tree.node(tree.node(tree.root()).children()[0]).calls
    }

    #[test]
    fn virtual_threads_merge_into_one_entry_where_the_first_was() {
        let mut p = Profile::default();
        thread(&mut p, "main", 1, 3, false);
        thread(&mut p, "virtual#20", 20, 5, true);
        thread(&mut p, "worker", 2, 1, false);
        thread(&mut p, "virtual#21", 21, 7, true);
        thread(
            &mut p,
            &ferrofluid_profile::merged_virtual_name(40),
            0,
            9,
            true,
        );
        let g = grouped(&p, VirtualThreads::Merged);
        let names: Vec<&str> = g.threads.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["main", "virtual threads (42)", "worker"]);
        assert_eq!(calls(&g.threads[1]), 21);
        assert!(g.threads[1].virtual_thread);
        assert_eq!(calls(&g.threads[0]), 3);
        assert!(matches!(
            grouped(&p, VirtualThreads::Each),
            Cow::Borrowed(_)
        ));
        let mut platform = Profile::default();
        thread(&mut platform, "main", 1, 3, false);
        assert!(matches!(
            grouped(&platform, VirtualThreads::Merged),
            Cow::Borrowed(_)
        ));
    }
}
