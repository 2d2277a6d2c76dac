//! A saved JSON profile, as `ferrofluid report` reads it (any file a user passes): reading
//! never panics, and an accepted profile renders in every report format.
#![no_main]

use libfuzzer_sys::fuzz_target;

use ferrofluid_profile::Profile;
use ferrofluid_report::Format;

fuzz_target!(|data: &[u8]| {
    let Ok(profile) = Profile::from_json_slice(data) else {
        return;
    };
    for format in Format::ALL {
        let mut out = Vec::new();
        format.writer().write(&profile, &mut out).unwrap();
    }
});
