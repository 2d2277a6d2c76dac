//! Frames on the agent's control socket, as the agent reads a request and the CLI a response
//! (a local peer, but not one to trust blindly): reading never panics, whatever the bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

use ferrofluid_protocol::control::{read_frame, Request, Response};

fuzz_target!(|data: &[u8]| {
    let _ = read_frame::<_, Request>(&mut &data[..]);
    let _ = read_frame::<_, Response>(&mut &data[..]);
});
