"""The egress bench's origin (bench/egress.sh): `GET /N` answers N bytes and closes.
Listens on 127.0.0.1, on the port given (0: any), and prints the port it got."""

import socket
import sys
import threading

CHUNK = b"\0" * (1 << 20)


def serve(c):
    try:
        head = b""
        while b"\r\n\r\n" not in head:
            b = c.recv(4096)
            if not b:
                return
            head += b
        n = int(head.split(b" ", 2)[1][1:] or b"0")
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % n)
        while n > 0:
            c.sendall(CHUNK[: min(n, len(CHUNK))])
            n -= len(CHUNK)
    except OSError:
        pass
    finally:
        c.close()


s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0))
s.listen(128)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=serve, args=(c,), daemon=True).start()
