//! Compiles the variadic JNI wrappers (C: stable Rust cannot define C-variadic functions).

fn main() {
    println!("cargo:rerun-if-changed=csrc/jni_variadic.c");
    cc::Build::new()
        .file("csrc/jni_variadic.c")
        .warnings(true)
        .compile("ferrofluid_jni_variadic");
}
