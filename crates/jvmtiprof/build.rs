//! Compiles the stack-walk guard (C: `sigsetjmp`/`siglongjmp` must not jump over Rust frames).

fn main() {
    println!("cargo:rerun-if-changed=csrc/walk_guard.c");
    cc::Build::new()
        .file("csrc/walk_guard.c")
        .warnings(true)
        .extra_warnings(true)
        .compile("jvmtiprof_walk_guard");
}
