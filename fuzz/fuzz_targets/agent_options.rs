//! The agent option string (`-agentpath:…=OPTIONS`, or the `load` command of an attach), as a
//! user types it: parsing never panics, and an accepted string prints in its canonical form,
//! which parses back to the same options.
#![no_main]

use libfuzzer_sys::fuzz_target;

use ferrofluid_protocol::AgentOptions;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(options) = text.parse::<AgentOptions>() {
        let canonical = options.to_string();
        let again: AgentOptions = canonical
            .parse()
            .unwrap_or_else(|e| panic!("{canonical:?} does not parse back: {e}"));
        assert_eq!(again, options, "{canonical:?}");
    }
});
