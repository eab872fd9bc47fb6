//! A stand-in gate for `bench/mcp-overhead.py`: it holds the state directory's gate lock and
//! serves `agent.sock`, answering every `ToolRequest` at once with a `result`, so
//! `boxmaker mcp` in front of it measures the front's own cost per call, without a box, a
//! decision or an fsync. Usage: `instant_gate STATE_DIR` (runs until killed).

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::os::unix::net::UnixListener;

use proto::{DataClass, Envelope, Message, ToolResponse, read_frame, write_frame};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let state = std::env::args()
        .nth(1)
        .ok_or("usage: instant_gate STATE_DIR")?;
    let state = std::path::PathBuf::from(state);
    std::fs::create_dir_all(&state)?;
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(state.join("gate.lock"))?;
    lock.try_lock()?;
    let sock = state.join("agent.sock");
    let _ = std::fs::remove_file(&sock);
    let listener = UnixListener::bind(&sock)?;
    eprintln!("instant_gate: serving {}", sock.display());
    for stream in listener.incoming() {
        let stream = stream?;
        std::thread::spawn(move || {
            let mut r = BufReader::new(&stream);
            let mut w = BufWriter::new(&stream);
            while let Ok(env) = read_frame(&mut r) {
                if let Message::ToolRequest(req) = env.msg {
                    let resp = ToolResponse::Result {
                        content: req.arguments,
                        class: DataClass::Public,
                        untrusted: false,
                        truncated: false,
                    };
                    if write_frame(&mut w, &Envelope::response(env.id, resp)).is_err()
                        || w.flush().is_err()
                    {
                        return;
                    }
                }
            }
        });
    }
    Ok(())
}
