//! Reading a hidden class's method from what JVMTI gives (`ferrofluid_subgraph::model::
//! calls_in_code`: a standalone constant pool and a method's bytecode), which the agent does when
//! a lambda proxy reaches a receiver site: any input must give calls or an error, never a panic.
//! The input is split at a 2-byte big-endian length: the pool, then the code. Starts from an
//! empty corpus.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((len, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let len = usize::from(u16::from_be_bytes(*len)).min(rest.len());
    let (pool, code) = rest.split_at(len);
    if let Ok(calls) = ferrofluid_subgraph::model::calls_in_code(pool, code) {
        assert_eq!(
            ferrofluid_subgraph::model::calls_in_code(pool, code).ok(),
            Some(calls)
        );
    }
});
