//! Planner behaviour on hand-built class models.

use super::*;
use crate::model::{CallKind, CallSite, MethodModel};
use crate::pattern::ClassFilter;
use crate::registry::BOOTSTRAP;
use ferrofluid_classfile::class::access::*;
use ferrofluid_classfile::Selection;

const V: &str = "()V";

fn call(kind: CallKind, class: &'static str, name: &'static str) -> CallSite<'static> {
    CallSite::new(kind, class, name, V)
}

fn method(name: &'static str, flags: u16, calls: Vec<CallSite<'static>>) -> MethodModel<'static> {
    MethodModel::new(name, V, flags, calls)
}

/// A public class extending `superclass`, implementing nothing.
fn class(
    name: &'static str,
    superclass: &'static str,
    methods: Vec<MethodModel<'static>>,
) -> ClassModel<'static> {
    ClassModel::new(name, Some(superclass), &[], PUBLIC, methods)
}

fn config(roots: &[&str], scheme: Scheme) -> PlanConfig {
    PlanConfig {
        roots: roots.iter().map(|r| r.parse().unwrap()).collect(),
        scheme,
        filter: ClassFilter::default(),
        skip_trivial: false,
        adaptive: false,
    }
}

/// `Class.method` of each id, in batch order.
fn names(p: &Planner, batch: &Batch) -> Vec<String> {
    batch
        .ids()
        .map(|id| {
            let m = p.method(id).unwrap();
            format!("{}.{}", m.class, m.name)
        })
        .collect()
}

/// Plans and names the batch.
fn planned(p: &mut Planner) -> Vec<String> {
    let b = p.plan();
    names(p, &b)
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn id(p: &Planner, class: &str, name: &str) -> MethodId {
    p.id_of(BOOTSTRAP, class, name, V)
        .unwrap_or_else(|| panic!("{class}.{name} not chosen"))
}

/// JP Fig. 4: `f` calls `h` and `g`, `g` calls `h`; `main` calls `f`, `unused` calls `h`.
fn fig4() -> ClassModel<'static> {
    ClassModel::new(
        "Fig4",
        Some("java/lang/Object"),
        &[],
        PUBLIC,
        vec![
            method(
                "main",
                PUBLIC | STATIC,
                vec![call(CallKind::Static, "Fig4", "f")],
            ),
            method(
                "f",
                STATIC,
                vec![
                    call(CallKind::Static, "Fig4", "h"),
                    call(CallKind::Static, "Fig4", "g"),
                ],
            ),
            method("g", STATIC, vec![call(CallKind::Static, "Fig4", "h")]),
            method("h", STATIC, vec![]),
            method("unused", STATIC, vec![call(CallKind::Static, "Fig4", "h")]),
        ],
    )
}

fn object() -> ClassModel<'static> {
    ClassModel::new(
        "java/lang/Object",
        None,
        &[],
        PUBLIC,
        vec![method("<init>", PUBLIC, vec![])],
    )
}

fn loaded(scheme: Scheme, roots: &[&str], classes: &[ClassModel<'static>]) -> (Planner, Batch) {
    let mut p = Planner::new(config(roots, scheme));
    for c in classes {
        assert!(p.add_model(BOOTSTRAP, c));
    }
    let b = p.plan();
    (p, b)
}

#[test]
fn lazy_fig4_reveals_callees_at_first_invocation() {
    let (mut p, b) = loaded(Scheme::Lazy, &["Fig4::f"], &[object(), fig4()]);
    assert_eq!(names(&p, &b), ["Fig4.f"]);
    let b = p.first_invocation(id(&p, "Fig4", "f")).unwrap();
    assert_eq!(sorted(names(&p, &b)), ["Fig4.g", "Fig4.h"]);
    assert_eq!(b.classes.len(), 1, "one retransformation for the class");
    assert!(p.first_invocation(id(&p, "Fig4", "h")).unwrap().is_empty());
    // g's only callee, h, is instrumented already.
    assert!(p.first_invocation(id(&p, "Fig4", "g")).unwrap().is_empty());
    // A second report of the same method changes nothing.
    assert!(p.first_invocation(id(&p, "Fig4", "g")).unwrap().is_empty());
    let c = p.counters();
    assert_eq!((c.instrumented, c.invoked), (3, 3));
    assert_eq!(
        p.first_invocation(99).unwrap_err().to_string(),
        "unknown method id 99"
    );
}

#[test]
fn eager_fig4_instruments_the_closure_at_load() {
    let (mut p, b) = loaded(Scheme::Eager, &["Fig4::f"], &[object(), fig4()]);
    assert_eq!(sorted(names(&p, &b)), ["Fig4.f", "Fig4.g", "Fig4.h"]);
    assert!(p.first_invocation(id(&p, "Fig4", "f")).unwrap().is_empty());
    assert_eq!((p.counters().instrumented, p.counters().invoked), (3, 1));
}

#[test]
fn total_takes_every_method_with_code_that_passes_the_filter() {
    let mut cfg = config(&["Fig4::f"], Scheme::Total);
    cfg.filter.exclude.push("java.**".parse().unwrap());
    let mut p = Planner::new(cfg);
    p.add_model(BOOTSTRAP, &object());
    p.add_model(BOOTSTRAP, &fig4());
    let b = p.plan();
    assert_eq!(
        names(&p, &b),
        ["Fig4.main", "Fig4.f", "Fig4.g", "Fig4.h", "Fig4.unused"]
    );
    // No root means the whole program.
    let (p, b) = loaded(Scheme::Lazy, &[], &[object(), fig4()]);
    assert_eq!(p.scheme(), Scheme::Total);
    // Every method with code but java.lang.Object's constructor (never instrumented).
    assert_eq!(b.method_count(), 5);
    assert_eq!(
        p.id_of(BOOTSTRAP, "java/lang/Object", "<init>", "()V"),
        None
    );
}

#[test]
fn ids_are_dense_and_map_back() {
    let (p, b) = loaded(Scheme::Eager, &["Fig4::f"], &[object(), fig4()]);
    let mut ids: Vec<MethodId> = b.ids().collect();
    ids.sort();
    assert_eq!(ids, [0, 1, 2]);
    let f = p.method(0).unwrap();
    assert_eq!(
        (f.class, f.name, f.descriptor, f.loader),
        ("Fig4", "f", V, BOOTSTRAP)
    );
    assert_eq!(f.access, STATIC);
    assert!(!f.invoked);
    assert!(p.method(3).is_none());
}

/// Interface `name` with one abstract method, `go`.
fn go_interface(name: &'static str) -> ClassModel<'static> {
    ClassModel::new(
        name,
        None,
        &[],
        PUBLIC | INTERFACE | ABSTRACT,
        vec![method("go", ABSTRACT | PUBLIC, vec![])],
    )
}

/// `Main.run` calls `go` on interface `interface`.
fn main_calling_go(interface: &'static str) -> ClassModel<'static> {
    ClassModel::new(
        "Main",
        Some("java/lang/Object"),
        &[],
        PUBLIC,
        vec![method(
            "run",
            STATIC,
            vec![call(CallKind::Interface, interface, "go")],
        )],
    )
}

/// `Task` with implementations `A`, `B` loaded and `C` loaded later; `Main.run` calls `Task.go`.
fn tasks() -> Vec<ClassModel<'static>> {
    vec![
        object(),
        go_interface("Task"),
        main_calling_go("Task"),
        ClassModel::new(
            "A",
            Some("java/lang/Object"),
            &["Task"],
            PUBLIC,
            vec![method("go", PUBLIC, vec![])],
        ),
        ClassModel::new(
            "B",
            Some("java/lang/Object"),
            &["Task"],
            PUBLIC,
            vec![method(
                "go",
                PUBLIC,
                vec![call(CallKind::Static, "Later", "work")],
            )],
        ),
    ]
}

fn task_c() -> ClassModel<'static> {
    ClassModel::new(
        "C",
        Some("java/lang/Object"),
        &["Task"],
        PUBLIC,
        vec![
            method("go", PUBLIC, vec![]),
            method("other", PUBLIC, vec![]),
        ],
    )
}

#[test]
fn an_override_loaded_before_its_superclass_is_added_when_the_superclass_loads() {
    // `Main.run` calls `Task.go`, which nothing implements yet; then `Sub` (overriding `go`)
    // loads before its superclass `Base` (implementing `Task`), as the JVM loads them: `Sub`'s
    // link to `Task` is known only once `Base` is registered.
    let mut all = tasks();
    all.retain(|c| c.name == "java/lang/Object" || c.name == "Task" || c.name == "Main");
    let (mut p, _) = loaded(Scheme::Lazy, &["Main::run"], &all);
    p.set_receiver_sites(false);
    assert!(p
        .first_invocation(id(&p, "Main", "run"))
        .unwrap()
        .is_empty());
    let class = |name: &'static str, sup: &'static str, ifaces: &'static [&'static str]| {
        ClassModel::new(
            name,
            Some(sup),
            ifaces,
            PUBLIC,
            vec![method("go", PUBLIC, vec![])],
        )
    };
    assert!(p.add_model(BOOTSTRAP, &class("Sub", "Base", &[])));
    assert!(planned(&mut p).is_empty());
    assert!(p.add_model(BOOTSTRAP, &class("Base", "java/lang/Object", &["Task"])));
    assert_eq!(sorted(planned(&mut p)), ["Base.go", "Sub.go"]);
}

#[test]
fn lazy_late_implementation_is_added_when_it_loads() {
    let (mut p, b) = loaded(Scheme::Lazy, &["Main::run"], &tasks());
    assert_eq!(names(&p, &b), ["Main.run"]);
    let b = p.first_invocation(id(&p, "Main", "run")).unwrap();
    assert_eq!(names(&p, &b), ["A.go", "B.go"]);
    assert!(p.add_model(BOOTSTRAP, &task_c()));
    let b = p.plan();
    assert_eq!(names(&p, &b), ["C.go"]);
    // B.go calls a class that is not loaded: pending until it is.
    let b = p.first_invocation(id(&p, "B", "go")).unwrap();
    assert!(b.is_empty());
    assert_eq!(p.counters().pending_call_sites, 1);
    p.add_model(
        BOOTSTRAP,
        &ClassModel::new(
            "Later",
            None,
            &[],
            PUBLIC,
            vec![
                method("work", STATIC, vec![]),
                method("idle", STATIC, vec![]),
            ],
        ),
    );
    assert_eq!(planned(&mut p), ["Later.work"]);
    assert_eq!(p.counters().pending_call_sites, 0);
    assert_eq!((p.counters().instrumented, p.counters().invoked), (5, 2));
}

#[test]
fn lazy_class_loaded_before_the_caller_runs_is_found_by_cha() {
    let mut all = tasks();
    all.push(task_c());
    let (mut p, _) = loaded(Scheme::Lazy, &["Main::run"], &all);
    let b = p.first_invocation(id(&p, "Main", "run")).unwrap();
    assert_eq!(names(&p, &b), ["A.go", "B.go", "C.go"]);
}

#[test]
fn eager_follows_late_classes_transitively() {
    let (mut p, b) = loaded(Scheme::Eager, &["Main::run"], &tasks());
    assert_eq!(sorted(names(&p, &b)), ["A.go", "B.go", "Main.run"]);
    p.add_model(BOOTSTRAP, &task_c());
    assert_eq!(planned(&mut p), ["C.go"]);
    p.add_model(
        BOOTSTRAP,
        &ClassModel::new(
            "Later",
            None,
            &[],
            PUBLIC,
            vec![
                method(
                    "work",
                    STATIC,
                    vec![call(CallKind::Static, "Later", "deeper")],
                ),
                method("deeper", STATIC, vec![]),
            ],
        ),
    );
    assert_eq!(sorted(planned(&mut p)), ["Later.deeper", "Later.work"]);
}

#[test]
fn root_in_a_class_loaded_later_is_instrumented_when_it_loads() {
    let (mut p, b) = loaded(Scheme::Lazy, &["com.acme.*::handle*"], &[object()]);
    assert!(b.is_empty());
    let server = ClassModel::new(
        "com/acme/Server",
        Some("java/lang/Object"),
        &[],
        PUBLIC,
        vec![
            method("handleGet", PUBLIC, vec![]),
            method("handlePut", PUBLIC, vec![]),
            method("start", PUBLIC, vec![]),
            method("handleAbstract", ABSTRACT, vec![]),
        ],
    );
    p.add_model(BOOTSTRAP, &server);
    assert_eq!(
        planned(&mut p),
        ["com/acme/Server.handleGet", "com/acme/Server.handlePut"]
    );
}

#[test]
fn filters_and_agent_classes_are_never_chosen() {
    let mut cfg = config(&["*::run"], Scheme::Eager);
    cfg.filter.exclude.push("lib.**".parse().unwrap());
    let mut p = Planner::new(cfg);
    p.add_model(
        BOOTSTRAP,
        &ClassModel::new(
            "app/Main",
            None,
            &[],
            PUBLIC,
            vec![method(
                "run",
                STATIC,
                vec![
                    call(CallKind::Static, "lib/Util", "help"),
                    call(CallKind::Static, "ferrofluid/Hooks", "enter"),
                ],
            )],
        ),
    );
    p.add_model(
        BOOTSTRAP,
        &ClassModel::new(
            "lib/Util",
            None,
            &[],
            PUBLIC,
            vec![
                method("help", STATIC, vec![]),
                method("run", STATIC, vec![]),
            ],
        ),
    );
    p.add_model(
        BOOTSTRAP,
        &ClassModel::new(
            "ferrofluid/Hooks",
            None,
            &[],
            PUBLIC,
            vec![
                method("enter", STATIC, vec![]),
                method("run", STATIC, vec![]),
            ],
        ),
    );
    assert_eq!(planned(&mut p), ["app/Main.run"]);
    let err = p.reveal(BOOTSTRAP, "lib/Util", "nope", V).unwrap_err();
    assert_eq!(err.to_string(), "no loaded method lib/Util.nope()V");
    assert!(p
        .reveal(BOOTSTRAP, "lib/Util", "help", V)
        .unwrap()
        .is_empty());
}

#[test]
fn reveal_adds_a_method_seen_running() {
    let (mut p, _) = loaded(Scheme::Lazy, &["Fig4::f"], &[object(), fig4()]);
    let b = p.reveal(BOOTSTRAP, "Fig4", "unused", V).unwrap();
    assert_eq!(names(&p, &b), ["Fig4.unused"]);
    assert!(p.reveal(BOOTSTRAP, "Fig4", "unused", V).unwrap().is_empty());
    // Lazy: its callees come at its first invocation like any other method.
    let b = p.first_invocation(id(&p, "Fig4", "unused")).unwrap();
    assert_eq!(names(&p, &b), ["Fig4.h"]);
}

#[test]
fn revealing_a_virtual_method_reveals_its_implementations_now_and_later() {
    let (mut p, _) = loaded(Scheme::Lazy, &["Main::run"], &tasks());
    // `Task.go` is abstract: what a reflective or native call of it runs is A.go or B.go.
    let b = p.reveal(BOOTSTRAP, "Task", "go", V).unwrap();
    assert_eq!(names(&p, &b), ["A.go", "B.go"]);
    assert!(p.reveal(BOOTSTRAP, "A", "go", V).unwrap().is_empty());
    assert!(p.add_model(BOOTSTRAP, &task_c()));
    assert_eq!(planned(&mut p), ["C.go"]);
    assert_eq!(p.counters().instrumented, 4);
}

#[test]
fn revealing_a_method_whose_calls_are_receiver_sites_still_takes_every_implementation() {
    let mut all = tasks();
    all.push(task_c());
    let (mut p, _) = loaded(Scheme::Lazy, &["Main::run"], &all);
    // `Main.run`'s call of `Task.go` (3 implementations) is a receiver site: CHA does not
    // follow it...
    let site = ferrofluid_classfile::CallSite {
        invoke: ferrofluid_classfile::Invoke::Interface,
        class: "Task",
        name: "go",
        descriptor: V,
        bci: 0,
        block: 0,
    };
    assert_eq!(p.receiver_site(BOOTSTRAP, &site), Some(0));
    assert!(p
        .first_invocation(id(&p, "Main", "run"))
        .unwrap()
        .is_empty());
    // ...but a reflective call of `Task.go` has no receiver probe: all of them.
    let b = p.reveal(BOOTSTRAP, "Task", "go", V).unwrap();
    assert_eq!(names(&p, &b), ["A.go", "B.go", "C.go"]);
}

#[test]
fn selection_gives_the_class_its_chosen_ids() {
    let (mut p, _) = loaded(Scheme::Lazy, &["Fig4::f"], &[object(), fig4()]);
    p.first_invocation(id(&p, "Fig4", "f")).unwrap();
    let (f, g) = (id(&p, "Fig4", "f"), id(&p, "Fig4", "g"));
    let mut sel = p.selection_for(BOOTSTRAP, "Fig4").unwrap();
    let site = |name| ferrofluid_classfile::MethodSite {
        class: "Fig4",
        name,
        descriptor: V,
        access: 0,
    };
    assert_eq!(sel.method_id(&site("f")), Some(f));
    assert_eq!(sel.method_id(&site("g")), Some(g));
    assert_eq!(sel.method_id(&site("main")), None);
    assert_eq!(sel.method_id(&site("absent")), None);
    let chosen: Vec<&str> = sel.chosen().into_iter().map(|(_, n, _)| n).collect();
    assert_eq!(chosen, ["f", "g", "h"]);
    assert!(p.selection_for(7, "Fig4").is_none());
}

#[test]
fn a_dropped_method_leaves_the_selection_for_good_and_a_root_never_does() {
    let (mut p, _) = loaded(Scheme::Lazy, &["Fig4::f"], &[object(), fig4()]);
    p.first_invocation(id(&p, "Fig4", "f")).unwrap();
    let (f, g, h) = (
        id(&p, "Fig4", "f"),
        id(&p, "Fig4", "g"),
        id(&p, "Fig4", "h"),
    );
    assert_eq!(p.drop_probes(h), Some((BOOTSTRAP, "Fig4".to_owned())));
    // Once only; never a root; never an unknown id.
    assert_eq!(p.drop_probes(h), None);
    assert_eq!(p.drop_probes(f), None);
    assert_eq!(p.drop_probes(9999), None);
    assert_eq!(p.dropped().collect::<Vec<_>>(), [h]);
    let chosen = |p: &mut Planner| -> Vec<String> {
        let sel = p.selection_for(BOOTSTRAP, "Fig4").unwrap();
        sel.chosen()
            .into_iter()
            .map(|(_, n, _)| n.to_owned())
            .collect()
    };
    assert_eq!(chosen(&mut p), ["f", "g"]);
    // It keeps its id, and revealing it again (g's first call reaches h) chooses nothing.
    assert_eq!(p.id_of(BOOTSTRAP, "Fig4", "h", V), Some(h));
    assert!(p.first_invocation(g).unwrap().is_empty());
    assert_eq!(chosen(&mut p), ["f", "g"]);
    assert_eq!(p.counters().instrumented, 3);
}

#[test]
fn two_loaders_resolve_calls_to_their_own_class() {
    let mut p = Planner::new(config(&["app.Main::run"], Scheme::Eager));
    p.set_loader_parent(1, BOOTSTRAP);
    p.set_loader_parent(2, BOOTSTRAP);
    for loader in [1, 2] {
        p.add_model(
            loader,
            &ClassModel::new(
                "app/Main",
                None,
                &[],
                PUBLIC,
                vec![method(
                    "run",
                    STATIC,
                    vec![call(CallKind::Static, "app/Dep", "work")],
                )],
            ),
        );
    }
    p.add_model(
        1,
        &ClassModel::new(
            "app/Dep",
            None,
            &[],
            PUBLIC,
            vec![method("work", STATIC, vec![])],
        ),
    );
    let b = p.plan();
    let by_loader: Vec<(LoaderId, String, usize)> = b
        .classes
        .iter()
        .map(|c| (c.loader, c.class.clone(), c.methods.len()))
        .collect();
    // Loader 2's Main sees loader 1's Dep only through the by-name fallback.
    assert_eq!(
        by_loader,
        [
            (1, "app/Main".into(), 1),
            (2, "app/Main".into(), 1),
            (1, "app/Dep".into(), 1)
        ]
    );
    assert_eq!(p.counters().pending_call_sites, 1);
    // Loader 2's own Dep arrives: its call site is followed again, now to that class.
    p.add_model(
        2,
        &ClassModel::new(
            "app/Dep",
            None,
            &[],
            PUBLIC,
            vec![method("work", STATIC, vec![])],
        ),
    );
    let b = p.plan();
    assert_eq!(
        (b.classes[0].loader, b.classes[0].class.as_str()),
        (2, "app/Dep")
    );
    assert_eq!(p.counters().instrumented, 4);
    assert_eq!(p.counters().pending_call_sites, 0);
}

#[test]
fn scheme_names_round_trip() {
    for s in [Scheme::Lazy, Scheme::Eager, Scheme::Total] {
        assert_eq!(s.to_string().parse::<Scheme>(), Ok(s));
    }
    assert_eq!(
        "fast".parse::<Scheme>().unwrap_err().to_string(),
        "unknown scheme `fast` (expected lazy, eager or total)"
    );
}

#[test]
fn array_clone_is_not_a_pending_class() {
    let main = ClassModel::new(
        "Main",
        None,
        &[],
        PUBLIC,
        vec![MethodModel::new(
            "run",
            V,
            STATIC,
            vec![CallSite::new(
                CallKind::Virtual,
                "[I",
                "clone",
                "()Ljava/lang/Object;",
            )],
        )],
    );
    let (mut p, _) = loaded(Scheme::Lazy, &["Main::run"], &[main]);
    assert!(p.first_invocation(0).unwrap().is_empty());
    assert_eq!(p.counters().pending_call_sites, 0);
}

#[test]
fn planner_can_live_behind_a_mutex_in_a_static() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Planner>();
}

#[test]
fn abstract_root_stands_for_its_implementations_now_and_later() {
    let mut cfg = config(&["Task::go", "Nowhere::run"], Scheme::Lazy);
    cfg.roots.push("Main::r*".parse().unwrap());
    let mut p = Planner::new(cfg);
    assert_eq!(p.unmatched_roots().len(), 3);
    for c in tasks() {
        p.add_model(BOOTSTRAP, &c);
    }
    assert_eq!(planned(&mut p), ["Main.run", "A.go", "B.go"]);
    let unmatched: Vec<String> = p.unmatched_roots().iter().map(|r| r.to_string()).collect();
    assert_eq!(unmatched, ["Nowhere::run"]);
    p.add_model(BOOTSTRAP, &task_c());
    assert_eq!(planned(&mut p), ["C.go"]);
}

/// `Cold.run` calls `Both.x` where it is certain; on branches it may not take it calls
/// `Err.<init>` and `Log.warn` (one block), `Both.x` again and `A.go` (one target), and
/// `Task.go` (three implementations: a receiver site).
fn cold_classes() -> Vec<ClassModel<'static>> {
    let class = |name: &'static str, methods| {
        ClassModel::new(name, Some("java/lang/Object"), &[], PUBLIC, methods)
    };
    let mut all = tasks();
    all.push(task_c());
    all.extend([
        class(
            "Cold",
            vec![method(
                "run",
                STATIC,
                vec![
                    call(CallKind::Static, "Both", "x"),
                    call(CallKind::Special, "Err", "<init>").deferred(),
                    call(CallKind::Static, "Log", "warn").deferred(),
                    call(CallKind::Static, "Both", "x").deferred(),
                    call(CallKind::Virtual, "A", "go").deferred(),
                    call(CallKind::Interface, "Task", "go").deferred(),
                    call(CallKind::Virtual, "[I", "clone").deferred(),
                ],
            )],
        ),
        class("Err", vec![method("<init>", PUBLIC, vec![])]),
        class("Log", vec![method("warn", STATIC, vec![])]),
        class("Both", vec![method("x", STATIC, vec![])]),
    ]);
    all
}

/// An engine call at the start of basic block `block`.
fn probe_call<'a>(
    invoke: ferrofluid_classfile::Invoke,
    class: &'a str,
    name: &'a str,
    block: u32,
) -> ferrofluid_classfile::CallSite<'a> {
    ferrofluid_classfile::CallSite {
        invoke,
        class,
        name,
        descriptor: V,
        bci: block,
        block,
    }
}

#[test]
fn deferred_calls_share_a_site_per_block_and_wait_until_it_runs() {
    use ferrofluid_classfile::Invoke;
    let (mut p, _) = loaded(Scheme::Lazy, &["Cold::run"], &cold_classes());
    p.set_receiver_sites(true);
    let run = id(&p, "Cold", "run");
    // The engine asks while instrumenting `run`: every call made only where it is deferred gets
    // a site, one per basic block; `Both.x` (also made where it is certain) does not.
    let err = p.deferred_site(run, &probe_call(Invoke::Special, "Err", "<init>", 10));
    let warn = p.deferred_site(run, &probe_call(Invoke::Static, "Log", "warn", 10));
    let go = p.deferred_site(run, &probe_call(Invoke::Virtual, "A", "go", 20));
    assert_eq!((err, warn, go), (Some(0), Some(0), Some(1)));
    assert_eq!(
        p.deferred_site(run, &probe_call(Invoke::Static, "Both", "x", 20)),
        None
    );
    // A virtual call with many targets stays a receiver site (the engine then asks for it).
    let task = probe_call(Invoke::Interface, "Task", "go", 30);
    assert_eq!(p.deferred_site(run, &task), None);
    assert_eq!(p.receiver_site(BOOTSTRAP, &task), Some(2));
    // A method of an array: nothing to reveal, no site.
    let clone = probe_call(Invoke::Virtual, "[I", "clone", 30);
    assert_eq!(p.deferred_site(run, &clone), None);
    assert_eq!(p.receiver_site(BOOTSTRAP, &clone), None);
    // Asked again (the class retransformed): the same ids.
    assert_eq!(
        p.deferred_site(run, &probe_call(Invoke::Static, "Log", "warn", 10)),
        Some(0)
    );
    let b = p.first_invocation(run).unwrap();
    assert_eq!(names(&p, &b), ["Both.x"]);
    // The first block's site reveals both its calls at once.
    let b = p.site_reached(0).unwrap();
    assert_eq!(sorted(names(&p, &b)), ["Err.<init>", "Log.warn"]);
    assert!(p.site_reached(0).unwrap().is_empty());
    let b = p.site_reached(1).unwrap();
    assert_eq!(names(&p, &b), ["A.go"]);
    // The receiver site reached with null (about to throw) chooses nothing.
    assert!(p.site_reached(2).unwrap().is_empty());
    let b = p.receiver_seen(2, BOOTSTRAP, "C").unwrap();
    assert_eq!(names(&p, &b), ["C.go"]);
    let c = p.counters();
    assert_eq!(
        (c.instrumented, c.receiver_sites, c.deferred_sites),
        (6, 3, 2)
    );
    assert_eq!(
        p.site_reached(7).unwrap_err().to_string(),
        SubgraphError::UnknownSite(7).to_string()
    );
}

/// A site before calls that would reveal nothing costs a check on every pass for nothing (in a
/// loop, more than the trivial method it guards), so such calls get none.
#[test]
fn deferred_calls_that_would_reveal_nothing_get_no_site() {
    use ferrofluid_classfile::Invoke;
    let class = |name: &'static str, superclass, methods| {
        ClassModel::new(name, Some(superclass), &[], PUBLIC, methods)
    };
    let object = "java/lang/Object";
    let classes = [
        class(
            "Loop",
            object,
            vec![
                method(
                    "run",
                    STATIC,
                    vec![
                        call(CallKind::Static, "Get", "x").deferred(),
                        call(CallKind::Static, "Loop", "again").deferred(),
                        call(CallKind::Virtual, "Cell", "get").deferred(),
                        call(CallKind::Static, "Lazy", "make").deferred(),
                        call(CallKind::Static, "Work", "y").deferred(),
                    ],
                ),
                method("again", STATIC, vec![]).trivial(),
            ],
        ),
        class("Get", object, vec![method("x", STATIC, vec![]).trivial()]),
        class(
            "Cell",
            object,
            vec![method("get", PUBLIC, vec![]).trivial()],
        ),
        class(
            "Lazy",
            object,
            vec![
                method("make", STATIC, vec![]).trivial(),
                method("<clinit>", STATIC, vec![]),
            ],
        ),
        class("Work", object, vec![method("y", STATIC, vec![])]),
    ];
    let mut p = Planner::new(PlanConfig {
        skip_trivial: true,
        adaptive: false,
        ..config(&["Loop::run", "Loop::again"], Scheme::Lazy)
    });
    for c in &classes {
        assert!(p.add_model(BOOTSTRAP, c));
    }
    p.class_not_initialized(BOOTSTRAP, "Lazy", Initialization::OnCall);
    assert_eq!(sorted(planned(&mut p)), ["Loop.again", "Loop.run"]);
    p.set_receiver_sites(true);
    let run = id(&p, "Loop", "run");
    let mut site =
        |invoke, class, name, block| p.deferred_site(run, &probe_call(invoke, class, name, block));
    assert_eq!(site(Invoke::Static, "Get", "x", 10), None, "trivial");
    assert_eq!(site(Invoke::Static, "Loop", "again", 20), None, "chosen");
    assert_eq!(site(Invoke::Virtual, "Cell", "get", 30), None, "trivial");
    // Calling it initialises `Lazy`, whose initialiser waits to be chosen by such a call.
    assert_eq!(site(Invoke::Static, "Lazy", "make", 40), Some(0));
    assert_eq!(site(Invoke::Static, "Work", "y", 50), Some(1));
    // The virtual call was followed when it got no site: an override loaded later that is
    // worth instrumenting is chosen when its class loads, as for a followed call.
    let sub = class("SubCell", "Cell", vec![method("get", PUBLIC, vec![])]);
    assert!(p.add_model(BOOTSTRAP, &sub));
    assert_eq!(planned(&mut p), ["SubCell.get"]);
    let b = p.site_reached(0).unwrap();
    assert_eq!(names(&p, &b), ["Lazy.<clinit>"]);
}

#[test]
fn a_virtual_call_whose_targets_are_all_decided_is_no_receiver_site() {
    use ferrofluid_classfile::Invoke;
    let task = |name: &'static str, go: MethodModel<'static>| {
        ClassModel::new(name, Some("java/lang/Object"), &["Task"], PUBLIC, vec![go])
    };
    let trivial_go = || method("go", PUBLIC, vec![]).trivial();
    let mut classes = tasks();
    classes.truncate(3); // Object, Task, Main
    classes.extend([
        task("A", trivial_go()),
        task("B", trivial_go()),
        task("C", trivial_go()),
    ]);
    for skip_trivial in [false, true] {
        let mut p = Planner::new(PlanConfig {
            skip_trivial,
            adaptive: false,
            ..config(&["Main::run"], Scheme::Lazy)
        });
        for c in &classes {
            assert!(p.add_model(BOOTSTRAP, c));
        }
        assert_eq!(planned(&mut p), ["Main.run"]);
        p.set_receiver_sites(true);
        let go = probe_call(Invoke::Interface, "Task", "go", 0);
        let site = p.receiver_site(BOOTSTRAP, &go);
        let run = id(&p, "Main", "run");
        if !skip_trivial {
            assert_eq!(site, Some(0));
            continue;
        }
        // Three trivial implementations: a receiver probe would choose nothing. Followed by CHA
        // at the first invocation instead, so a fourth worth instrumenting is chosen as it loads.
        assert_eq!(site, None);
        assert!(p.first_invocation(run).unwrap().is_empty());
        assert!(p.add_model(BOOTSTRAP, &task("D", method("go", PUBLIC, vec![]))));
        assert_eq!(planned(&mut p), ["D.go"]);
        assert_eq!(p.counters().receiver_sites, 0);
    }
}

/// `Main.run` calls `Fn.go`, which one loaded class implements; `Maker` makes lambdas of `Fn`
/// (hidden classes CHA never sees), whose body is `Maker.lambda$0`.
fn lambda_classes(makes_lambdas: bool) -> Vec<ClassModel<'static>> {
    let maker = maker_of_lambda_bodies("Maker");
    vec![
        object(),
        go_interface("Fn"),
        ClassModel::new(
            "Impl",
            Some("java/lang/Object"),
            &["Fn"],
            PUBLIC,
            vec![method("go", PUBLIC, vec![])],
        ),
        if makes_lambdas {
            maker.with_lambda(
                "Fn",
                "go",
                CallSite::new(CallKind::Static, "Maker", "lambda$0", V),
            )
        } else {
            maker
        },
        main_calling_go("Fn"),
    ]
}

#[test]
fn a_call_on_a_lambda_interface_is_a_receiver_site_and_a_hidden_receiver_reveals_its_calls() {
    use ferrofluid_classfile::Invoke;
    let go = probe_call(Invoke::Interface, "Fn", "go", 0);
    // No lambdas of `Fn` anywhere: one implementation, followed by CHA.
    let (mut p, _) = loaded(Scheme::Lazy, &["Main::run"], &lambda_classes(false));
    p.set_receiver_sites(true);
    assert_eq!(p.receiver_site(BOOTSTRAP, &go), None);

    let (mut p, _) = loaded(Scheme::Lazy, &["Main::run"], &lambda_classes(true));
    p.set_receiver_sites(true);
    assert_eq!(p.receiver_site(BOOTSTRAP, &go), Some(0));
    assert_eq!(p.receiver_site_call(0), Some(("go", V)));
    let run = id(&p, "Main", "run");
    assert!(p.first_invocation(run).unwrap().is_empty());
    // A lambda proxy reaches the site: what its `go` calls (the agent reads it from the JVM) is
    // chosen, the lambda body; its own callees wait for its first invocation.
    let proxy_calls = [CallSite::new(CallKind::Static, "Maker", "lambda$0", V)];
    let b = p.hidden_receiver_seen(0, BOOTSTRAP, &proxy_calls).unwrap();
    assert_eq!(names(&p, &b), ["Maker.lambda$0"]);
    assert!(p
        .hidden_receiver_seen(0, BOOTSTRAP, &proxy_calls)
        .unwrap()
        .is_empty());
    // An ordinary receiver still chooses the method its class runs.
    let b = p.receiver_seen(0, BOOTSTRAP, "Impl").unwrap();
    assert_eq!(names(&p, &b), ["Impl.go"]);
    assert_eq!(
        p.hidden_receiver_seen(9, BOOTSTRAP, &proxy_calls)
            .unwrap_err()
            .to_string(),
        SubgraphError::UnknownSite(9).to_string()
    );
    assert_eq!(p.receiver_site_call(9), None);
}

/// `name`, with a lambda body `lambda$0` that calls `h`.
fn maker_of_lambda_bodies(name: &'static str) -> ClassModel<'static> {
    ClassModel::new(
        name,
        Some("java/lang/Object"),
        &[],
        PUBLIC,
        vec![
            method(
                "lambda$0",
                PRIVATE | STATIC,
                vec![call(CallKind::Static, name, "h")],
            ),
            method("h", STATIC, vec![]),
        ],
    )
}

/// `name` makes a lambda of `interface` whose `go` runs `name.lambda$0`, which calls `h`.
fn lambda_maker(name: &'static str, interface: &'static str) -> ClassModel<'static> {
    maker_of_lambda_bodies(name).with_lambda(
        interface,
        "go",
        CallSite::new(CallKind::Static, name, "lambda$0", V),
    )
}

#[test]
fn under_eager_an_interface_call_reaches_the_lambdas_made_of_it_anywhere() {
    let sub = ClassModel::new(
        "SubFn",
        None,
        &["Fn"],
        PUBLIC | INTERFACE | ABSTRACT,
        vec![],
    );
    let classes = [
        object(),
        go_interface("Fn"),
        sub,
        go_interface("Other"),
        lambda_maker("Maker", "Fn"),
        lambda_maker("SubMaker", "SubFn"),
        lambda_maker("OtherMaker", "Other"),
        main_calling_go("Fn"),
    ];
    // No code in the closure makes these lambdas; the call on `Fn.go` reaches them anyway,
    // those of its subinterface too, not those of an interface never called.
    let (mut p, b) = loaded(Scheme::Eager, &["Main::run"], &classes);
    assert_eq!(
        sorted(names(&p, &b)),
        [
            "Main.run",
            "Maker.h",
            "Maker.lambda$0",
            "SubMaker.h",
            "SubMaker.lambda$0"
        ]
    );
    // A class loaded later making a lambda of `Fn`, of its subinterface, of `Other`.
    for (maker, interface) in [
        ("Later", "Fn"),
        ("SubLater", "SubFn"),
        ("OtherLater", "Other"),
    ] {
        assert!(p.add_model(BOOTSTRAP, &lambda_maker(maker, interface)));
    }
    let b = p.plan();
    assert_eq!(
        sorted(names(&p, &b)),
        [
            "Later.h",
            "Later.lambda$0",
            "SubLater.h",
            "SubLater.lambda$0"
        ]
    );
    // Under `lazy` the call is a receiver site: the hidden class is seen when it reaches it.
    let (p, b) = loaded(Scheme::Lazy, &["Main::run"], &classes);
    assert_eq!(names(&p, &b), ["Main.run"]);
}

#[test]
fn a_method_handle_invocation_is_a_handle_site() {
    use ferrofluid_classfile::Invoke;
    let mh = "java/lang/invoke/MethodHandle";
    let calls = ["invokeExact", "invoke", "bindTo"]
        .map(|name| CallSite::new(CallKind::Virtual, mh, name, "(I)I"))
        .to_vec();
    let main = class(
        "Main",
        "java/lang/Object",
        vec![method("run", STATIC, calls)],
    );
    let (mut p, _) = loaded(Scheme::Lazy, &["Main::run"], &[object(), main]);
    p.set_receiver_sites(true);
    let call = |name| ferrofluid_classfile::CallSite {
        descriptor: "(I)I",
        ..probe_call(Invoke::Virtual, mh, name, 0)
    };
    // `MethodHandle` is not even loaded here: what runs is the handle's business. (`bindTo`
    // names a class not loaded: an ordinary receiver site.)
    let exact = p.receiver_site(BOOTSTRAP, &call("invokeExact")).unwrap();
    let invoke = p.receiver_site(BOOTSTRAP, &call("invoke")).unwrap();
    assert!(p.is_handle_site(exact) && p.is_handle_site(invoke));
    assert_eq!(p.receiver_site(BOOTSTRAP, &call("bindTo")), Some(2));
    assert!(!p.is_handle_site(2) && !p.is_handle_site(3));
}

#[test]
fn deferred_sites_are_lazy_only() {
    for scheme in [Scheme::Eager, Scheme::Total] {
        let (mut p, _) = loaded(scheme, &["Cold::run"], &cold_classes());
        p.set_receiver_sites(true);
        let run = id(&p, "Cold", "run");
        let warn = probe_call(ferrofluid_classfile::Invoke::Static, "Log", "warn", 10);
        assert_eq!(p.deferred_site(run, &warn), None, "{scheme}");
        assert!(p.method(id(&p, "Log", "warn")).is_some(), "{scheme}");
    }
}

#[test]
fn deferred_calls_without_a_site_are_followed_at_first_invocation() {
    // Sites off (eager, total, or an agent that cannot tag): Scheme B takes every callee.
    let (mut p, _) = loaded(Scheme::Lazy, &["Cold::run"], &cold_classes());
    p.set_receiver_sites(false);
    let run = id(&p, "Cold", "run");
    assert_eq!(
        p.deferred_site(
            run,
            &probe_call(ferrofluid_classfile::Invoke::Static, "Log", "warn", 10)
        ),
        None
    );
    let b = p.first_invocation(run).unwrap();
    let all = ["A.go", "B.go", "Both.x", "C.go", "Err.<init>", "Log.warn"];
    assert_eq!(sorted(names(&p, &b)), all);
    // Sites on, but the engine never asked about the deferred calls (it could not place a
    // probe): followed too, so nothing runs uninstrumented.
    let (mut p, _) = loaded(Scheme::Lazy, &["Cold::run"], &cold_classes());
    p.set_receiver_sites(true);
    let b = p.first_invocation(id(&p, "Cold", "run")).unwrap();
    assert_eq!(sorted(names(&p, &b)), all);
}

/// `Table`'s static initialiser calls `fill`, which calls `sq`: no call site names `<clinit>`.
fn table() -> ClassModel<'static> {
    ClassModel::new(
        "Table",
        Some("java/lang/Object"),
        &[],
        PUBLIC,
        vec![
            method(
                "<clinit>",
                STATIC,
                vec![call(CallKind::Static, "Table", "fill")],
            ),
            method("fill", STATIC, vec![call(CallKind::Static, "Table", "sq")]),
            method("sq", STATIC, vec![]),
        ],
    )
}

#[test]
fn a_class_not_initialized_yet_has_its_static_initializer_chosen() {
    use Initialization::Now;
    let (mut p, b) = loaded(Scheme::Lazy, &["Fig4::f"], &[object(), fig4(), table()]);
    assert_eq!(names(&p, &b), ["Fig4.f"]);
    let b = p.class_not_initialized(BOOTSTRAP, "Table", Now);
    assert_eq!(names(&p, &b), ["Table.<clinit>"]);
    // Its callees follow at its first invocation, as any chosen method's (and `sq`, which
    // certainly runs with `fill`: look-ahead).
    let b = p.first_invocation(id(&p, "Table", "<clinit>")).unwrap();
    assert_eq!(sorted(names(&p, &b)), ["Table.fill", "Table.sq"]);
    // Again, or for a class without one or not registered: nothing.
    assert!(p.class_not_initialized(BOOTSTRAP, "Table", Now).is_empty());
    assert!(p.class_not_initialized(BOOTSTRAP, "Fig4", Now).is_empty());
    assert!(p
        .class_not_initialized(BOOTSTRAP, "Nowhere", Now)
        .is_empty());
    // Eager takes the closure at once; total has chosen it already.
    let (mut p, _) = loaded(Scheme::Eager, &["Fig4::f"], &[object(), fig4(), table()]);
    let b = p.class_not_initialized(BOOTSTRAP, "Table", Now);
    assert_eq!(
        sorted(names(&p, &b)),
        ["Table.<clinit>", "Table.fill", "Table.sq"]
    );
    let (mut p, _) = loaded(Scheme::Total, &["Fig4::f"], &[object(), fig4(), table()]);
    assert!(p.class_not_initialized(BOOTSTRAP, "Table", Now).is_empty());
}

#[test]
fn a_class_loaded_before_and_not_initialized_gets_its_initializer_when_a_call_would_run_it() {
    use Initialization::OnCall;
    // `Main.run` calls the static `Sub.make` (declared in Sub) and `new Other()`; Sub extends
    // Table, so running make initialises both. `Lone` is never called.
    let main = class(
        "Main",
        "java/lang/Object",
        vec![method(
            "run",
            STATIC,
            vec![
                call(CallKind::Static, "Sub", "make"),
                call(CallKind::Special, "Other", "<init>"),
            ],
        )],
    );
    let clinit = || method("<clinit>", STATIC, vec![]);
    let sub = class(
        "Sub",
        "Table",
        vec![clinit(), method("make", STATIC, vec![])],
    );
    let other = class(
        "Other",
        "java/lang/Object",
        vec![clinit(), method("<init>", PUBLIC, vec![])],
    );
    let lone = class("Lone", "java/lang/Object", vec![clinit()]);
    let (mut p, b) = loaded(
        Scheme::Lazy,
        &["Main::run"],
        &[object(), table(), main, sub, other, lone],
    );
    assert_eq!(names(&p, &b), ["Main.run"]);
    for class in ["Table", "Sub", "Other", "Lone"] {
        assert!(p.class_not_initialized(BOOTSTRAP, class, OnCall).is_empty());
    }
    let b = p.first_invocation(id(&p, "Main", "run")).unwrap();
    assert_eq!(
        sorted(names(&p, &b)),
        [
            "Other.<clinit>",
            "Other.<init>",
            "Sub.<clinit>",
            "Sub.make",
            "Table.<clinit>"
        ]
    );
    assert_eq!(p.counters().instrumented, 6, "not Lone.<clinit>");
}

#[test]
fn a_class_initialized_by_name_gets_its_initializer_and_its_superclasses() {
    use Initialization::OnCall;
    let clinit = || method("<clinit>", STATIC, vec![]);
    let sub = class("Sub", "Table", vec![clinit()]);
    let lone = class("Lone", "java/lang/Object", vec![clinit()]);
    let (mut p, _) = loaded(
        Scheme::Lazy,
        &["Fig4::f"],
        &[object(), fig4(), table(), sub, lone],
    );
    for class in ["Table", "Sub", "Lone"] {
        assert!(p.class_not_initialized(BOOTSTRAP, class, OnCall).is_empty());
    }
    let b = p.initializing_by_name("Sub");
    assert_eq!(sorted(names(&p, &b)), ["Sub.<clinit>", "Table.<clinit>"]);
    // Again, or a name no class has: nothing.
    assert!(p.initializing_by_name("Sub").is_empty());
    assert!(p.initializing_by_name("Nowhere").is_empty());
    // Of another loader too: the name is all reflection's gateway sees.
    let mut p = Planner::new(config(&["Fig4::f"], Scheme::Lazy));
    assert!(p.add_model(BOOTSTRAP, &object()));
    assert!(p.add_model(7, &class("Lone", "java/lang/Object", vec![clinit()])));
    p.plan();
    assert!(p.class_not_initialized(7, "Lone", OnCall).is_empty());
    let b = p.initializing_by_name("Lone");
    assert_eq!(names(&p, &b), ["Lone.<clinit>"]);
}

/// Static field accesses: `Reader.run` reads fields named with `Holder` (twice) and `Sub`, and
/// calls `a`, which writes one of `Store`; `plain` reads one of `Plain`. Each class's initialiser
/// is run by the JVM at such an access (`Holder`'s calls `compute`); `Sub` extends `Table`.
fn field_classes() -> Vec<ClassModel<'static>> {
    let clinit = |calls| method("<clinit>", STATIC, calls);
    let obj = "java/lang/Object";
    vec![
        object(),
        table(),
        class(
            "Reader",
            obj,
            vec![
                method("run", STATIC, vec![call(CallKind::Static, "Reader", "a")])
                    .with_static_fields(&["Holder", "Sub", "Holder"]),
                method("a", STATIC, vec![]).with_static_fields(&["Store"]),
                method("plain", STATIC, vec![]).with_static_fields(&["Plain"]),
            ],
        ),
        class(
            "Holder",
            obj,
            vec![
                clinit(vec![call(CallKind::Static, "Holder", "compute")]),
                method("compute", STATIC, vec![]),
            ],
        ),
        class("Store", obj, vec![clinit(vec![])]),
        class("Sub", "Table", vec![clinit(vec![])]),
        class("Plain", obj, vec![clinit(vec![])]),
    ]
}

#[test]
fn a_static_field_access_initializes_a_class_loaded_before_and_not_initialized() {
    use Initialization::OnCall;
    let (mut p, b) = loaded(
        Scheme::Lazy,
        &["Reader::run", "Reader::plain"],
        &field_classes(),
    );
    assert_eq!(names(&p, &b), ["Reader.run", "Reader.plain"]);
    // Plain is not reported: initialised already.
    for class in ["Holder", "Store", "Sub", "Table"] {
        assert!(p.class_not_initialized(BOOTSTRAP, class, OnCall).is_empty());
    }
    // `run`'s accesses, and `a`'s, which certainly runs with it (look-ahead); `Sub`'s superclass
    // is initialised with it.
    let b = p.first_invocation(id(&p, "Reader", "run")).unwrap();
    assert_eq!(
        sorted(names(&p, &b)),
        [
            "Holder.<clinit>",
            "Reader.a",
            "Store.<clinit>",
            "Sub.<clinit>",
            "Table.<clinit>"
        ]
    );
    assert!(p
        .first_invocation(id(&p, "Reader", "a"))
        .unwrap()
        .is_empty());
    // An initialiser's callees follow at its first invocation, as any chosen method's.
    let b = p.first_invocation(id(&p, "Holder", "<clinit>")).unwrap();
    assert_eq!(names(&p, &b), ["Holder.compute"]);
    // A class not reported gets nothing.
    assert!(p
        .first_invocation(id(&p, "Reader", "plain"))
        .unwrap()
        .is_empty());
    assert_eq!(p.counters().instrumented, 8, "not Plain.<clinit>");
}

#[test]
fn a_static_field_access_of_a_class_loaded_later_initializes_it_and_its_superclass() {
    use Initialization::OnCall;
    // Eager takes `run`'s closure when Reader loads, before the classes it accesses, which load
    // later outside every root: Sub before its superclass Table, whose load hook runs after Sub's.
    let classes = field_classes();
    let model = |name: &str| classes.iter().find(|c| c.name == name).unwrap();
    let mut p = Planner::new(config(&["Reader::run"], Scheme::Eager));
    for class in ["java/lang/Object", "Reader"] {
        p.add_model(BOOTSTRAP, model(class));
    }
    assert_eq!(sorted(planned(&mut p)), ["Reader.a", "Reader.run"]);
    // Each class reported before it is planned, as the agent does.
    let mut load = |class| {
        assert!(p.add_model(BOOTSTRAP, model(class)));
        let b = p.class_not_initialized(BOOTSTRAP, class, OnCall);
        let mut chosen = names(&p, &b);
        chosen.extend(planned(&mut p));
        sorted(chosen)
    };
    assert_eq!(load("Holder"), ["Holder.<clinit>", "Holder.compute"]);
    assert_eq!(load("Store"), ["Store.<clinit>"]);
    assert_eq!(load("Sub"), ["Sub.<clinit>"]);
    assert_eq!(load("Table"), ["Table.<clinit>", "Table.fill", "Table.sq"]);
    assert!(
        load("Plain").is_empty(),
        "only `plain`, not chosen, names it"
    );
    // Lazy: `run` revealed before Holder loads.
    let mut p = Planner::new(config(&["Reader::run"], Scheme::Lazy));
    for class in ["java/lang/Object", "Reader", "Store"] {
        p.add_model(BOOTSTRAP, model(class));
    }
    planned(&mut p);
    let b = p.first_invocation(id(&p, "Reader", "run")).unwrap();
    assert_eq!(names(&p, &b), ["Reader.a"], "Store is initialised");
    p.add_model(BOOTSTRAP, model("Holder"));
    let b = p.class_not_initialized(BOOTSTRAP, "Holder", OnCall);
    assert!(b.is_empty());
    assert_eq!(planned(&mut p), ["Holder.<clinit>"]);
}

#[test]
fn static_field_reads_and_writes_in_class_files_initialize_their_classes() {
    use Initialization::OnCall;
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("Access.java");
    std::fs::write(
        &src,
        "class Access {\n\
         static int own = 3;\n\
         static void get() { own = Holder.VALUE; }\n\
         static void put() { Store.count = own; }\n\
         }\n\
         class Holder { static int VALUE = compute(); static int compute() { return 1; } }\n\
         class Store { static int count; static { count = 2; } }\n",
    )
    .unwrap();
    ferrofluid_testkit::javac(
        std::path::Path::new(ferrofluid_testkit::JDK17_HOME),
        &[],
        dir.path(),
        [&src],
    );
    let bytes = |class: &str| std::fs::read(dir.path().join(format!("{class}.class"))).unwrap();
    // Accesses to the class's own fields are left out.
    let access = bytes("Access");
    let model = ClassModel::parse(&access).unwrap();
    let fields = |name: &str| {
        let m = model.methods.iter().find(|m| m.name == name).unwrap();
        m.static_fields
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(fields("get"), ["Holder"]);
    assert_eq!(fields("put"), ["Store"]);
    assert!(fields("<clinit>").is_empty());
    let mut p = Planner::new(config(&["Access::get", "Access::put"], Scheme::Lazy));
    for class in ["Access", "Holder", "Store"] {
        assert!(p.add_class(BOOTSTRAP, &bytes(class)).unwrap());
    }
    assert_eq!(planned(&mut p), ["Access.get", "Access.put"]);
    // Access too, to show its own fields are not followed (it is initialised when its code runs).
    for class in ["Access", "Holder", "Store"] {
        assert!(p.class_not_initialized(BOOTSTRAP, class, OnCall).is_empty());
    }
    let b = p.first_invocation(id(&p, "Access", "get")).unwrap();
    assert_eq!(names(&p, &b), ["Holder.<clinit>"]);
    let b = p.first_invocation(id(&p, "Access", "put")).unwrap();
    assert_eq!(names(&p, &b), ["Store.<clinit>"]);
}

/// `Ahead.r` certainly calls `a` (which certainly calls `b`, which certainly calls `c` and, on a
/// branch, `Log.warn`) and `Task.go` (two implementations), and on a branch `d` (which certainly
/// calls `z`).
fn ahead_classes() -> Vec<ClassModel<'static>> {
    let s = |name| call(CallKind::Static, "Ahead", name);
    let mut all = tasks();
    all.extend([
        class(
            "Ahead",
            "java/lang/Object",
            vec![
                method(
                    "r",
                    STATIC,
                    vec![
                        s("a"),
                        call(CallKind::Interface, "Task", "go"),
                        s("d").deferred(),
                    ],
                ),
                method("a", STATIC, vec![s("b")]),
                method(
                    "b",
                    STATIC,
                    vec![s("c"), call(CallKind::Static, "Log", "warn").deferred()],
                ),
                method("c", STATIC, vec![]),
                method("d", STATIC, vec![s("z")]),
                method("z", STATIC, vec![]),
            ],
        ),
        class(
            "Log",
            "java/lang/Object",
            vec![method("warn", STATIC, vec![])],
        ),
    ]);
    all
}

#[test]
fn a_first_invocation_reveals_what_certainly_runs_with_it_in_one_batch() {
    use ferrofluid_classfile::Invoke;
    let (mut p, _) = loaded(Scheme::Lazy, &["Ahead::r"], &ahead_classes());
    p.set_receiver_sites(true);
    let r = id(&p, "Ahead", "r");
    // The engine, instrumenting `r`, makes the call of `d` a deferred site.
    let d_site = p.deferred_site(r, &probe_call(Invoke::Static, "Ahead", "d", 10));
    assert_eq!(d_site, Some(0));
    // `a`, and `b` and `c` behind it: each the one target of a certain call. `Task.go` has two
    // implementations, both chosen, but the walk stops there (B.go's callee waits); `b`'s call
    // on a branch waits for its site.
    let b = p.first_invocation(r).unwrap();
    assert_eq!(
        sorted(names(&p, &b)),
        ["A.go", "Ahead.a", "Ahead.b", "Ahead.c", "B.go"]
    );
    let warn = p.deferred_site(
        id(&p, "Ahead", "b"),
        &probe_call(Invoke::Static, "Log", "warn", 10),
    );
    assert_eq!(warn, Some(1));
    // Their own first invocations then reveal nothing: no retransformation.
    for m in ["a", "b", "c"] {
        assert!(p.first_invocation(id(&p, "Ahead", m)).unwrap().is_empty());
    }
    // B.go was not looked ahead: its first invocation reveals its callee as Scheme B does
    // (`Later` is not loaded: nothing to instrument yet, the call waits for the class).
    assert!(p.first_invocation(id(&p, "B", "go")).unwrap().is_empty());
    assert_eq!(p.counters().pending_call_sites, 1);
    // A deferred site reached: `d`, and `z`, which certainly runs with it.
    let b = p.site_reached(0).unwrap();
    assert_eq!(sorted(names(&p, &b)), ["Ahead.d", "Ahead.z"]);
    let b = p.site_reached(1).unwrap();
    assert_eq!(names(&p, &b), ["Log.warn"]);
    assert_eq!(p.counters().instrumented, 9);
}

/// `Loader.load` (virtual), overridden by `AppLoader`; `Main.run` calls nothing.
fn loaders() -> Vec<ClassModel<'static>> {
    vec![
        object(),
        class(
            "Loader",
            "java/lang/Object",
            vec![method("load", PUBLIC, vec![])],
        ),
        class("AppLoader", "Loader", vec![method("load", PUBLIC, vec![])]),
        class(
            "Main",
            "java/lang/Object",
            vec![method("run", STATIC, vec![])],
        ),
    ]
}

#[test]
fn an_upcall_takes_every_implementation_now_and_later() {
    let (mut p, b) = loaded(Scheme::Lazy, &["Main::run"], &loaders());
    assert_eq!(names(&p, &b), ["Main.run"]);
    let b = p.follow_upcall(&call(CallKind::Virtual, "Loader", "load"));
    assert_eq!(sorted(names(&p, &b)), ["AppLoader.load", "Loader.load"]);
    assert!(p
        .follow_upcall(&call(CallKind::Virtual, "Loader", "load"))
        .is_empty());
    // A loader class loaded later overrides it too.
    assert!(p.add_model(
        BOOTSTRAP,
        &class(
            "LateLoader",
            "AppLoader",
            vec![method("load", PUBLIC, vec![])]
        )
    ));
    assert_eq!(planned(&mut p), ["LateLoader.load"]);
}

/// `Natives.link` (static), which the JVM calls; `Natives.helper` (static) it calls.
fn natives() -> ClassModel<'static> {
    class(
        "Natives",
        "java/lang/Object",
        vec![
            method(
                "link",
                STATIC,
                vec![call(CallKind::Static, "Natives", "helper")],
            ),
            method("helper", STATIC, vec![]),
        ],
    )
}

#[test]
fn a_static_upcall_takes_its_method_and_reveals_its_callees_when_it_runs() {
    let (mut p, _) = loaded(
        Scheme::Lazy,
        &["Main::run"],
        &[object(), loaders()[3].clone()],
    );
    let link = call(CallKind::Static, "Natives", "link");
    // Not loaded yet: followed when it loads.
    assert!(p.follow_upcall(&link).is_empty());
    assert!(p.add_model(BOOTSTRAP, &natives()));
    assert_eq!(planned(&mut p), ["Natives.link"]);
    assert!(p.follow_upcall(&link).is_empty());
    let b = p.first_invocation(id(&p, "Natives", "link")).unwrap();
    assert_eq!(names(&p, &b), ["Natives.helper"]);
}

#[test]
fn an_upcall_of_a_class_not_loaded_yet_waits_for_it() {
    let all = loaders();
    let (mut p, _) = loaded(
        Scheme::Lazy,
        &["Main::run"],
        &[all[0].clone(), all[3].clone()],
    );
    assert!(p
        .follow_upcall(&call(CallKind::Virtual, "Loader", "load"))
        .is_empty());
    assert!(p.add_model(BOOTSTRAP, &all[1]));
    assert_eq!(planned(&mut p), ["Loader.load"]);
    assert!(p.add_model(BOOTSTRAP, &all[2]));
    assert_eq!(planned(&mut p), ["AppLoader.load"]);
}

#[test]
fn an_upcall_into_excluded_classes_chooses_nothing() {
    let mut cfg = config(&["Main::run"], Scheme::Lazy);
    cfg.filter.exclude.push("*Loader".parse().unwrap());
    let mut p = Planner::new(cfg);
    for c in loaders() {
        assert!(p.add_model(BOOTSTRAP, &c));
    }
    assert_eq!(planned(&mut p), ["Main.run"]);
    assert!(p
        .follow_upcall(&call(CallKind::Virtual, "Loader", "load"))
        .is_empty());
}

/// Attaching registers the loaded classes in no particular order: a class may be planned before
/// the superclass it inherits a method from. A deferred call of that inherited method then gets
/// its site (CHA, blind to the superclass, would find no target and call it nothing to reveal),
/// and reaching the site chooses the inherited method.
#[test]
fn a_deferred_call_of_a_method_inherited_from_a_superclass_not_registered_yet_keeps_its_site() {
    use ferrofluid_classfile::Invoke;
    let server = ClassModel::new(
        "Server",
        Some("Base"),
        &[],
        PUBLIC,
        vec![method(
            "run",
            STATIC,
            vec![call(CallKind::Virtual, "Server", "go").deferred()],
        )],
    );
    let base = ClassModel::new(
        "Base",
        Some("java/lang/Object"),
        &[],
        PUBLIC,
        vec![method("go", PUBLIC, vec![])],
    );
    let (mut p, b) = loaded(Scheme::Lazy, &["Server::run"], &[object(), server]);
    assert_eq!(names(&p, &b), ["Server.run"]);
    p.set_receiver_sites(true);
    let run = id(&p, "Server", "run");
    let go = probe_call(Invoke::Virtual, "Server", "go", 10);
    assert_eq!(p.deferred_site(run, &go), Some(0));
    assert!(p.add_model(BOOTSTRAP, &base));
    assert!(planned(&mut p).is_empty());
    let b = p.site_reached(0).unwrap();
    assert_eq!(names(&p, &b), ["Base.go"]);
}
