"""A suite's MCP server as the box runs it when the replay uses a template (server.py).

    python3 -S -I stub.py SOCKET SUITE ROLE

A bare interpreter (no site, no imports but built-in modules: ~10 ms): it hands the
template at SOCKET its standard input, output and error and a descriptor of this box's
`/work`, then waits until the server the template forked for it ends (the connection
closes), and ends too. Nothing of the session passes through it.
"""

import _socket
import posix
import sys


def main():
    path, suite, role = sys.argv[1], sys.argv[2], sys.argv[3]
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    s.connect(path)
    work = posix.open("/work", posix.O_RDONLY | posix.O_DIRECTORY)
    fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2, work))
    s.sendmsg([f"{suite} {role}".encode()], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
    posix.close(work)
    # The server holds its own copies now; this waits for it to end.
    while s.recv(1):
        pass


main()
