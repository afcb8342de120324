"""The records of a run log, shared by the log (:mod:`faidecs.runs.runlog`) and its reader
(:mod:`faidecs.runs.runlog_reader`), which must not import each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from faidecs.errors import FaidecsError

FORMAT = "faidecs.runs.runlog/1"


class RunLogError(FaidecsError):
    """A run log that cannot be read: says the line and what is wrong."""


@dataclass(frozen=True, slots=True)
class Published:
    time: int
    event: dict[str, Any]  # the input JSON shape, with publisher and seq

    @property
    def id(self) -> str:
        return str(self.event["id"])

    @property
    def type(self) -> str:
        return str(self.event["type"])

    @property
    def publisher(self) -> str:
        return str(self.event["publisher"])

    @property
    def seq(self) -> int:
        return int(self.event["seq"])


@dataclass(frozen=True, slots=True)
class Delivered:
    time: int
    process: str
    conjunction: int
    relation: tuple[str, ...]
    #: the delivery's id (overlay subscribers: process, merger stream, position, index); a
    #: relation delivered again by a restarted process has the same one. None in older logs.
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Notified:
    time: int
    process: str
    event: str  # event id
