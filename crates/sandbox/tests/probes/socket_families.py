# The attacker's side of tests/socket_families.rs (and crates/boxmaker/tests/socket_families.rs):
# run inside a box as `python3 -c <this file> MODE`, it tries every way it knows to get a
# socket and prints one JSON object per attempt on stdout.
#
#   families  socket(2) and socketpair(2) for every family 0..63 and every type below, through
#             libc; socket(2) again through syscall(2) with bits set above the int the kernel
#             reads; and io_uring_setup(2), the other way to make a socket.
#   int80     (x86-64 only) socketcall(SYS_SOCKET, AF_VSOCK) through the i386 entry point,
#             `int 0x80`; prints "int80 returned N" if the kernel ever answers.
#
# ctypes, not the socket module: the module refuses nothing itself, but this way every call
# is exactly the system call and errno is the kernel's (or the filter's) answer.

import ctypes
import json
import mmap
import struct
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SOCK_TYPES = {"stream": 1, "dgram": 2, "raw": 3, "seqpacket": 5}
SYS_SOCKET = 41  # x86-64
SYS_SOCKET_AARCH64 = 198
SYS_IO_URING_SETUP = 425  # the same number on every architecture


def machine():
    import os

    return os.uname().machine


def attempt(call, family, kind, fn):
    ctypes.set_errno(0)
    r = fn()
    err = ctypes.get_errno()
    print(json.dumps({"call": call, "family": family, "type": kind, "ok": r >= 0,
                      "errno": 0 if r >= 0 else err}))
    return r


def families():
    sv = (ctypes.c_int * 2)()
    for family in range(64):
        for kind, t in SOCK_TYPES.items():
            fd = attempt("socket", family, kind, lambda: libc.socket(family, t, 0))
            if fd >= 0:
                libc.close(fd)
            r = attempt("socketpair", family, kind,
                        lambda: libc.socketpair(family, t, 0, sv))
            if r >= 0:
                libc.close(sv[0])
                libc.close(sv[1])
    # The kernel reads the family as an int: 2^32 + 40 is AF_VSOCK to it. A filter comparing
    # all 64 bits would see another number.
    nr = SYS_SOCKET if machine() == "x86_64" else SYS_SOCKET_AARCH64
    for high in (1 << 32, 0xFFFFFFFF << 32):
        fd = attempt("socket_high_bits", (high | 40), "stream",
                     lambda: libc.syscall(ctypes.c_long(nr), ctypes.c_long(high | 40),
                                          ctypes.c_long(1), ctypes.c_long(0)))
        if fd >= 0:
            libc.close(fd)
    params = ctypes.create_string_buffer(120)
    fd = attempt("io_uring_setup", 0, "-",
                 lambda: libc.syscall(ctypes.c_long(SYS_IO_URING_SETUP), ctypes.c_long(2),
                                      params))
    if fd >= 0:
        libc.close(fd)


def int80():
    if machine() != "x86_64":
        print("int80 not applicable")
        return
    # One page below 4 GiB (MAP_32BIT), so the i386 entry point can read the arguments.
    MAP_32BIT = 0x40
    page = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_32BIT,
                     prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    base = ctypes.addressof(ctypes.c_char.from_buffer(page))
    args = base + 2048
    page[2048:2060] = struct.pack("<III", 40, 1, 0)  # AF_VSOCK, SOCK_STREAM, 0
    code = (b"\x53"                                   # push rbx
            b"\xb8\x66\x00\x00\x00"                   # mov eax, 102 (socketcall)
            b"\xbb\x01\x00\x00\x00"                   # mov ebx, 1 (SYS_SOCKET)
            b"\xb9" + struct.pack("<I", args) +       # mov ecx, args
            b"\xcd\x80"                               # int 0x80
            b"\x48\x63\xc0"                           # movsxd rax, eax
            b"\x5b"                                   # pop rbx
            b"\xc3")                                  # ret
    page[0:len(code)] = code
    fn = ctypes.CFUNCTYPE(ctypes.c_long)(base)
    print("int80 returned", fn(), flush=True)


{"families": families, "int80": int80}[sys.argv[1]]()
