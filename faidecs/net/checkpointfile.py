"""A checkpoint file: one JSON value, replaced atomically and checked whole when read.

A process that restarts where it stood (a subscriber's engines and stream positions, issue 22)
keeps its last checkpoint in one file. Writing one never leaves a half-written checkpoint in its
place: the new content goes to a temporary file beside it, is ``fsync``ed, renamed over the old
one (``os.replace`` is atomic on POSIX), and the folder is ``fsync``ed so that the rename itself
survives a power loss. The content is a header line, ``faidecs.checkpoint/1 <length>
<BLAKE2b-256 of the body, hex>``, then the body (compact JSON); reading checks the length and the
digest before decoding, so a damaged file is refused with :class:`CheckpointError` naming it,
never half-read.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import msgspec

from faidecs.errors import FaidecsError

MAGIC = b"faidecs.checkpoint/1"


class CheckpointError(FaidecsError):
    """A checkpoint file that cannot be used: names the file and what is wrong with it."""


def _digest(body: bytes) -> str:
    return hashlib.blake2b(body, digest_size=32).hexdigest()


def encode_checkpoint(value: Any) -> bytes:
    """The bytes of a checkpoint file holding ``value`` (JSON-compatible)."""
    body = msgspec.json.encode(value)
    return MAGIC + b" %d %s\n" % (len(body), _digest(body).encode()) + body


def decode_checkpoint(data: bytes, name: str) -> Any:
    """The value of checkpoint file bytes ``data``; :class:`CheckpointError` naming ``name``
    when the header, the length or the digest does not hold, or the body is not JSON."""
    header, newline, body = data.partition(b"\n")
    words = header.split(b" ")
    if not newline or len(words) != 3 or words[0] != MAGIC:
        raise CheckpointError(f"{name}: not a checkpoint file (it must start with {MAGIC.decode()!r})")
    try:
        length = int(words[1])
    except ValueError:
        raise CheckpointError(f"{name}: damaged checkpoint: its header's length is not a number") from None
    if length != len(body):
        raise CheckpointError(f"{name}: damaged checkpoint: {len(body)} bytes of body, its header says {length}")
    if _digest(body) != words[2].decode(errors="replace"):
        raise CheckpointError(f"{name}: damaged checkpoint: its digest does not match its content")
    try:
        return msgspec.json.decode(body)
    except msgspec.DecodeError as exc:  # a digest that matches garbage: written so by a bug
        raise CheckpointError(f"{name}: checkpoint body is not JSON: {exc}") from None


def write_checkpoint(path: Path, value: Any, *, sync: bool = True) -> int:
    """Replace ``path`` with a checkpoint holding ``value``, atomically; returns its size.
    ``sync``: ``fsync`` the file and the folder (off only where nothing must survive a power loss)."""
    data = encode_checkpoint(value)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as f:
        f.write(data)
        f.flush()
        if sync:
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if sync:
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    return len(data)


def read_checkpoint(path: Path) -> Any | None:
    """The value of the checkpoint at ``path``, None when there is none (a temporary file left by
    a write that was cut short is not one); :class:`CheckpointError` when it is damaged."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read it: {exc.strerror}") from None
    return decode_checkpoint(data, str(path))


__all__ = ["CheckpointError", "decode_checkpoint", "encode_checkpoint", "read_checkpoint", "write_checkpoint"]
