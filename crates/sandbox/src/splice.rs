//! Zero-copy relaying between two sockets through a pipe (`splice(2)`), for the runner's
//! egress proxy: a proxied byte then never enters user space. Here because this crate is
//! the only one with `unsafe`; it knows nothing of the proxy. Both calls are non-blocking:
//! `WouldBlock` means "wait until the descriptor is ready", which the caller's event loop
//! does.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// A pipe to splice through: its read and write ends, non-blocking, close-on-exec.
#[derive(Debug)]
pub struct SplicePipe {
    read: OwnedFd,
    write: OwnedFd,
}

/// How much a [`SplicePipe`] holds (the kernel rounds it to pages).
pub const SPLICE_PIPE_BYTES: usize = 1 << 20;

impl SplicePipe {
    /// A new pipe, grown to [`SPLICE_PIPE_BYTES`] where the kernel allows (else its
    /// default, 64 KiB).
    pub fn new() -> io::Result<Self> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        let ret = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) };
        if ret == -1 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 succeeded, so both descriptors are new and ours.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: F_SETPIPE_SZ takes an int size; a refusal (EPERM past the user's limit)
        // leaves the pipe as it was, which still works.
        let _ = unsafe {
            libc::fcntl(
                write.as_raw_fd(),
                libc::F_SETPIPE_SZ,
                SPLICE_PIPE_BYTES as libc::c_int,
            )
        };
        Ok(Self { read, write })
    }

    /// Moves up to `len` bytes from the socket `from` into the pipe: `Ok(0)` at end of
    /// file.
    pub fn fill(&self, from: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
        splice(from.as_raw_fd(), self.write.as_raw_fd(), len)
    }

    /// Moves up to `len` bytes from the pipe into the socket `to`.
    pub fn drain(&self, to: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
        splice(self.read.as_raw_fd(), to.as_raw_fd(), len)
    }
}

fn splice(from: RawFd, to: RawFd, len: usize) -> io::Result<usize> {
    loop {
        // SAFETY: both descriptors are open for the call (borrowed or owned by the caller);
        // null offsets mean "the descriptor's own position", as sockets and pipes need.
        let n = unsafe {
            libc::splice(
                from,
                std::ptr::null_mut(),
                to,
                std::ptr::null_mut(),
                len,
                libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
            )
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsFd;

    #[test]
    fn bytes_cross_from_one_socket_to_another_through_the_pipe() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut a = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        let l2 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l2.local_addr().unwrap()).unwrap();
        let (mut d, _) = l2.accept().unwrap();
        a.write_all(b"hello").unwrap();
        let p = SplicePipe::new().unwrap();
        let mut n = 0;
        while n == 0 {
            n = match p.fill(b.as_fd(), 1 << 16) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
                Err(e) => panic!("{e}"),
            };
        }
        assert_eq!(p.drain(c.as_fd(), n).unwrap(), 5);
        let mut got = [0u8; 5];
        d.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"hello");
        drop(a);
        // End of file comes through as 0 (the socket is blocking, so this waits for it).
        assert_eq!(p.fill(b.as_fd(), 1 << 16).unwrap(), 0);
    }
}
