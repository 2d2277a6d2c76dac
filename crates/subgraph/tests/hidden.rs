//! What the planner needs for lambdas made outside a root (docs/subgraph.md, "Lambdas and
//! method handles made outside a root"): the lambdas a class makes and their interfaces, and the calls
//! of a method read from its bytecode and constant pool alone, as JVMTI gives them for a hidden
//! class.

mod common;

use ferrofluid_classfile::attributes::Code;
use ferrofluid_classfile::ClassFile;
use ferrofluid_subgraph::model::calls_in_code;
use ferrofluid_subgraph::{CallKind, CallSite, ClassModel};

fn compiled() -> Vec<u8> {
    common::class_file("hidden", "Makes")
}

#[test]
fn a_class_lists_its_lambdas_and_their_interfaces_once_each() {
    let bytes = compiled();
    let class = ClassModel::parse(&bytes).unwrap();
    let mut interfaces = class.lambda_interfaces();
    interfaces.sort_unstable();
    assert_eq!(
        interfaces,
        ["java/lang/Runnable", "java/util/function/IntUnaryOperator"]
    );
    // Each lambda: the interface method its hidden class implements, and what that runs.
    let mut lambdas: Vec<_> = class
        .lambdas
        .iter()
        .map(|l| {
            let t = &l.target;
            (
                format!("{}.{}", l.interface, l.method),
                format!("{:?} {}.{}{}", t.kind, t.class, t.name, t.descriptor),
            )
        })
        .collect();
    lambdas.sort_unstable();
    let expected = [
        ("java/lang/Runnable.run", "Static Makes.lambda$static$0()V"),
        ("java/lang/Runnable.run", "Static Makes.lambda$static$1()V"),
        (
            "java/util/function/IntUnaryOperator.applyAsInt",
            "Static Makes.twice(I)I",
        ),
    ]
    .map(|(a, b)| (a.to_owned(), b.to_owned()));
    assert_eq!(lambdas, expected);
}

#[test]
fn calls_read_from_a_standalone_pool_match_the_class_files() {
    let bytes = compiled();
    let file = ClassFile::parse(&bytes).unwrap();
    let cp = &file.constant_pool;
    // The pool as JVMTI's GetConstantPool gives it: the count, then the entries.
    let pool = &bytes[8..cp.end_offset()];
    let method = file
        .methods
        .iter()
        .find(|m| m.name(cp).unwrap() == "call")
        .unwrap();
    let code = Code::parse(method.attribute(cp, "Code").unwrap(), cp).unwrap();
    let calls = calls_in_code(pool, code.code).unwrap();
    assert_eq!(
        calls,
        [
            CallSite::new(CallKind::Interface, "java/lang/Runnable", "run", "()V"),
            CallSite::new(
                CallKind::Static,
                "java/lang/String",
                "valueOf",
                "(Ljava/lang/Object;)Ljava/lang/String;"
            ),
            CallSite::new(CallKind::Virtual, "java/lang/String", "length", "()I"),
            CallSite::new(CallKind::Special, "Makes", "<init>", "()V"),
            CallSite::new(CallKind::Virtual, "java/lang/Object", "hashCode", "()I"),
        ]
    );
    // A cut pool or body is an error, not a panic.
    assert!(calls_in_code(&pool[..pool.len() / 2], code.code).is_err());
    // `aload_1` then the five bytes of `invokeinterface`, cut after its opcode and one more.
    assert!(calls_in_code(pool, &code.code[..3]).is_err());
}
