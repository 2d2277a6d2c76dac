//! Virtual threads in a recording: marked, and past the cap merged into one entry when they
//! pause outside every frame, counts kept.

use ferrofluid_profile::{merged_virtual_name, MethodInfo, Recording, Stamp};

#[test]
fn virtual_threads_past_the_cap_merge_into_one_entry_when_idle() {
    let mut rec = Recording::new(1_000);
    rec.max_virtual_threads = 2;
    let leaf = rec.methods.intern(MethodInfo::new("A", "leaf", "()V"));
    let platform = rec.thread(1, "main");
    platform.enter(leaf, Stamp::wall(0));
    platform.exit(leaf, Stamp::wall(5)).unwrap();
    for key in 10..15u64 {
        let t = rec.thread_of(key, key, &format!("virtual#{key}"));
        t.enter(leaf, Stamp::wall(10 * key));
        if key != 14 {
            t.exit(leaf, Stamp::wall(10 * key + 3)).unwrap();
        }
        rec.mark_virtual(key);
    }
    assert!(!rec.virtual_paused(1), "a platform thread is never merged");
    // Five virtual threads, two kept: 10 and 11 merge; 14 is inside a frame and stays.
    assert!(rec.virtual_paused(10));
    assert!(rec.virtual_paused(11));
    assert!(!rec.virtual_paused(14));
    assert!(rec.virtual_paused(12));
    assert!(!rec.virtual_paused(13), "at the cap");
    let profile = rec.finish(Stamp::wall(1_000));
    let names: Vec<(&str, bool)> = profile
        .threads
        .iter()
        .map(|t| (t.name.as_str(), t.virtual_thread))
        .collect();
    assert_eq!(
        names,
        [
            ("main", false),
            ("virtual#14", true),
            ("virtual#13", true),
            (merged_virtual_name(3).as_str(), true)
        ]
    );
    let merged = &profile.threads[3].tree;
    let leaf_node = merged.node(merged.root()).children()[0];
    assert_eq!(merged.node(leaf_node).calls, 3);
    assert_eq!(merged.node(leaf_node).total_ns, 9);
}
