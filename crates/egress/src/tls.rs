//! The first bytes of a TLS tunnel: the client's hello (RFC 8446 §4.1.2, the same in TLS 1.2,
//! RFC 5246 §7.4.1.2), read only for the server it names (RFC 6066 `server_name`, SNI) and
//! whether it hides that name (Encrypted Client Hello). Pure functions over bytes; no I/O.
//! Every length is checked against what holds it; anything else is a refusal, so what the
//! proxy checked is what the server reads (the bytes are forwarded as they came).

/// The longest client hello the proxy reads (a hello with post-quantum key shares is about
/// 2 KiB).
pub const MAX_HELLO: usize = 16 * 1024;

/// The bytes of TLS records that may stand before the hello is whole.
pub const MAX_RECORDS: usize = MAX_HELLO + 2048;

/// What a client hello says about where it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// Its `server_name` (a DNS name as sent), if it has one.
    pub server_name: Option<String>,
    /// It carries `encrypted_client_hello` (the name it goes to is inside, encrypted).
    pub ech: bool,
}

/// `server_name` (RFC 6066 §3).
const SERVER_NAME: u16 = 0;
/// `encrypted_client_hello` (RFC 9849).
const ECH: u16 = 0xfe0d;

/// The client hello at the start of `buf` (TLS records of type handshake): `Ok(None)` while
/// more bytes are needed, or why these bytes are not one.
pub fn client_hello(buf: &[u8]) -> Result<Option<Hello>, String> {
    let mut handshake: Vec<u8> = Vec::new();
    let mut at = 0;
    loop {
        let Some(header) = buf.get(at..at + 5) else {
            return Ok(None);
        };
        if header[0] != 22 || header[1] != 3 {
            return Err(
                "the tunnel's first bytes are neither TLS records nor an HTTP request".into(),
            );
        }
        let len = usize::from(u16::from_be_bytes([header[3], header[4]]));
        if len == 0 || len > 16 * 1024 {
            return Err("a TLS record before the hello has a bad length".into());
        }
        let Some(fragment) = buf.get(at + 5..at + 5 + len) else {
            return Ok(None);
        };
        handshake.extend_from_slice(fragment);
        at += 5 + len;
        if handshake.len() < 4 {
            continue;
        }
        if handshake[0] != 1 {
            return Err("the tunnel's first TLS message is not a client hello".into());
        }
        let want = usize::from(handshake[1]) << 16
            | usize::from(handshake[2]) << 8
            | usize::from(handshake[3]);
        if want > MAX_HELLO {
            return Err(format!("the TLS client hello is over {MAX_HELLO} bytes"));
        }
        if handshake.len() < 4 + want {
            continue;
        }
        if handshake.len() > 4 + want {
            return Err("other handshake bytes follow the client hello in its record".into());
        }
        return hello(&handshake[4..]).map(Some);
    }
}

/// A reader over a hello's bytes that refuses to read past them.
struct Bytes<'a>(&'a [u8]);

const SHORT: &str = "the TLS client hello is malformed (a length runs past its end)";

impl<'a> Bytes<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.0.len() {
            return Err(SHORT.into());
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, String> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    /// A vector with a one-byte length.
    fn vec8(&mut self) -> Result<&'a [u8], String> {
        let n = usize::from(self.u8()?);
        self.take(n)
    }

    /// A vector with a two-byte length.
    fn vec16(&mut self) -> Result<&'a [u8], String> {
        let n = usize::from(self.u16()?);
        self.take(n)
    }

    fn done(&self) -> bool {
        self.0.is_empty()
    }
}

/// A `ClientHello` body.
fn hello(body: &[u8]) -> Result<Hello, String> {
    let mut r = Bytes(body);
    let _legacy_version = r.u16()?;
    r.take(32)?;
    if r.vec8()?.len() > 32 {
        return Err("the TLS client hello's session id is over 32 bytes".into());
    }
    let suites = r.vec16()?;
    if suites.is_empty() || suites.len() % 2 != 0 {
        return Err("the TLS client hello's cipher suites are malformed".into());
    }
    if r.vec8()?.is_empty() {
        return Err("the TLS client hello offers no compression method".into());
    }
    let mut out = Hello {
        server_name: None,
        ech: false,
    };
    if r.done() {
        return Ok(out);
    }
    let mut exts = Bytes(r.vec16()?);
    if !r.done() {
        return Err("bytes follow the TLS client hello's extensions".into());
    }
    let mut seen: Vec<u16> = Vec::new();
    while !exts.done() {
        let kind = exts.u16()?;
        let data = exts.vec16()?;
        if seen.contains(&kind) {
            return Err(format!(
                "the TLS client hello has extension {kind} twice (RFC 8446 §4.2)"
            ));
        }
        seen.push(kind);
        match kind {
            SERVER_NAME => out.server_name = Some(server_name(data)?),
            ECH => out.ech = true,
            _ => {}
        }
    }
    Ok(out)
}

/// `server_name`'s one `host_name`.
fn server_name(data: &[u8]) -> Result<String, String> {
    let mut r = Bytes(data);
    let mut list = Bytes(r.vec16()?);
    if !r.done() {
        return Err(SHORT.into());
    }
    let name_type = list.u8()?;
    let name = list.vec16()?;
    if name_type != 0 || !list.done() {
        return Err("the TLS client hello's server_name is not one host name".into());
    }
    if name.is_empty() || !name.iter().all(u8::is_ascii_graphic) {
        return Err("the TLS client hello's server name is not an ASCII host name".into());
    }
    Ok(String::from_utf8_lossy(name).into_owned())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A client hello as one record: `sni` as its server name, `extra` more extensions
    /// (type, data).
    pub(crate) fn hello_record(sni: Option<&str>, extra: &[(u16, &[u8])]) -> Vec<u8> {
        let mut exts = Vec::new();
        let mut ext = |kind: u16, data: &[u8]| {
            exts.extend_from_slice(&kind.to_be_bytes());
            exts.extend_from_slice(&(data.len() as u16).to_be_bytes());
            exts.extend_from_slice(data);
        };
        if let Some(name) = sni {
            let mut data = Vec::new();
            data.extend_from_slice(&((name.len() + 3) as u16).to_be_bytes());
            data.push(0);
            data.extend_from_slice(&(name.len() as u16).to_be_bytes());
            data.extend_from_slice(name.as_bytes());
            ext(SERVER_NAME, &data);
        }
        for (k, d) in extra {
            ext(*k, d);
        }
        let mut body = vec![3, 3];
        body.extend_from_slice(&[7; 32]);
        body.push(0);
        body.extend_from_slice(&[0, 2, 0x13, 0x01]);
        body.extend_from_slice(&[1, 0]);
        body.extend_from_slice(&(exts.len() as u16).to_be_bytes());
        body.extend_from_slice(&exts);
        let mut hs = vec![1];
        hs.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
        hs.extend_from_slice(&body);
        let mut rec = vec![22, 3, 1];
        rec.extend_from_slice(&(hs.len() as u16).to_be_bytes());
        rec.extend_from_slice(&hs);
        rec
    }

    #[test]
    fn a_hello_says_its_server_name_whole_or_in_pieces() {
        let rec = hello_record(Some("api.example.com"), &[(10, &[0, 2, 0, 29])]);
        let want = Hello {
            server_name: Some("api.example.com".into()),
            ech: false,
        };
        assert_eq!(client_hello(&rec).unwrap(), Some(want.clone()));
        // Every prefix asks for more.
        for n in 0..rec.len() {
            assert_eq!(client_hello(&rec[..n]).unwrap(), None, "{n}");
        }
        // Split across two records.
        let hs = &rec[5..];
        let mut two = vec![22, 3, 1, 0, 10];
        two.extend_from_slice(&hs[..10]);
        two.extend_from_slice(&[22, 3, 1]);
        two.extend_from_slice(&((hs.len() - 10) as u16).to_be_bytes());
        two.extend_from_slice(&hs[10..]);
        assert_eq!(client_hello(&two).unwrap(), Some(want));
        let none = hello_record(None, &[]);
        assert_eq!(client_hello(&none).unwrap().unwrap().server_name, None);
        let ech = hello_record(Some("public.example"), &[(ECH, &[0, 1, 2])]);
        assert!(client_hello(&ech).unwrap().unwrap().ech);
    }

    #[test]
    fn a_hello_that_could_be_read_two_ways_is_refused() {
        // Two server_name extensions, or two names in one.
        let two = hello_record(Some("a.example"), &[(SERVER_NAME, &[0, 4, 0, 0, 1, b'b'])]);
        assert!(client_hello(&two).is_err());
        let mut data = Vec::new();
        for n in ["a.example", "b.example"] {
            data.push(0);
            data.extend_from_slice(&(n.len() as u16).to_be_bytes());
            data.extend_from_slice(n.as_bytes());
        }
        let mut list = (data.len() as u16).to_be_bytes().to_vec();
        list.extend_from_slice(&data);
        assert!(client_hello(&hello_record(None, &[(SERVER_NAME, &list)])).is_err());
        // Not TLS, another handshake message, bytes after the hello in its record.
        assert!(client_hello(b"\x16\x04\x01\x00\x05hello").is_err());
        assert!(client_hello(b"\x17\x03\x03\x00\x01x").is_err());
        let mut rec = hello_record(Some("a.example"), &[]);
        rec[5] = 2;
        assert!(client_hello(&rec).is_err());
        let mut rec = hello_record(Some("a.example"), &[]);
        rec.push(0);
        let len = u16::from_be_bytes([rec[3], rec[4]]) + 1;
        rec[3..5].copy_from_slice(&len.to_be_bytes());
        assert!(client_hello(&rec).is_err());
        // A name with a NUL in it.
        assert!(client_hello(&hello_record(Some("a.example\0.evil"), &[])).is_err());
    }

    #[test]
    fn any_bytes_as_a_hello_are_read_or_refused_never_a_panic() {
        let seed = hello_record(Some("api.example.com"), &[(ECH, &[1, 2, 3])]);
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let mut b = seed.clone();
            for _ in 0..(next() % 4 + 1) {
                let at = usize::try_from(next()).unwrap_or(0) % b.len();
                match next() % 3 {
                    0 => b[at] = (next() & 0xff) as u8,
                    1 => b.truncate(at.max(1)),
                    _ => b.insert(at, (next() & 0xff) as u8),
                }
            }
            let _ = client_hello(&b);
        }
    }
}
