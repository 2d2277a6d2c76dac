//! Which methods `ClassModel::parse` marks trivial, on javac's output for each shape.

mod common;

use ferrofluid_subgraph::ClassModel;

#[test]
fn accessor_sized_straight_line_code_that_calls_nothing_is_trivial() {
    let bytes = common::class_file("trivial", "Trivial");
    let class = ClassModel::parse(&bytes).unwrap();
    let marked = |trivial: bool| -> Vec<&str> {
        let mut names: Vec<&str> = class
            .methods
            .iter()
            .filter(|m| m.trivial == trivial)
            .map(|m| m.name.as_ref())
            .collect();
        names.sort_unstable();
        names
    };
    // `lambda$lambda$0` is the empty body of `lambda`'s lambda.
    assert_eq!(
        marked(true),
        [
            "at",
            "bump",
            "empty",
            "getX",
            "isString",
            "lambda$lambda$0",
            "len",
            "max",
            "name",
            "pick",
            "setX"
        ]
    );
    assert_eq!(
        marked(false),
        [
            "<init>", "alloc", "array", "big", "call", "cls", "fail", "lambda", "locked", "loop",
            "monitor", "out"
        ]
    );
}
