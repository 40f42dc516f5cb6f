"""The messages between a ``privdb`` command and the warm process.

caller → warm process: one request, a 4-byte length and a JSON object (argument list, working directory,
environment, umask, resource limits, module search path, the streams' encodings), sent in one ``sendmsg``
with the caller's standard input, output and error as ``SCM_RIGHTS`` file descriptors.
warm process → caller: one byte, :data:`GO` (the command starts), :data:`COLD` (run it yourself) or
:data:`STALE` (run it yourself: the code changed, and this warm process ends; start the next one).
caller → keeper: one byte per signal the caller received, its number.
keeper → caller: :data:`DONE` and the command's wait status as a signed 4-byte integer (an exit status, or
minus the signal that ended it).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
from typing import Any

__all__ = [
    "COLD",
    "DONE",
    "GO",
    "MAX_REQUEST",
    "STATUS_SIZE",
    "peer_uid",
    "read_request",
    "read_status",
    "send_request",
    "send_status",
]

GO, COLD, STALE, DONE = b"G", b"C", b"S", b"X"
MAX_REQUEST = 16 << 20  # an environment and an argument list, far below this
_LENGTH = struct.Struct("!I")
_STATUS = struct.Struct("!i")
STATUS_SIZE = 1 + _STATUS.size


def send_request(sock: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    body = json.dumps(request).encode("utf-8", "surrogateescape")
    data = _LENGTH.pack(len(body)) + body
    sent = socket.send_fds(sock, [data[:4096]], fds)
    sock.sendall(data[sent:])


def read_request(sock: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The request and the file descriptors that came with it (closed here if the request is bad)."""
    first, fds, _flags, _addr = socket.recv_fds(sock, 4096, 3)
    try:
        data = bytearray(first)
        while len(data) < _LENGTH.size:
            data += _chunk(sock, _LENGTH.size - len(data))
        (length,) = _LENGTH.unpack(bytes(data[: _LENGTH.size]))
        if length > MAX_REQUEST:
            raise ValueError("request too large")
        while len(data) < _LENGTH.size + length:
            data += _chunk(sock, _LENGTH.size + length - len(data))
        request = json.loads(
            bytes(data[_LENGTH.size : _LENGTH.size + length]).decode("utf-8", "surrogateescape")
        )
        if not isinstance(request, dict) or len(fds) != 3 or len(data) != _LENGTH.size + length:
            raise ValueError("malformed request")
    except BaseException:
        for fd in fds:
            _close(fd)
        raise
    return request, fds


def _chunk(sock: socket.socket, most: int) -> bytes:
    got = sock.recv(min(most, 1 << 16))
    if not got:
        raise ConnectionError("the caller left before its request was whole")
    return got


def send_status(sock: socket.socket, status: int) -> None:
    sock.sendall(DONE + _STATUS.pack(status))


def read_status(sock: socket.socket) -> int | None:
    """The command's wait status (after :data:`GO`); None if the keeper left without one."""
    data = b""
    while len(data) < 1 + _STATUS.size:
        got = sock.recv(1 + _STATUS.size - len(data))
        if not got:
            return None
        data += got
    if data[:1] != DONE:
        return None
    return int(_STATUS.unpack(data[1:])[0])


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def peer_uid(sock: socket.socket) -> int:
    """The user id of the process at the other end of a connected Unix socket (``SO_PEERCRED``): both
    ends talk only to their own user."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])
