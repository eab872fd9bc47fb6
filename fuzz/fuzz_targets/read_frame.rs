//! Arbitrary bytes into `read_frame`, as a hostile peer would send them. It must never panic,
//! and whatever it accepts must survive encode → decode unchanged (and encode canonically).

#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use proto::{read_frame, write_frame};

fuzz_target!(|data: &[u8]| {
    let mut r = Cursor::new(data);
    // Read every frame in the input, as a role serving one connection would.
    while let Ok(env) = read_frame(&mut r) {
        let mut out = Vec::new();
        write_frame(&mut out, &env).expect("a decoded envelope must encode");
        let back = read_frame(&mut Cursor::new(&out)).expect("an encoded envelope must decode");
        assert_eq!(back, env, "encode → decode changed the value");
        let mut again = Vec::new();
        write_frame(&mut again, &back).expect("re-encode");
        assert_eq!(again, out, "encoding is not canonical");
    }
});
