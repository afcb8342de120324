"""Broker URLs (faidecs.connect.urls), the window of recent ids (faidecs.connect.dedupe), dead
letters (faidecs.connect.intake), and `faidecs run --source` without the broker's extra."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from faidecs import Engine
from faidecs.cli.main import main
from faidecs.connect.dedupe import RecentIds
from faidecs.connect.intake import Intake, dead_letter
from faidecs.connect.urls import ConnectError, parse_url, wildcard
from faidecs.errors import EventError

PROGRAM = "type T(x: int)\nsubscription S:\n    T.x > 0\n"


def test_a_nats_url_names_host_port_subject_and_options() -> None:
    url = parse_url("nats://broker.example:4333/quotes.us?durable=desk&stream=Q&dead=quotes.bad")
    assert (url.scheme, url.host, url.port, url.name) == ("nats", "broker.example", 4333, "quotes.us")
    assert url.options == {"durable": "desk", "stream": "Q", "dead": "quotes.bad"}
    assert parse_url("nats://localhost/q").port == 4222
    assert parse_url("mqtt://localhost/sensors/+/temp?qos=2").port == 1883
    assert wildcard(parse_url("mqtt://h/sensors/%23")) and wildcard(parse_url("nats://h/a.>"))
    assert not wildcard(parse_url("nats://h/a.b"))


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("http://h/x", "the scheme must be nats:// or mqtt://, not http://"),
        ("quotes", "the scheme must be nats:// or mqtt://, not missing"),
        ("nats:///quotes", "no host"),
        ("nats://h:port/q", "not a broker URL"),
        ("nats://h:70000/q", "not a broker URL"),
        ("nats://h", "no subject (write nats://HOST:PORT/SUBJECT)"),
        ("mqtt://h/", "no topic (write mqtt://HOST:PORT/TOPIC)"),
        ("nats://h/a..b", "'a..b' is not a NATS subject"),
        ("nats://h/a.>.b", "'a.>.b' is not a NATS subject"),
        ("nats://h/a b", "'a b' is not a NATS subject"),
        ("mqtt://h/a/b+", "'a/b+' is not an MQTT topic filter"),
        ("mqtt://h/a/#", "write # in a topic as %23"),
        ("nats://user:pw@h/q", "credentials in the URL are not supported"),
        ("nats://h/q?durable", "option 'durable' has no value"),
        ("nats://h/q?qos=1", "unknown option 'qos' for nats:// (known: ack_wait, dead, durable, max_bytes, stream"),
        ("nats://h/q?durable=a&durable=b", "option 'durable' given twice"),
        ("mqtt://h/t?qos=0", "option qos=0 is outside 1..2"),
        ("mqtt://h/t?qos=x", "option qos='x' is not an integer"),
    ],
)
def test_a_bad_url_is_an_error_naming_the_url_and_the_problem(text: str, problem: str) -> None:
    with pytest.raises(ConnectError) as caught:
        parse_url(text)
    assert str(caught.value).startswith(text + ": ")
    assert problem in str(caught.value)


def test_the_window_remembers_the_last_ids_and_forgets_the_oldest() -> None:
    window = RecentIds(3)
    for event_id in ("a", "b", "c"):
        window.add(event_id)
    assert all(i in window for i in "abc")
    window.add("a")  # seen again: the newest now
    window.add("d")  # pushes out the oldest, b
    assert "b" not in window and all(i in window for i in "acd") and len(window) == 3
    window.add("e")
    assert "c" not in window and "a" in window
    with pytest.raises(ValueError):
        RecentIds(0)


def test_malformed_payloads_are_errors_that_say_what_and_dead_letters_keep_the_payload() -> None:
    intake = Intake(Engine.from_source(PROGRAM, matcher="reference").types, max_bytes=100)
    assert intake.event(b'{"id": "e1", "type": "T", "attrs": {"x": 1}}').id == "e1"
    cases = {
        b"{oops": "invalid JSON",
        b'{"id": "e", "type": "T", "attrs": {"x": 1}, "id": "f"}': "duplicate key",
        b'{"type": "T", "attrs": {"x": 1}}': "needs an id",
        b'{"id": "e", "type": "U", "attrs": {}}': "U",
        b"\xc3": "not UTF-8",
        b"[" * 101: "longer than the limit of 100",
    }
    for payload, words in cases.items():
        with pytest.raises(EventError) as caught:
            intake.event(payload)
        assert words in str(caught.value)
        record = json.loads(dead_letter("nats://h/q", "subject q, stream Q seq 3", caught.value, payload))
        assert record["source"] == "nats://h/q" and record["where"] == "subject q, stream Q seq 3"
        assert words in record["error"] and not record["error"].startswith("line 1")
        assert record["payload_bytes"] == len(payload)
        assert record.get("payload", "").encode() == payload or record["payload_base64"] == "ww=="


@pytest.mark.parametrize(("scheme", "module"), [("nats", "nats"), ("mqtt", "paho")])
def test_a_missing_extra_is_one_line_naming_the_install(
    scheme: str, module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    program = tmp_path / "p.fdc"
    program.write_text(PROGRAM)
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if it were not installed
    monkeypatch.setitem(sys.modules, f"{module}.mqtt" if module == "paho" else module, None)
    monkeypatch.delitem(sys.modules, f"faidecs.connect.{scheme}", raising=False)
    code = main(["run", "--program", str(program), "--source", f"{scheme}://127.0.0.1:1/q", "--matcher", "reference"])
    assert code == 1
    assert capsys.readouterr().err == f"faidecs: install the {scheme} extra: pip install 'faidecs[{scheme}]'\n"


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--events", "e.jsonl", "--source", "nats://h/q"], "give --events or --source, not both"),
        ([], "give --events FILE or --source URL"),
        (["--events", "e.jsonl", "--sink", "nats://h/q"], "--sink needs --source"),
        (["--source", "nats://h/q", "--log", "run.jsonl"], "--log does not go with --source"),
        (["--source", "ftp://h/q"], "ftp://h/q: the scheme must be nats:// or mqtt://"),
    ],
)
def test_run_options_that_do_not_go_together(
    argv: list[str], problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = tmp_path / "p.fdc"
    program.write_text(PROGRAM)
    assert main(["run", "--program", str(program), "--matcher", "reference", *argv]) == 1
    assert problem in capsys.readouterr().err
