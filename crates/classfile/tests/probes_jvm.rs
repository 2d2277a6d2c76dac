//! Every probe applied to a real program, run by a real JVM under `-Xverify:all`:
//! the output must not change and the hooks must see exact counts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use ferrofluid_classfile::{
    instrument, CallSite, Invoke, MethodSite, ProbeKind, ProbeOptions, Selection,
};
use ferrofluid_testkit::{fresh_dir, java_home};

fn java_bin(tool: &str) -> PathBuf {
    let p = java_home().join("bin").join(tool);
    assert!(
        p.exists(),
        "{} not found: install openjdk-17-jdk-headless or set JAVA_HOME",
        p.display()
    );
    p
}

fn work_dir(name: &str) -> PathBuf {
    fresh_dir(
        Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("probes_jvm")
            .join(name),
    )
}

/// Compiles `tests/java/SOURCES` into `out`.
fn javac(out: &Path, sources: &[&str]) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java");
    ferrofluid_testkit::javac(&java_home(), &[], out, sources.iter().map(|s| src.join(s)));
}

/// Hands out method and allocation-site ids and remembers what they name.
#[derive(Default)]
struct Ids {
    methods: HashMap<String, u32>,
    sites: Vec<(u32, String)>, // site id -> (method id, type)
    /// The allocated types whose sites get probes (`None`: all).
    wanted: Option<Vec<&'static str>>,
}

impl Selection for Ids {
    fn method_id(&mut self, m: &MethodSite<'_>) -> Option<u32> {
        let id = self.methods.len() as u32 + 1;
        Some(
            *self
                .methods
                .entry(format!("{}{}", m.name, m.descriptor))
                .or_insert(id),
        )
    }
    fn alloc_site_id(&mut self, method_id: u32, _bci: u32, type_name: &str) -> u32 {
        self.sites.push((method_id, type_name.to_owned()));
        self.sites.len() as u32
    }
    fn wants_alloc_of(&mut self, type_name: &str) -> bool {
        self.wanted.as_ref().is_none_or(|w| w.contains(&type_name))
    }
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts {
    enter: u64,
    exit: u64,
    unwind: u64,
    blocks: u64,
    alloc: u64,
    native_enter: u64,
    native_exit: u64,
}

struct Run {
    stdout: String,
    by_id: HashMap<u32, Counts>,
    ids: Ids,
}

impl Run {
    fn method(&self, name_desc: &str) -> Counts {
        let id = self.ids.methods[name_desc];
        self.by_id.get(&id).copied().unwrap_or_default()
    }

    /// Allocation counts of every site in `method` creating `type_name`.
    fn allocs(&self, method: &str, type_name: &str) -> Vec<u64> {
        let mid = self.ids.methods[method];
        (1..=self.ids.sites.len() as u32)
            .filter(|&s| self.ids.sites[s as usize - 1] == (mid, type_name.to_owned()))
            .map(|s| self.by_id.get(&s).map_or(0, |c| c.alloc))
            .collect()
    }
}

fn run_probe(kind: ProbeKind) -> Run {
    run_probe_with(kind, kind.name(), Ids::default())
}

fn run_probe_with(kind: ProbeKind, name: &str, ids: Ids) -> Run {
    run_options(ProbeOptions::new(kind), name, ids)
}

fn run_options(options: ProbeOptions, name: &str, mut ids: Ids) -> Run {
    let kind = options.kind;
    let dir = work_dir(name);
    let (orig, patched, hooks) = (dir.join("orig"), dir.join("patched"), dir.join("hooks"));
    javac(&orig, &["ProbeTarget.java"]);
    javac(&hooks, &["ferrofluid/Hooks.java"]);
    std::fs::create_dir_all(&patched).unwrap();
    let bytes = std::fs::read(orig.join("ProbeTarget.class")).unwrap();
    let out = instrument(&bytes, &options, &mut ids).unwrap();
    for m in &out.methods {
        if let Err(reason) = &m.result {
            let expected = match kind {
                ProbeKind::Native => matches!(reason, ferrofluid_classfile::SkipReason::NotNative),
                ProbeKind::Alloc if m.name != "nat" => {
                    matches!(reason, ferrofluid_classfile::SkipReason::NothingToDo)
                }
                _ => m.name == "nat" && matches!(reason, ferrofluid_classfile::SkipReason::Native),
            };
            assert!(expected, "{}{} skipped: {reason}", m.name, m.descriptor);
        }
    }
    std::fs::write(
        patched.join("ProbeTarget.class"),
        out.bytes.expect("something was patched"),
    )
    .unwrap();
    let cp = format!("{}:{}", patched.display(), hooks.display());
    let o = Command::new(java_bin("java"))
        .args(["-Xverify:all", "-Xshare:off", "-cp", &cp, "ProbeTarget"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "instrumented program failed:\n{stderr}");
    let mut by_id = HashMap::new();
    for line in stderr.lines().filter_map(|l| l.strip_prefix("HOOK ")) {
        let v: Vec<u64> = line.split(' ').map(|x| x.parse().unwrap()).collect();
        let c = Counts {
            enter: v[1],
            exit: v[2],
            unwind: v[3],
            blocks: v[4],
            alloc: v[5],
            native_enter: v[6],
            native_exit: v[7],
        };
        by_id.insert(v[0] as u32, c);
    }
    Run {
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        by_id,
        ids,
    }
}

const CHECKSUM: &str = "checksum 36404\n";

#[test]
fn entry_exit_counts_every_call_and_unwind_exactly() {
    let r = run_probe(ProbeKind::EntryExit);
    assert_eq!(r.stdout, CHECKSUM);
    let c = |m: &str| r.method(m);
    // JP Fig. 4 shape.
    assert_eq!((c("f()V").enter, c("f()V").exit), (1, 1));
    assert_eq!((c("g(I)V").enter, c("g(I)V").exit), (10, 10));
    assert_eq!((c("h()V").enter, c("h()V").exit), (65, 65));
    // Exceptions through 6 frames, 100 times; caught inside tc; main still exits normally.
    assert_eq!(
        (
            c("thrower(I)V").enter,
            c("thrower(I)V").exit,
            c("thrower(I)V").unwind
        ),
        (600, 0, 600)
    );
    assert_eq!(
        (c("tc(I)I").enter, c("tc(I)I").exit, c("tc(I)I").unwind),
        (100, 100, 0)
    );
    assert_eq!(
        (
            c("npe(Ljava/lang/Object;)V").enter,
            c("npe(Ljava/lang/Object;)V").unwind
        ),
        (1, 1)
    );
    assert_eq!(
        (
            c("main([Ljava/lang/String;)V").enter,
            c("main([Ljava/lang/String;)V").exit
        ),
        (1, 1)
    );
    // Constructors, including this(...) with a conditional argument.
    assert_eq!((c("<init>(I)V").enter, c("<init>(I)V").exit), (250, 250));
    assert_eq!(c("<init>(ILjava/lang/String;)V").exit, 250);
    assert_eq!(c("<init>()V").exit, 150);
    assert_eq!(c("sync(I)I").exit, 100);
    assert_eq!(
        c("lambda$lambdas$0(Ljava/lang/Integer;)Ljava/lang/Integer;").exit,
        100
    );
    for (name, &id) in &r.ids.methods {
        let k = r.by_id.get(&id).copied().unwrap_or_default();
        assert_eq!(
            k.enter,
            k.exit + k.unwind,
            "{name}: every entry has one exit"
        );
    }
}

#[test]
fn block_counters_count_executed_bytecodes() {
    let default = run_probe(ProbeKind::Blocks);
    let precise = run_probe(ProbeKind::BlocksPrecise);
    for r in [&default, &precise] {
        assert_eq!(r.stdout, CHECKSUM);
        // 4 + 3(n+1) + 6n + 2 = 9n + 9 bytecodes for n = 10.
        assert_eq!(r.method("sum(I)I").blocks, 99);
        assert_eq!(r.method("h()V").blocks, 65);
        // g(i) runs 6i + 6 bytecodes: sum over i = 1..10.
        assert_eq!(r.method("g(I)V").blocks, 390);
        assert_eq!(r.method("f()V").blocks, 2 + 11 * 3 + 10 * 5 + 1);
        assert_eq!(r.method("thrower(I)V").unwind, 600);
    }
    // The NullPointerException ends the block early: Default counts all 7, Precise the 4 executed.
    assert_eq!(default.method("npe(Ljava/lang/Object;)V").blocks, 7);
    assert_eq!(precise.method("npe(Ljava/lang/Object;)V").blocks, 4);
}

/// With `blocks_context` each frame keeps the entry hook's result and what `savedContext` made
/// of it in two locals, and every exit, normal or by an exception, hands both back (the test
/// hooks check them); the counts are the plain probes' (calls only with `entry-exit`, whose
/// exits pass 0 bytecodes). `-Xverify:all` checks the frames that carry the new locals.
#[test]
fn probes_pass_the_entry_context_to_every_exit() {
    for kind in [
        ProbeKind::EntryExit,
        ProbeKind::Blocks,
        ProbeKind::BlocksPrecise,
    ] {
        let mut options = ProbeOptions::new(kind);
        options.hooks.blocks_context = true;
        let r = run_options(options, &format!("{}-context", kind.name()), Ids::default());
        let plain = run_probe(kind);
        assert_eq!(r.stdout, CHECKSUM);
        let g_blocks = if kind == ProbeKind::EntryExit { 0 } else { 390 };
        assert_eq!(r.method("g(I)V").blocks, g_blocks);
        assert_eq!(r.method("thrower(I)V").unwind, 600);
        let mut got: Vec<_> = r
            .by_id
            .iter()
            .map(|(id, c)| (*id, c.enter, c.exit, c.unwind, c.blocks))
            .collect();
        let mut want: Vec<_> = plain
            .by_id
            .iter()
            .map(|(id, c)| (*id, c.enter, c.exit, c.unwind, c.blocks))
            .collect();
        got.sort();
        want.sort();
        assert_eq!(got, want, "{}", kind.name());
    }
}

/// Hands out [`Ids`]'s ids and takes every method for a leaf.
#[derive(Default)]
struct Leaves(Ids);

impl Selection for Leaves {
    fn method_id(&mut self, m: &MethodSite<'_>) -> Option<u32> {
        self.0.method_id(m)
    }
    fn leaf(&mut self, _method_id: u32, _m: &MethodSite<'_>) -> bool {
        true
    }
}

/// With `blocks_context`, a method the selection takes for a leaf gets the entry's
/// `leafContext` call alone (`leafBlocks` with its bytecodes under block counting) when it calls
/// nothing and, counting, is one basic block: its exits, normal or not, call nothing. Other
/// methods get the full context probes. Entries and bytecodes count as with the plain probes.
#[test]
fn leaves_that_call_nothing_get_the_entry_probe_alone() {
    // Calling nothing; under block counting one basic block too.
    let calls_nothing = [
        "h()V",
        "sum(I)I",
        "loopAtZero(I)I",
        "sw(I)I",
        "lsw(I)I",
        "sync(I)I",
        "longs(JD[I)J",
        "multi()[[I",
    ];
    for (kind, leaf) in [
        (ProbeKind::EntryExit, &calls_nothing[..]),
        (ProbeKind::Blocks, &["h()V", "sync(I)I", "multi()[[I"][..]),
        (ProbeKind::BlocksPrecise, &["h()V", "sync(I)I"][..]),
    ] {
        let mut options = ProbeOptions::new(kind);
        options.hooks.blocks_context = true;
        let dir = work_dir(&format!("leaves-{}", kind.name()));
        let (orig, patched, hooks) = (dir.join("orig"), dir.join("patched"), dir.join("hooks"));
        javac(&orig, &["ProbeTarget.java"]);
        javac(&hooks, &["ferrofluid/Hooks.java"]);
        std::fs::create_dir_all(&patched).unwrap();
        let bytes = std::fs::read(orig.join("ProbeTarget.class")).unwrap();
        let mut leaves = Leaves::default();
        let out = instrument(&bytes, &options, &mut leaves).unwrap();
        std::fs::write(patched.join("ProbeTarget.class"), out.bytes.unwrap()).unwrap();
        let cp = format!("{}:{}", patched.display(), hooks.display());
        let o = Command::new(java_bin("java"))
            .args(["-Xverify:all", "-Xshare:off", "-cp", &cp, "ProbeTarget"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "instrumented program failed:\n{stderr}");
        assert_eq!(String::from_utf8_lossy(&o.stdout), CHECKSUM);
        // (enter, exit + unwind, bytecodes) per id.
        let counts: HashMap<u32, (u64, u64, u64)> = stderr
            .lines()
            .filter_map(|l| l.strip_prefix("HOOK "))
            .map(|l| {
                let v: Vec<u64> = l.split(' ').map(|x| x.parse().unwrap()).collect();
                (v[0] as u32, (v[1], v[2] + v[3], v[4]))
            })
            .collect();
        let plain = run_probe(kind);
        let ids = &leaves.0.methods;
        for (name, &id) in ids {
            let p = plain.method(name);
            let got = counts.get(&id).copied().unwrap_or_default();
            let exits = if leaf.contains(&name.as_str()) {
                0
            } else {
                p.exit + p.unwind
            };
            assert_eq!(got, (p.enter, exits, p.blocks), "{} {name}", kind.name());
        }
        // `h` is one `return`: one bytecode a call, when counting.
        let h_bytecodes = if kind == ProbeKind::EntryExit { 0 } else { 65 };
        assert_eq!(
            counts[&ids["h()V"]],
            (65, 0, h_bytecodes),
            "{}",
            kind.name()
        );
    }
}

#[test]
fn alloc_reports_each_object_once_initialised() {
    let r = run_probe(ProbeKind::Alloc);
    assert_eq!(r.stdout, CHECKSUM);
    let main = "main([Ljava/lang/String;)V";
    assert_eq!(r.allocs(main, "ProbeTarget"), vec![100, 100]);
    assert_eq!(r.allocs(main, "[I"), vec![100]);
    assert_eq!(r.allocs("multi()[[I", "[[I"), vec![100]);
    assert_eq!(
        r.allocs("tern(Z)Ljava/lang/String;", "[Ljava/lang/Object;"),
        vec![100]
    );
    assert_eq!(
        r.allocs("tern(Z)Ljava/lang/String;", "ProbeTarget"),
        vec![50, 50]
    );
    assert_eq!(
        r.allocs("tern(Z)Ljava/lang/String;", "java/lang/StringBuilder"),
        vec![100]
    );
    assert_eq!(
        r.allocs("thrower(I)V", "java/lang/RuntimeException"),
        vec![100]
    );
    assert_eq!(
        r.allocs("tc(I)I", "java/lang/IllegalStateException"),
        vec![50]
    );
    assert_eq!(r.allocs("twr()I", "java/io/StringReader"), vec![100]);
}

/// Sites whose allocated type the selection refuses get no probe at all (no site id is asked
/// for them) and a method left with none is not patched; the others count exactly as before.
#[test]
fn alloc_sites_of_unwanted_types_get_no_probe() {
    let ids = Ids {
        wanted: Some(vec!["[I", "java/lang/StringBuilder"]),
        ..Ids::default()
    };
    let r = run_probe_with(ProbeKind::Alloc, "alloc-narrowed", ids);
    assert_eq!(r.stdout, CHECKSUM);
    let mut types: Vec<&str> = r.ids.sites.iter().map(|(_, t)| t.as_str()).collect();
    types.sort_unstable();
    types.dedup();
    assert_eq!(types, ["[I", "java/lang/StringBuilder"]);
    assert_eq!(r.allocs("main([Ljava/lang/String;)V", "[I"), vec![100]);
    assert_eq!(
        r.allocs("tern(Z)Ljava/lang/String;", "java/lang/StringBuilder"),
        vec![100]
    );
    // Not probed: no site, and no hook call reached the counters.
    assert_eq!(r.allocs("multi()[[I", "[[I"), Vec::<u64>::new());
    assert_eq!(
        r.allocs("main([Ljava/lang/String;)V", "ProbeTarget"),
        Vec::<u64>::new()
    );
    let counted: u64 = r.by_id.values().map(|c| c.alloc).sum();
    assert_eq!(counted, 200);
}

#[test]
fn native_wrapper_calls_hooks_around_the_renamed_method() {
    let r = run_probe(ProbeKind::Native);
    // Without an agent setting the prefix the renamed native cannot link, exactly as the
    // original could not: the program still sees UnsatisfiedLinkError, and both hooks ran.
    assert_eq!(r.stdout, CHECKSUM);
    let n = r.method("nat(I)I");
    assert_eq!((n.native_enter, n.native_exit), (1, 1));
}

/// A method whose branches span ~27 KB: block counters push them past 32 KB, so the
/// editor must widen `goto` to `goto_w` and invert conditionals around a `goto_w`,
/// deriving a frame for the new fall-through target.
#[test]
fn jumps_that_overflow_16_bits_are_widened() {
    let dir = work_dir("widen");
    let mut src = String::from(
        "public class Big {\n static int big(int a, String s) {\n int x = 0;\n for (int i = 0; i < a; i++) {\n if (a > i) {\n",
    );
    for k in 1..3900 {
        src.push_str(&format!("  x += a / {};\n", k % 97 + 1));
    }
    src.push_str(" } else { x += s.length(); }\n }\n return x;\n }\n");
    src.push_str(" public static void main(String[] a) { System.out.println(big(7, \"abc\") + \" \" + big(0, \"q\")); }\n}\n");
    let java = dir.join("Big.java");
    std::fs::write(&java, src).unwrap();
    let (orig, patched, hooks) = (dir.join("orig"), dir.join("patched"), dir.join("hooks"));
    ferrofluid_testkit::javac(&java_home(), &[], &orig, [&java]);
    javac(&hooks, &["ferrofluid/Hooks.java"]);
    let bytes = std::fs::read(orig.join("Big.class")).unwrap();
    for kind in [
        ProbeKind::BlocksPrecise,
        ProbeKind::Blocks,
        ProbeKind::EntryExit,
    ] {
        let mut ids = Ids::default();
        let out = instrument(&bytes, &ProbeOptions::new(kind), &mut ids).unwrap();
        assert!(
            out.methods.iter().all(|m| m.result.is_ok()),
            "{kind}: {:?}",
            out.methods
        );
        let new = out.bytes.unwrap();
        std::fs::create_dir_all(&patched).unwrap();
        std::fs::write(patched.join("Big.class"), &new).unwrap();
        let cp = format!("{}:{}", patched.display(), hooks.display());
        let o = Command::new(java_bin("java"))
            .args(["-Xverify:all", "-cp", &cp, "Big"])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{kind}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&o.stdout), "4543 0\n", "{kind}");
        if kind == ProbeKind::BlocksPrecise {
            let javap = Command::new(java_bin("javap"))
                .args(["-c", "-cp"])
                .arg(&patched)
                .arg("Big")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&javap.stdout);
            assert!(
                text.matches("goto_w").count() >= 3,
                "expected widened jumps:\n{}",
                &text[..2000.min(text.len())]
            );
            assert!(
                text.contains("if_icmplt"),
                "the loop test should have been inverted"
            );
        }
    }
}

/// Gives every offered call site its own id and remembers it as `method bci name descriptor`.
#[derive(Default)]
struct Sites {
    ids: Ids,
    sites: Vec<String>,
}

impl Selection for Sites {
    fn method_id(&mut self, m: &MethodSite<'_>) -> Option<u32> {
        self.ids.method_id(m)
    }
    fn wants_receiver_sites(&self) -> bool {
        true
    }
    fn receiver_site(&mut self, method_id: u32, call: &CallSite<'_>) -> Option<u32> {
        let kind = if call.invoke == Invoke::Interface {
            "interface"
        } else {
            "virtual"
        };
        self.sites.push(format!(
            "{method_id} {kind} {}.{}{}",
            call.class, call.name, call.descriptor
        ));
        Some(self.sites.len() as u32)
    }
    fn entry_site(&mut self, _method_id: u32, m: &MethodSite<'_>) -> Option<u32> {
        (m.name == "mix").then_some(ENTRY_SITE)
    }
}

/// The site id `Sites` gives `this` at the entry of every `mix`.
const ENTRY_SITE: u32 = 1000;

/// Receiver probes copy the receiver from under 0 to 6 argument slots (shuffled on the stack up
/// to 2, set aside in new locals beyond), also at branch targets and for a null receiver, pass
/// `this` at entry where asked, and leave the program's behaviour unchanged.
#[test]
fn receiver_sites_pass_each_receiver_to_the_hook() {
    let dir = work_dir("receivers");
    let (orig, patched, hooks) = (dir.join("orig"), dir.join("patched"), dir.join("hooks"));
    javac(&orig, &["Receivers.java"]);
    javac(&hooks, &["ferrofluid/Hooks.java"]);
    std::fs::create_dir_all(&patched).unwrap();
    let mut sites = Sites::default();
    for entry in std::fs::read_dir(&orig).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let out = instrument(&bytes, &ProbeOptions::new(ProbeKind::EntryExit), &mut sites).unwrap();
        // Only the interface's abstract method is left alone.
        let skipped: Vec<_> = out.methods.iter().filter(|m| m.result.is_err()).collect();
        assert!(
            skipped
                .iter()
                .all(|m| m.name == "area"
                    && m.result == Err(ferrofluid_classfile::SkipReason::Abstract)),
            "{skipped:?}"
        );
        let new = out.bytes.unwrap_or(bytes);
        std::fs::write(patched.join(path.file_name().unwrap()), new).unwrap();
    }
    let cp = format!("{}:{}", patched.display(), hooks.display());
    let o = Command::new(java_bin("java"))
        .args(["-Xverify:all", "-Xshare:off", "-cp", &cp, "Receivers"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "receivers 320\n");
    let calls = sites.ids.methods["calls([Ljava/lang/Object;[LReceivers$Shape;)I"];
    let site = |what: &str| -> u32 {
        let want = format!("{calls} {what}");
        1 + sites
            .sites
            .iter()
            .position(|s| *s == want)
            .unwrap_or_else(|| panic!("no site {want} in {:#?}", sites.sites)) as u32
    };
    let mut seen: Vec<String> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("RECV "))
        .map(str::to_owned)
        .collect();
    seen.sort();
    let hash = site("virtual java/lang/Object.hashCode()I");
    let area = site("interface Receivers$Shape.area(I)I");
    let long = site("virtual java/lang/StringBuilder.append(J)Ljava/lang/StringBuilder;");
    let add2 = site("interface java/util/List.add(ILjava/lang/Object;)V");
    let set = site("interface java/util/List.set(ILjava/lang/Object;)Ljava/lang/Object;");
    let to_string = site("virtual java/lang/Object.toString()Ljava/lang/String;");
    let mix = site("interface Receivers$Shape.mix(JDLjava/lang/String;I)I");
    let chars = site("virtual java/lang/StringBuilder.append([CII)Ljava/lang/StringBuilder;");
    let mut expected = vec![
        format!("{hash} java.lang.Integer 5"),
        format!("{hash} java.lang.Long 5"),
        format!("{hash} java.lang.String 5"),
        format!("{long} java.lang.StringBuilder 5"),
        format!("{add2} java.util.ArrayList 5"),
        format!("{set} java.util.ArrayList 5"),
        format!("{to_string} null 5"),
        format!("{mix} Receivers$Square 10"),
        format!("{mix} Receivers$Tri 5"),
        format!("{chars} java.lang.StringBuilder 5"),
        format!("{ENTRY_SITE} Receivers$Square 10"),
        format!("{ENTRY_SITE} Receivers$Tri 5"),
    ];
    // Two area sites (one per branch of the conditional), 3 shapes per call.
    let areas: Vec<&String> = seen
        .iter()
        .filter(|s| s.starts_with(&format!("{area} ")))
        .collect();
    assert_eq!(areas, [&format!("{area} Receivers$Square 10")]);
    expected.push(format!("{} Receivers$Tri 5", area + 1));
    for e in &expected {
        assert!(seen.contains(e), "missing {e} in {seen:#?}");
    }
}

/// Gives every offered deferred call the id of its (method, block), from 100, and remembers it
/// as `method kind class.name`; no receiver sites.
#[derive(Default)]
struct DeferredOnly {
    ids: Ids,
    sites: Vec<String>,
    blocks: Vec<(u32, u32)>,
}

impl Selection for DeferredOnly {
    fn method_id(&mut self, m: &MethodSite<'_>) -> Option<u32> {
        self.ids.method_id(m)
    }
    fn wants_receiver_sites(&self) -> bool {
        true
    }
    fn deferred_site(&mut self, method_id: u32, call: &CallSite<'_>) -> Option<u32> {
        let method = self
            .ids
            .methods
            .iter()
            .find(|(_, &id)| id == method_id)
            .map(|(name, _)| name.split('(').next().unwrap_or_default().to_owned())
            .unwrap_or_default();
        self.sites.push(format!(
            "{method} {:?} {}.{}",
            call.invoke, call.class, call.name
        ));
        let key = (method_id, call.block);
        let index = match self.blocks.iter().position(|&b| b == key) {
            Some(i) => i,
            None => {
                self.blocks.push(key);
                self.blocks.len() - 1
            }
        };
        Some(100 + index as u32)
    }
}

/// Calls an invocation may not make (on the way to a throw, at a handler's head, in a loop, on
/// one branch) of every dispatch get a probe passing the site id to `Hooks.site`, one per basic
/// block before its first deferred call; calls on the entry line or after every path joins get
/// none; the program's behaviour is unchanged under `-Xverify:all`.
#[test]
fn deferred_sites_call_the_site_hook_once_per_block_before_the_calls() {
    let dir = work_dir("deferred");
    let (orig, patched, hooks) = (dir.join("orig"), dir.join("patched"), dir.join("hooks"));
    javac(&orig, &["ColdSites.java"]);
    javac(&hooks, &["ferrofluid/Hooks.java"]);
    std::fs::create_dir_all(&patched).unwrap();
    let mut deferred = DeferredOnly::default();
    let bytes = std::fs::read(orig.join("ColdSites.class")).unwrap();
    let out = instrument(
        &bytes,
        &ProbeOptions::new(ProbeKind::EntryExit),
        &mut deferred,
    )
    .unwrap();
    assert!(out.methods.iter().all(|m| m.result.is_ok()));
    std::fs::write(patched.join("ColdSites.class"), out.bytes.unwrap()).unwrap();
    assert_eq!(
        deferred.sites,
        [
            "check Static ColdSites.describe",
            "check Special java/lang/IllegalStateException.<init>",
            "guarded Virtual java/lang/IllegalStateException.getMessage",
            "guarded Virtual java/lang/Object.hashCode",
            "guarded Static ColdSites.note",
            "main Static java/lang/Integer.valueOf",
            "main Static ColdSites.guarded",
        ]
    );
    let cp = format!("{}:{}", patched.display(), hooks.display());
    let o = Command::new(java_bin("java"))
        .args(["-Xverify:all", "-Xshare:off", "-cp", &cp, "ColdSites"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "cold 23 4 38\n");
    let seen: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("RECV "))
        .collect();
    // check's throw (i = 0, 3, 6, 9), the handler, main's odd branch, the loop body; not
    // main's println after the loop, which every invocation that returns runs.
    assert_eq!(
        seen,
        ["100 null 4", "101 null 4", "102 null 5", "103 null 10"]
    );
}

/// Runs `program` (a test source using `ferrofluid.Hooks`) against the generated hooks class
/// (natives unbound) under `-Xverify:all`, interpreted and compiled; returns its output in each.
fn run_against_generated_hooks(name: &str, program: &str) -> Vec<String> {
    let dir = work_dir(name);
    let hooks = dir.join("hooks");
    let class = hooks.join("ferrofluid/Hooks.class");
    std::fs::create_dir_all(class.parent().unwrap()).unwrap();
    let bytes = ferrofluid_classfile::hooks_class(&ferrofluid_classfile::Hooks::default());
    std::fs::write(&class, bytes).unwrap();
    let classes = dir.join("program");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/java/{program}.java"));
    ferrofluid_testkit::javac(
        &java_home(),
        &["-cp", hooks.to_str().unwrap()],
        &classes,
        [src],
    );
    let cp = format!("{}:{}", classes.display(), hooks.display());
    ["-Xint", "-Xmixed"]
        .iter()
        .map(|mode| {
            let o = Command::new(java_bin("java"))
                .args(["-Xverify:all", "-Xshare:off", mode, "-cp", &cp, program])
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "{mode}: {stderr}");
            String::from_utf8_lossy(&o.stdout).into_owned()
        })
        .collect()
}

/// The generated hooks class (`hooks_class`) passes `-Xverify:all`, and the Java body of
/// `site(int)` returns at once when `active` is 0 or `fired[site]` is set, and calls the native
/// `receiver` otherwise (null array, unset flag, index beyond the array), interpreted and
/// compiled alike.
#[test]
fn the_generated_site_hook_verifies_and_checks_its_flags_in_java() {
    for out in run_against_generated_hooks("site_hook", "SiteHook") {
        assert_eq!(out, "java native java native native native java\n");
    }
}

/// The Java bodies of `enter`, `exit` and `unwind` return at once while `active` is 0 unless the
/// id is negative (a root or region, passed as `~id`), and inside a root when the method's
/// probes were dropped (`dropped[id]`: 1 ends `enter` in Java, 2 every probe), and call the
/// natives otherwise, interpreted and compiled alike.
#[test]
fn the_generated_entry_exit_hooks_return_in_java_outside_roots_and_when_dropped() {
    let outside = "java native java java native native native";
    let enter = format!("{outside} / java java native native native native");
    let exit = format!("{outside} / native java native native native native");
    let expected = format!("{enter} | {exit} | {exit}\n");
    for out in run_against_generated_hooks("gate_hook", "GateHook") {
        assert_eq!(out, expected);
    }
}

/// The Java bodies of `exitBlocks` and `unwindBlocks` return at once while `active` is 0 unless
/// the id is negative (a root, passed as `~id`), and call their natives `exitBlocks0` and
/// `unwindBlocks0` otherwise, interpreted and compiled alike.
#[test]
fn the_generated_block_exit_hooks_return_in_java_outside_roots() {
    let one = "java native java java native / native native native";
    let expected = format!("{one} | {one}\n");
    for out in run_against_generated_hooks("blocks_gate_hook", "BlocksGateHook") {
        assert_eq!(out, expected);
    }
}
