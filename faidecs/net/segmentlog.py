"""An append-only log of byte records on disk, in segment files with a checksum per record: what a
merger replica's decisions will be kept in so that they survive a restart (issue 22).

Why a segment format of its own rather than SQLite or LMDB: the log is written in order, read in
order once at a restart, and dropped from the front a segment at a time; a record is a few dozen
bytes. Appending to a file and calling ``fsync`` is the cheapest durable write there is, a CRC-32
per record (zlib, in C) finds a torn or corrupt record, and recovery is one sequential read. An
embedded database would add a B-tree and its own journal to every append for none of its features.

Layout: a folder of segments ``<first index, 20 digits>.seg``, each a run of records
``[length: u32 LE][length XOR 0xFFFFFFFF: u32 LE][crc32 of payload: u32 LE][payload]``. A segment
is closed at ``segment_bytes`` and a new one opened at the next index. The length's complement
tells a damaged length from a torn write: a length that runs past the end of the file is a torn
payload only when its header is whole and consistent; otherwise the records after it would be
lost as a "torn tail".

Recovery (:meth:`SegmentLog.open`) reads every segment in order. A damaged record at the very end
of the last segment (its length runs past the end of the file, or its checksum fails and nothing
follows it) is a write that a crash interrupted: the file is cut before it (``torn_bytes``). Any
other damaged record is corruption and raises :class:`CorruptLog` naming the file and the offset:
records after it were acknowledged, and silently dropping them would lose acknowledged data.

Durability (``sync``): ``"always"`` makes :meth:`commit` flush and ``fsync`` every time (an
acknowledged record survives the loss of every process and of power); ``"group"`` makes
:meth:`commit` hand the records to the system (a killed process loses none of them) and ``fsync``
at most every ``group_ms``, on the loop (:meth:`due` says when the next is owed) or, with a
:class:`BackgroundSync`, on a thread of its own, so that the loop never waits for the disk; a
power loss may take what was acknowledged in the last ``group_ms``.
"""

from __future__ import annotations

import os
import struct
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from faidecs.errors import FaidecsError

Sync = Literal["always", "group"]
_HEAD = struct.Struct("<III")  # length, its complement, crc32 of the payload
_ONES = 0xFFFFFFFF
#: The largest record: a batch of decisions is far smaller; a length beyond it is damage.
MAX_RECORD = 64 << 20
SUFFIX = ".seg"


class CorruptLog(FaidecsError):
    """A record in the middle of a log is damaged: the file and the offset say where."""


@dataclass(frozen=True, slots=True)
class Recovered:
    """What :meth:`SegmentLog.open` found: the index of the first record kept, how many records,
    and the bytes of a torn last record it cut off (0: none)."""

    first: int
    count: int
    torn_bytes: int


class SegmentLog:
    """Records ``first .. first + len - 1``, in segments under ``folder``."""

    def __init__(self, folder: Path, *, sync: Sync = "group", group_ms: int = 5, segment_bytes: int = 64 << 20):
        if group_ms < 0 or segment_bytes < _HEAD.size:
            raise ValueError("group_ms must be at least 0 and segment_bytes larger than a record header")
        self.folder = folder
        self.sync: Sync = sync
        self.group_ms = group_ms
        self.segment_bytes = segment_bytes
        self.first = 0  # index of the first record kept
        self.next = 0  # index the next append gets
        self.synced = 0  # records before it are on disk (fsync'ed)
        self.last_sync = 0.0
        self.syncs = 0
        self._segments: list[tuple[int, Path]] = []  # (first index, path), in order
        self._file: BinaryIO | None = None
        #: group: a BackgroundSync fsyncs this log, so commit() only hands records to the system
        self.background = False
        self._flushed = 0  # records before it were handed to the system
        # The background thread fsyncs the file the loop writes: never while it is swapped or closed.
        self._lock = threading.Lock()
        self._size = 0

    # --- opening and recovery -------------------------------------------------------------------

    @classmethod
    def open(
        cls, folder: Path, *, sync: Sync = "group", group_ms: int = 5, segment_bytes: int = 64 << 20
    ) -> tuple[SegmentLog, list[bytes], Recovered]:
        """The log in ``folder`` (created if missing), every record it holds, and what recovery did."""
        log = cls(folder, sync=sync, group_ms=group_ms, segment_bytes=segment_bytes)
        folder.mkdir(parents=True, exist_ok=True)
        paths = sorted(folder.glob("*" + SUFFIX))
        records: list[bytes] = []
        torn = 0
        expected: int | None = None
        for k, path in enumerate(paths):
            start = _first_index(path)
            if expected is not None and start != expected:
                raise CorruptLog(f"{path}: starts at record {start}, but the previous segment ends before {expected}")
            last = k == len(paths) - 1
            found, cut = _read_segment(path, last)
            if cut:
                torn = cut
            if k == 0:
                log.first = start
            records += found
            log._segments.append((start, path))
            expected = start + len(found)
        log.next = log.synced = expected if expected is not None else 0
        if log._segments:
            start, path = log._segments[-1]
            log._file = path.open("ab")
            log._size = path.stat().st_size
        return log, records, Recovered(log.first, len(records), torn)

    # --- writing -----------------------------------------------------------------------------------

    def append(self, payload: bytes) -> int:
        """Write ``payload`` as the next record (not yet durable: :meth:`commit`); its index."""
        if not 0 < len(payload) <= MAX_RECORD:
            raise ValueError(f"a record holds 1 to {MAX_RECORD} bytes, not {len(payload)}")
        if self._file is None or self._size >= self.segment_bytes:
            self._roll()
        assert self._file is not None
        data = _HEAD.pack(len(payload), len(payload) ^ _ONES, zlib.crc32(payload)) + payload
        self._file.write(data)
        self._size += len(data)
        index = self.next
        self.next += 1
        return index

    def flush(self) -> None:
        """Hand what was appended to the operating system: it then survives a crash of this
        process (not of the machine) before any ``fsync``."""
        if self._file is not None:
            self._file.flush()
            self._flushed = self.next

    def due(self, now: float | None = None) -> float | None:
        """Seconds until the group commit owes an ``fsync`` (0: now), None when nothing waits."""
        if self.synced == self.next:
            return None
        if self.sync == "always":
            return 0.0
        now = time.monotonic() if now is None else now
        return max(0.0, self.last_sync + self.group_ms / 1000 - now)

    def commit(self, now: float | None = None, *, force: bool = False) -> bool:
        """Hand the records appended so far to the system (always: a killed process loses none of
        them), and make them durable if the policy says so now (``force``: in any case); whether
        it did. Records before :attr:`synced` are on disk."""
        self.flush()
        if self.background and self.sync == "group" and not force:
            return False  # the BackgroundSync fsyncs it, off the loop
        wait = self.due(now)
        if wait is None or (wait > 0 and not force):
            return False
        assert self._file is not None
        with self._lock:
            os.fsync(self._file.fileno())
        self.synced = self.next
        self.last_sync = time.monotonic() if now is None else now
        self.syncs += 1
        return True

    def roll(self) -> None:
        """Start a new segment at the next index (unless the current one is empty), so that a
        :meth:`trim` can drop every record before it."""
        if self._file is not None and self._size > 0:
            self._roll()

    def bytes(self) -> int:
        """The bytes the kept segments hold, the one being written included."""
        return sum(path.stat().st_size for _, path in self._segments[:-1]) + self._size if self._segments else 0

    def sync_flushed(self) -> bool:
        """``fsync`` what was handed to the system (a BackgroundSync's thread); whether it did."""
        with self._lock:
            target = self._flushed
            if self._file is None or target <= self.synced:
                return False
            os.fsync(self._file.fileno())
        self.synced = max(self.synced, target)
        self.syncs += 1
        return True

    def _roll(self) -> None:
        with self._lock:
            self._roll_locked()

    def _roll_locked(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())  # a closed segment is complete on disk
            self._file.close()
        path = self.folder / f"{self.next:020d}{SUFFIX}"
        self._file = path.open("ab")
        self._size = 0
        self._segments.append((self.next, path))
        _sync_folder(self.folder)  # the new file's name is durable too

    # --- trimming and closing ----------------------------------------------------------------------

    def trim(self, before: int) -> int:
        """Drop the segments whose records all come before index ``before`` (never the one being
        written); how many records went."""
        dropped = 0
        while len(self._segments) > 1 and self._segments[1][0] <= before:
            start, path = self._segments.pop(0)
            dropped += self._segments[0][0] - start
            path.unlink()
        if dropped:
            self.first = self._segments[0][0]
            _sync_folder(self.folder)
        return dropped

    def abandon(self) -> None:
        """Close the file without flushing what is buffered (a write failed: the disk is full or
        failing); the records not written are lost, as they would be in a crash."""
        with self._lock:
            if self._file is not None:
                try:
                    self._file.close()
                except OSError:
                    pass  # the buffered bytes it could not write
                self._file = None

    def close(self) -> None:
        if self._file is not None:
            self.commit(force=True)
            with self._lock:
                assert self._file is not None
                self._file.close()
                self._file = None

    def __len__(self) -> int:
        return self.next - self.first


class BackgroundSync:
    """Group commit off the loop: a thread that ``fsync`` s every ``group_ms`` what a process's
    logs handed to the system since (``SegmentLog.flush``). The loop never waits for the disk,
    and what it acknowledged reaches it within ``group_ms`` (plus an ``fsync``'s time)."""

    def __init__(self, logs: list[SegmentLog], group_ms: int, name: str = "faidecs-fsync"):
        self.logs = logs
        for log in logs:
            log.background = True
        self.every = max(group_ms, 1) / 1000
        self.failure: OSError | None = None  # the first fsync that failed (the loop reports it)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> BackgroundSync:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            for log in self.logs:
                try:
                    log.sync_flushed()
                except OSError as exc:
                    self.failure = self.failure or exc
                except ValueError:
                    pass  # closed meanwhile (abandoned after a failure)


def _first_index(path: Path) -> int:
    stem = path.name[: -len(SUFFIX)]
    if len(stem) != 20 or not stem.isdigit():
        raise CorruptLog(f"{path}: not a segment's name (20 digits, the index of its first record)")
    return int(stem)


def _read_segment(path: Path, last: bool) -> tuple[list[bytes], int]:
    """The records of one segment, and the bytes of a torn tail cut from it (the last segment only).

    A damaged record is a torn tail when it is the last segment's last: its header or payload runs
    past the end, or it ends exactly at the end, or only zeros follow it (a file the system
    extended before the data reached it). Records are never empty, so zeros are never a record."""
    data = path.read_bytes()
    records: list[bytes] = []
    offset, end = 0, len(data)
    head, crc32 = _HEAD, zlib.crc32
    while offset < end:
        if end - offset < head.size:
            problem, stop = f"a record header of {end - offset} bytes", end
        else:
            length, complement, checksum = head.unpack_from(data, offset)
            stop = offset + head.size + length
            if length == 0 or length > MAX_RECORD or complement != length ^ _ONES:
                # Zeros to the end are a tail the system extended before the data came; any other
                # such header was never written: corruption wherever it is.
                if last and not any(data[offset:]):
                    return records, _cut(path, offset, end)
                raise CorruptLog(f"{path}: at byte offset {offset}: a damaged record header (length {length})")
            elif stop > end:
                problem = f"a record of {length} bytes running past the end"
            else:
                payload = data[offset + head.size : stop]
                if crc32(payload) == checksum:
                    records.append(payload)
                    offset = stop
                    continue
                problem = "a record whose checksum does not match"
        if last and (stop >= end or not any(data[stop:])):
            return records, _cut(path, offset, end)  # the last write, interrupted
        raise CorruptLog(f"{path}: at byte offset {offset}: {problem}")
    return records, 0


def _cut(path: Path, offset: int, end: int) -> int:
    with path.open("r+b") as f:
        f.truncate(offset)
        f.flush()
        os.fsync(f.fileno())
    return end - offset


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = ["MAX_RECORD", "BackgroundSync", "CorruptLog", "Recovered", "SegmentLog", "Sync"]
