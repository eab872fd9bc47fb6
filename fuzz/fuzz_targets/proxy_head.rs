//! Arbitrary bytes as a box would send them to the egress proxy: a request head, the first
//! request inside a tunnel, a TLS client hello. Nothing may panic; a head the proxy accepts
//! ends where `scan` says it does, and the head it forwards to the origin is itself one head
//! (CRLF lines only, ending where it ends) that reads the same inside a tunnel to its host.

#![no_main]

use libfuzzer_sys::fuzz_target;
use runner::egress::{http, tls};

fuzz_target!(|data: &[u8]| {
    let _ = tls::client_hello(data);
    let _ = http::parse_in_tunnel(data, &config::Host::Name("a.test".into()), 80, "a.test");
    let Ok(head) = http::parse(data) else {
        return;
    };
    assert_eq!(http::scan(data, 0), http::Scan::End(data.len()));
    if let http::Kind::Forward { head: out, body } = &head.kind {
        assert_eq!(http::scan(out, 0), http::Scan::End(out.len()), "forwarded head");
        if let Ok(host) = config::egress::classify_host(&head.host) {
            let again = http::parse_in_tunnel(out, &host, head.port, &head.host)
                .expect("a forwarded head reads the same in a tunnel to its host");
            assert_eq!(again.1, *body);
        }
    }
});
