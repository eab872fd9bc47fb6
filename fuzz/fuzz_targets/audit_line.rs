//! The audit log's readers, on bytes from outside the process: `audit verify` reads a log
//! anyone who can write the state directory may have edited, and checkpoints from witness
//! files and the command line. Neither may panic; what they take must be what they write.
#![no_main]

use gate::anchor::{Checkpoint, PublicKey, from_text};
use gate::audit::Record;
use libfuzzer_sys::fuzz_target;

/// A fixed key: the signature check runs on whatever parsed (it must answer, not panic).
const KEY: &str = "4266994c338b7d642146cbf26610993fa96420a13599e38e46996cff594f5993";

fuzz_target!(|data: &[u8]| {
    // One audit record line (without its `\n`).
    if let Ok(record) = Record::parse_line(data) {
        let line = record.to_line().expect("a parsed record encodes");
        assert_eq!(
            line.strip_suffix(b"\n"),
            Some(data),
            "parse_line took a non-canonical line"
        );
        let _ = record.computed_hash();
    }
    // A witness file's text: checkpoints, one a line.
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(given) = from_text(text, "fuzz")
    {
        let key = PublicKey::from_hex(KEY).expect("the fixed key");
        for g in given {
            let again = Checkpoint::parse(&g.checkpoint.to_line()).expect("its own line parses");
            assert_eq!(again, g.checkpoint);
            let _ = key.signed(&g.checkpoint);
        }
    }
});
