//! docs/spec.md §2.3: the frame codec, byte for byte, and every way a peer can lie about a frame.

// Test code: a failed unwrap or panic here is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{self, Cursor, Read, Write};

use proto::{
    CallId, DataClass, Envelope, ErrorCode, FrameError, MAX_FRAME, Message, SessionId, ToolRequest,
    ToolResponse, read_frame, write_frame,
};

// ---- an allocator that remembers this thread's largest allocation ---------------------------

struct Tracking;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards every call to the system allocator unchanged; it only records sizes in a
// const-initialized thread local, which never allocates.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = LARGEST.try_with(|l| l.set(l.get().max(layout.size())));
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Tracking = Tracking;

/// The largest single allocation `f` made on this thread.
fn largest_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|l| l.set(0));
    let out = f();
    (out, LARGEST.with(Cell::get))
}

// ---- readers and writers that misbehave ----------------------------------------------------

/// Hands out the length prefix, then panics if anyone reads a body byte.
struct PrefixOnly {
    prefix: [u8; 4],
    given: usize,
}

impl Read for PrefixOnly {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        assert!(
            self.given < 4,
            "the codec read a body byte after a bad length"
        );
        let n = (4 - self.given).min(buf.len());
        buf[..n].copy_from_slice(&self.prefix[self.given..self.given + n]);
        self.given += n;
        Ok(n)
    }
}

fn prefix_only(len: u32) -> PrefixOnly {
    PrefixOnly {
        prefix: len.to_be_bytes(),
        given: 0,
    }
}

/// Returns one byte per read, with an `Interrupted` error before every byte.
struct Trickle {
    bytes: Vec<u8>,
    at: usize,
    interrupt_next: bool,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.interrupt_next {
            self.interrupt_next = false;
            return Err(io::Error::new(io::ErrorKind::Interrupted, "signal"));
        }
        self.interrupt_next = true;
        if self.at == self.bytes.len() || buf.is_empty() {
            return Ok(0);
        }
        buf[0] = self.bytes[self.at];
        self.at += 1;
        Ok(1)
    }
}

/// Records what was written and whether it was flushed; can be told to fail.
#[derive(Default)]
struct Recorder {
    bytes: Vec<u8>,
    flushed: bool,
    fail: bool,
}

impl Write for Recorder {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.fail {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "peer gone"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.flushed = true;
        Ok(())
    }
}

// ---- values --------------------------------------------------------------------------------

fn tool_request() -> Envelope {
    Envelope::request(
        7,
        ToolRequest {
            session: SessionId::new("mm-thread-42").unwrap(),
            call: CallId(3),
            tool: "read_file".into(),
            arguments: r#"{"path":"/etc/hosts"}"#.into(),
        },
    )
}

fn frame_fixture() -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/frame/tool_request.bin",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(path).unwrap()
}

/// A frame whose body is `body`, with an honest length prefix.
fn frame_of(body: &[u8]) -> Vec<u8> {
    let mut f = (body.len() as u32).to_be_bytes().to_vec();
    f.extend_from_slice(body);
    f
}

/// A `result` envelope whose encoding is exactly `len` bytes (content is ASCII `x`s).
fn result_of_encoded_len(len: usize) -> Envelope {
    let make = |n: usize| {
        Envelope::response(
            1,
            ToolResponse::Result {
                content: "x".repeat(n),
                class: DataClass::Public,
                untrusted: false,
                truncated: false,
            },
        )
    };
    let overhead = serde_json::to_vec(&make(0)).unwrap().len();
    let env = make(len - overhead);
    assert_eq!(serde_json::to_vec(&env).unwrap().len(), len);
    env
}

// ---- the fixture ---------------------------------------------------------------------------

#[test]
fn write_frame_matches_the_fixture_byte_for_byte() {
    let mut out = Recorder::default();
    write_frame(&mut out, &tool_request()).unwrap();
    assert_eq!(out.bytes, frame_fixture());
    assert!(out.flushed, "write_frame must flush");
}

#[test]
fn read_frame_decodes_the_fixture() {
    let mut r = Cursor::new(frame_fixture());
    assert_eq!(read_frame(&mut r).unwrap(), tool_request());
    assert!(matches!(read_frame(&mut r), Err(FrameError::Closed)));
}

#[test]
fn frames_back_to_back_are_read_one_at_a_time() {
    let mut stream = Vec::new();
    let envs = [
        tool_request(),
        Envelope::error(0, ErrorCode::Internal, "gate died"),
        Envelope::response(
            7,
            ToolResponse::Failed {
                message: "no".into(),
            },
        ),
    ];
    for e in &envs {
        write_frame(&mut stream, e).unwrap();
    }
    let mut r = Cursor::new(stream);
    for e in &envs {
        assert_eq!(&read_frame(&mut r).unwrap(), e);
    }
    assert!(matches!(read_frame(&mut r), Err(FrameError::Closed)));
}

// ---- short reads and interruptions ---------------------------------------------------------

#[test]
fn one_byte_at_a_time_with_interruptions_between_still_reads_the_frame() {
    let mut r = Trickle {
        bytes: frame_fixture(),
        at: 0,
        interrupt_next: true,
    };
    assert_eq!(read_frame(&mut r).unwrap(), tool_request());
}

#[test]
fn an_empty_stream_is_closed() {
    assert!(matches!(
        read_frame(&mut io::empty()),
        Err(FrameError::Closed)
    ));
}

#[test]
fn a_stream_ending_inside_the_length_is_io_unexpected_eof() {
    for n in 1..=3 {
        let mut r = Cursor::new(vec![0u8; n]);
        match read_frame(&mut r) {
            Err(FrameError::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{n}"),
            other => panic!("{n} length bytes: {other:?}"),
        }
    }
}

#[test]
fn a_stream_ending_inside_the_body_is_io_unexpected_eof() {
    let mut f = frame_fixture();
    f.truncate(f.len() - 1);
    match read_frame(&mut Cursor::new(f)) {
        Err(FrameError::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof),
        other => panic!("{other:?}"),
    }
    // A length with no body at all.
    match read_frame(&mut Cursor::new(vec![0, 0, 0, 5])) {
        Err(FrameError::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof),
        other => panic!("{other:?}"),
    }
}

#[test]
fn other_read_errors_are_io() {
    struct Broken;
    impl Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::Error::new(io::ErrorKind::ConnectionReset, "reset"))
        }
    }
    match read_frame(&mut Broken) {
        Err(FrameError::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::ConnectionReset),
        other => panic!("{other:?}"),
    }
}

// ---- lengths that lie ----------------------------------------------------------------------

#[test]
fn a_zero_length_is_empty_and_no_body_is_read() {
    let (res, largest) = largest_allocation(|| read_frame(&mut prefix_only(0)));
    assert!(matches!(res, Err(FrameError::Empty)), "{res:?}");
    assert!(
        largest < 1024,
        "allocated {largest} bytes for an empty frame"
    );
}

#[test]
fn a_length_over_max_frame_is_too_large_before_any_allocation_or_body_read() {
    for len in [MAX_FRAME as u32 + 1, 1 << 30, u32::MAX] {
        let (res, largest) = largest_allocation(|| read_frame(&mut prefix_only(len)));
        match res {
            Err(FrameError::TooLarge(n)) => assert_eq!(n, len as usize),
            other => panic!("{len}: {other:?}"),
        }
        assert!(
            largest < 1024,
            "allocated {largest} bytes for a {len}-byte lie"
        );
    }
}

#[test]
fn a_body_of_exactly_max_frame_is_read() {
    let env = result_of_encoded_len(MAX_FRAME);
    let body = serde_json::to_vec(&env).unwrap();
    assert_eq!(read_frame(&mut Cursor::new(frame_of(&body))).unwrap(), env);
}

#[test]
fn a_body_of_max_frame_plus_one_is_too_large() {
    let env = result_of_encoded_len(MAX_FRAME + 1);
    let body = serde_json::to_vec(&env).unwrap();
    match read_frame(&mut Cursor::new(frame_of(&body))) {
        Err(FrameError::TooLarge(n)) => assert_eq!(n, MAX_FRAME + 1),
        other => panic!("{other:?}"),
    }
}

// ---- write side ----------------------------------------------------------------------------

#[test]
fn write_frame_of_exactly_max_frame_writes_it() {
    let env = result_of_encoded_len(MAX_FRAME);
    let mut out = Recorder::default();
    write_frame(&mut out, &env).unwrap();
    assert_eq!(out.bytes.len(), 4 + MAX_FRAME);
    assert_eq!(&out.bytes[..4], &(MAX_FRAME as u32).to_be_bytes());
}

#[test]
fn write_frame_over_max_frame_is_too_large_and_writes_nothing() {
    let env = result_of_encoded_len(MAX_FRAME + 1);
    let mut out = Recorder::default();
    match write_frame(&mut out, &env) {
        Err(FrameError::TooLarge(n)) => assert_eq!(n, MAX_FRAME + 1),
        other => panic!("{other:?}"),
    }
    assert!(out.bytes.is_empty(), "wrote {} bytes", out.bytes.len());
    assert!(!out.flushed);
}

#[test]
fn a_failing_writer_is_io() {
    let mut out = Recorder {
        fail: true,
        ..Recorder::default()
    };
    match write_frame(&mut out, &tool_request()) {
        Err(FrameError::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::BrokenPipe),
        other => panic!("{other:?}"),
    }
}

// ---- bodies that are not envelopes ---------------------------------------------------------

#[test]
fn a_body_that_is_not_an_envelope_is_json() {
    for body in [
        &b"not json"[..],
        b"{}",
        b"null",
        b"\xff\xfe\xfd",
        b"{\"v\":1,\"id\":1,\"final\":true,\"msg\":{\"kind\":\"error\",\"body\":{\"code\":\"internal\",\"detail\":\"\xff\"}}}",
        b"[1,1,true,{\"kind\":\"error\",\"body\":{\"code\":\"internal\",\"detail\":\"\"}}]",
    ] {
        match read_frame(&mut Cursor::new(frame_of(body))) {
            Err(FrameError::Json(_)) => {}
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(body)),
        }
    }
}

#[test]
fn trailing_bytes_inside_a_frame_are_json() {
    let mut body = serde_json::to_vec(&tool_request()).unwrap();
    body.extend_from_slice(b"{}");
    assert!(matches!(
        read_frame(&mut Cursor::new(frame_of(&body))),
        Err(FrameError::Json(_))
    ));
}

#[test]
fn another_version_is_bad_version_and_the_error_fixture_says_so() {
    let mut env = tool_request();
    env.v = 2;
    let body = serde_json::to_vec(&env).unwrap();
    let err = read_frame(&mut Cursor::new(frame_of(&body))).unwrap_err();
    assert!(matches!(err, FrameError::BadVersion(2)), "{err:?}");
    assert_eq!(err.wire_code(), Some(ErrorCode::BadVersion));
    // The detail a role sends back is the error's own sentence (fixture error.json).
    let fixture = format!(
        "{}/tests/fixtures/wire/error.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let reply: Envelope = serde_json::from_slice(&std::fs::read(fixture).unwrap()).unwrap();
    assert_eq!(
        reply.msg,
        Message::Error(proto::WireError {
            code: ErrorCode::BadVersion,
            detail: err.to_string()
        })
    );
}

#[test]
fn version_zero_is_bad_version_too() {
    let mut env = tool_request();
    env.v = 0;
    let body = serde_json::to_vec(&env).unwrap();
    assert!(matches!(
        read_frame(&mut Cursor::new(frame_of(&body))),
        Err(FrameError::BadVersion(0))
    ));
}

#[test]
fn each_error_has_a_short_message_and_a_wire_code() {
    let json = serde_json::from_str::<Envelope>("x").unwrap_err();
    let cases = [
        (FrameError::Closed, None),
        (FrameError::Empty, Some(ErrorCode::BadFrame)),
        (FrameError::TooLarge(5), Some(ErrorCode::BadFrame)),
        (FrameError::BadVersion(2), Some(ErrorCode::BadVersion)),
        (FrameError::Json(json), Some(ErrorCode::BadFrame)),
        (FrameError::Io(io::Error::other("x")), None),
    ];
    for (e, code) in cases {
        let msg = e.to_string();
        assert!(
            !msg.is_empty() && !msg.contains('\n') && msg.len() < 200,
            "{msg:?}"
        );
        assert_eq!(e.wire_code(), code, "{msg}");
    }
}
