"""A deployment's key material: one CurveZMQ key pair per process.

Layout of a key folder (``faidecs overlay keys``)::

    public/<process>.key           every process's public key (give all of them to every host)
    private/<process>.key_secret   one process's key pair (give it to that process's host only)

A process authenticates its peers by their public keys: a connection from a key that is not in
``public/`` is refused by the ZAP handler before any message is read, and every message received
is attributed to the process whose key signed the connection, not to what the message says.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from faidecs.errors import FaidecsError

_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


class KeyMaterialError(FaidecsError):
    """Missing, unreadable or inconsistent key material; says which file."""


def check_process_name(name: str) -> str:
    """Process names become file names and ZooKeeper node names: a safe alphabet only."""
    if not name or not set(name) <= _NAME_CHARS or name.startswith("."):
        raise KeyMaterialError(f"process name {name!r}: use letters, digits, '_', '-' and '.' (not first)")
    return name


def create_keys(folder: Path, processes: Iterable[str]) -> list[str]:
    """Create a key pair for each process that has none yet in ``folder``; returns those created.
    Existing keys are kept: adding a process to a deployment must not lock the others out."""
    import zmq.auth

    public, private = folder / "public", folder / "private"
    public.mkdir(parents=True, exist_ok=True)
    private.mkdir(parents=True, exist_ok=True)
    private.chmod(0o700)
    created = []
    for name in processes:
        check_process_name(name)
        if (private / f"{name}.key_secret").exists():
            continue
        pub, secret = zmq.auth.create_certificates(str(private), name)
        Path(pub).replace(public / f"{name}.key")
        Path(secret).chmod(0o600)
        created.append(name)
    return created


@dataclass(frozen=True)
class Keys:
    """What one process holds: its own key pair and every process's public key."""

    process: str
    public: bytes  # z85
    secret: bytes  # z85
    peers: dict[bytes, str]  # public key (z85) -> process

    @classmethod
    def load(cls, folder: Path, process: str) -> Keys:
        import zmq.auth

        check_process_name(process)
        secret_file = folder / "private" / f"{process}.key_secret"
        try:
            public, secret = zmq.auth.load_certificate(str(secret_file))
        except (OSError, ValueError) as exc:
            raise KeyMaterialError(f"{secret_file}: no key pair for process {process} ({exc})") from None
        if secret is None:
            raise KeyMaterialError(f"{secret_file}: holds no secret key")
        peers: dict[bytes, str] = {}
        files = sorted((folder / "public").glob("*.key"))
        if not files:
            raise KeyMaterialError(f"{folder / 'public'}: no public keys")
        for f in files:
            try:
                key, _ = zmq.auth.load_certificate(str(f))
            except (OSError, ValueError) as exc:
                raise KeyMaterialError(f"{f}: not a public key ({exc})") from None
            peers[key] = check_process_name(f.stem)
        if peers.get(public) != process:
            raise KeyMaterialError(f"{folder / 'public'}: has no public key of {process} matching its key pair")
        return cls(process, public, secret, peers)

    def public_key_of(self, process: str) -> bytes:
        for key, name in self.peers.items():
            if name == process:
                return key
        raise KeyMaterialError(f"no public key for process {process}")


__all__ = ["KeyMaterialError", "Keys", "check_process_name", "create_keys"]
