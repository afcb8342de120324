"""The segment log (faidecs/net/segmentlog.py): records survive a reopen in order, a torn last
write is cut, a damaged record anywhere else is refused naming the file and the offset, segments
roll and are trimmed, and the group commit syncs at most every group_ms."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from faidecs.net.segmentlog import BackgroundSync, CorruptLog, SegmentLog


def filled(folder: Path, n: int, **kw: object) -> SegmentLog:
    log, found, _ = SegmentLog.open(folder, **kw)  # type: ignore[arg-type]
    assert found == []
    for k in range(n):
        assert log.append(f"record {k}".encode()) == k
    log.close()
    return log


def test_records_survive_a_reopen_in_order(tmp_path: Path) -> None:
    filled(tmp_path, 100)
    log, found, rec = SegmentLog.open(tmp_path)
    assert found == [f"record {k}".encode() for k in range(100)]
    assert (rec.first, rec.count, rec.torn_bytes) == (0, 100, 0)
    assert log.append(b"more") == 100
    log.close()
    assert SegmentLog.open(tmp_path)[1][-1] == b"more"


def test_segments_roll_and_trim_keeps_the_indices(tmp_path: Path) -> None:
    filled(tmp_path, 50, segment_bytes=100)
    segments = sorted(tmp_path.glob("*.seg"))
    assert len(segments) > 5
    log, found, _ = SegmentLog.open(tmp_path, segment_bytes=100)
    dropped = log.trim(20)
    assert 0 < dropped <= 20 and log.first == dropped
    log.close()
    _, found, rec = SegmentLog.open(tmp_path)
    assert rec.first == dropped and found == [f"record {k}".encode() for k in range(dropped, 50)]


@pytest.mark.parametrize("cut", [1, 5, 8, 12])
def test_a_torn_last_write_is_cut(tmp_path: Path, cut: int) -> None:
    filled(tmp_path, 10)
    (seg,) = tmp_path.glob("*.seg")
    size = seg.stat().st_size
    with seg.open("r+b") as f:
        f.truncate(size - cut)  # the last record, partly written
    log, found, rec = SegmentLog.open(tmp_path)
    assert found == [f"record {k}".encode() for k in range(9)]
    assert rec.torn_bytes > 0 and seg.stat().st_size == size - cut - rec.torn_bytes
    assert log.append(b"next") == 9  # appends continue where the good records end
    log.close()
    assert SegmentLog.open(tmp_path)[1][-1] == b"next"


def test_zeros_after_the_last_record_are_a_torn_tail(tmp_path: Path) -> None:
    filled(tmp_path, 3)
    (seg,) = tmp_path.glob("*.seg")
    with seg.open("ab") as f:
        f.write(bytes(64))
    _, found, rec = SegmentLog.open(tmp_path)
    assert len(found) == 3 and rec.torn_bytes == 64


def test_a_damaged_record_in_the_middle_is_refused_with_file_and_offset(tmp_path: Path) -> None:
    filled(tmp_path, 10)
    (seg,) = tmp_path.glob("*.seg")
    data = bytearray(seg.read_bytes())
    offset = 3 * (12 + len(b"record 0"))  # the fourth record
    data[offset + 13] ^= 0xFF  # one byte of its payload
    seg.write_bytes(bytes(data))
    with pytest.raises(CorruptLog, match=rf"{seg.name}: at byte offset {offset}: .*checksum"):
        SegmentLog.open(tmp_path)
    assert seg.read_bytes() == bytes(data)  # nothing was cut


def test_a_damaged_length_in_the_last_segment_is_corruption_not_a_torn_tail(tmp_path: Path) -> None:
    """A length running past the end would look like an interrupted write, and the records after
    it would be cut as a torn tail: the length's complement in the header tells them apart."""
    filled(tmp_path, 10)
    (seg,) = tmp_path.glob("*.seg")
    data = bytearray(seg.read_bytes())
    offset = 3 * (12 + len(b"record 0"))
    data[offset + 1] ^= 0x01  # the length now claims 256 more bytes, past the end
    seg.write_bytes(bytes(data))
    with pytest.raises(CorruptLog, match=rf"{seg.name}: at byte offset {offset}: a damaged record header"):
        SegmentLog.open(tmp_path)
    assert seg.read_bytes() == bytes(data)


def test_damage_in_an_earlier_segment_is_refused(tmp_path: Path) -> None:
    filled(tmp_path, 30, segment_bytes=100)
    first = sorted(tmp_path.glob("*.seg"))[0]
    with first.open("r+b") as f:
        f.truncate(first.stat().st_size - 3)
    with pytest.raises(CorruptLog, match=rf"{first.name}: at byte offset \d+"):
        SegmentLog.open(tmp_path, segment_bytes=100)


def test_group_commit_syncs_at_most_every_group_ms(tmp_path: Path) -> None:
    log, _, _ = SegmentLog.open(tmp_path, sync="group", group_ms=10)
    log.append(b"a")
    assert log.commit(now=100.0) is True  # the first sync is owed at once
    log.append(b"b")
    assert log.due(now=100.004) == pytest.approx(0.006)
    assert log.commit(now=100.004) is False and log.synced == 1
    assert log.commit(now=100.011) is True and log.synced == 2
    assert log.due(now=200.0) is None  # nothing waits
    always, _, _ = SegmentLog.open(tmp_path / "always", sync="always")
    always.append(b"x")
    assert always.commit(now=0.0) is True and always.synced == 1


def test_empty_and_oversized_records_are_refused(tmp_path: Path) -> None:
    log, _, _ = SegmentLog.open(tmp_path)
    with pytest.raises(ValueError, match="1 to"):
        log.append(b"")


def test_a_background_sync_fsyncs_what_the_loop_handed_to_the_system(tmp_path: Path) -> None:
    log, _, _ = SegmentLog.open(tmp_path, sync="group", group_ms=1)
    syncer = BackgroundSync([log], group_ms=1).start()
    try:
        for k in range(5):
            log.append(f"record {k}".encode())
        assert log.commit() is False  # the loop only hands the records to the system
        assert log.synced == 0
        deadline = time.monotonic() + 5
        while log.synced < log.next and time.monotonic() < deadline:
            time.sleep(0.005)
        assert log.synced == log.next == 5 and log.syncs >= 1
        log.append(b"not handed over yet")  # not flushed: the thread has nothing new to sync
        time.sleep(0.02)
        assert log.synced == 5
    finally:
        syncer.stop()
        log.close()
    assert SegmentLog.open(tmp_path)[1][-1] == b"not handed over yet"  # close flushes and syncs
