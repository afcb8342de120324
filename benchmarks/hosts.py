"""Many hosts on one machine: a deployment's processes in network namespaces, one per host.

    sudo .venv/bin/python benchmarks/hosts.py --quick      # 4 server hosts, 10 subscribers
    sudo .venv/bin/python benchmarks/hosts.py              # 4 server hosts, 50 subscribers
    sudo .venv/bin/python benchmarks/hosts.py --subscribers 100 --subscriber-hosts 5 --delay 20 --jitter 60

Each host is a network namespace (``ip netns``) with one veth into a bridge in the root namespace
(addresses 10.N.0.0/16: the bridge .0.1, server hosts 10.N.1.k, subscriber hosts 10.N.2.k,
publisher hosts 10.N.3.k). Servers get a host each; subscribers are spread over the subscriber
hosts, several processes per host; the publisher has its own. ZooKeeper listens on the bridge's
address in the root namespace, so every namespace reaches it. Processes start inside their host's
namespace (``ip netns exec``, LocalDeployment's ``prefix``); each link crosses two veths and the
bridge, the kernel's whole network stack. A link's bandwidth can be capped with ``tbf`` on both
ends of each host's veth (``--bandwidth``).

Delay: this machine's kernel has no ``sch_netem`` (nor ``fq``), and no module can be loaded, so
the delay and jitter of each link are emulated in the transport instead: the deployment's
``[emulation]`` table (``link_delay_ms``, ``link_jitter_ms``) makes every process hold each frame
it sends until ``max(the link's previous due time, now + delay + uniform(0, jitter))``, FIFO per
link as TCP under netem (faidecs/net/transport.py, ``LinkDelay``). ``--delay 1 --jitter 4``: 1 to
5 ms per hop, a LAN; ``--delay 20 --jitter 60``: 20 to 80 ms, a WAN. What that covers and what
it does not: docs/performance.md ("Many hosts on one machine").

The namespaces, the bridge and every process are removed at the end, on an error, on Ctrl-C and
on SIGTERM (try/finally and atexit); names carry this process's pid (``fdh<pid>-<host>``), and
leftovers of a run whose pid is gone are removed first.

Measured, per ordering (faidecs' overlay, a single sequencer, Raft), in one run of this command:
scenario C of the dissertation's workload (benchmarks/papers_workload.py), an unthrottled
publisher, and for each subscriber the events that reached its engines per second (``fed``, from
the first publication to when its last event reached its engines); latency (publication of a
relation's last event to its delivery) at a steady rate in a second run; the processes' resident
memory. Writes hosts.json and hosts.md to ``--out``.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from deployed import _records, measure, scratch  # noqa: E402
from papers_workload import Workload  # noqa: E402

from faidecs.net.certificates import create_keys  # noqa: E402
from faidecs.overlay.runtime.launcher import LaunchError, LocalDeployment  # noqa: E402

PREFIX = "fdh"  # every namespace, bridge and veth this module makes starts with it


class HostsError(RuntimeError):
    """Namespaces that cannot be made (not root, no ``ip``): says what failed."""


def _ip(*args: str, check: bool = True) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise HostsError(f"ip {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done.stdout


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _owner(name: str) -> int | None:
    """The pid in a name this module made (``fdh<pid>-host``, ``fdhb<pid>``), or None."""
    rest = name[len(PREFIX) :].lstrip("bv")
    digits = rest.split("-", 1)[0].split("x", 1)[0]
    return int(digits) if digits.isdigit() else None


def netns_names() -> list[str]:
    return [line.split()[0] for line in _ip("netns", "list", check=False).splitlines() if line.strip()]


def clean_leftovers() -> list[str]:
    """Remove the namespaces and bridges of earlier runs whose process is gone (killed before its
    cleanup ran), with any process still running in them; the names removed."""
    removed = []
    for ns in netns_names():
        owner = _owner(ns) if ns.startswith(PREFIX) else None
        if owner is None or _alive(owner):
            continue
        for pid in _ip("netns", "pids", ns, check=False).split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        _ip("netns", "del", ns, check=False)
        removed.append(ns)
    for line in _ip("-o", "link", "show", "type", "bridge", check=False).splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        owner = _owner(name) if name.startswith(PREFIX + "b") else None
        if owner is not None and not _alive(owner):
            _ip("link", "del", name, check=False)
            removed.append(name)
    return removed


def netns_permitted() -> str | None:
    """None when this process may make network namespaces; otherwise why not."""
    if os.geteuid() != 0:
        return "making network namespaces needs root (ip netns)"
    try:
        done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    except FileNotFoundError:
        return "no ip command (iproute2)"
    if done.returncode != 0:
        return f"ip netns: {done.stderr.strip()}"
    probe = f"{PREFIX}{os.getpid()}-probe"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"ip netns add: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _free_subnet() -> int:
    """N such that no interface has an address in 10.N.0.0/16 (N from 200 up)."""
    used = _ip("-o", "-4", "addr", "show", check=False)
    for n in range(200, 250):
        if f" 10.{n}." not in used:
            return n
    raise HostsError("no free 10.N.0.0/16 subnet between 10.200 and 10.249")


@dataclass
class Hosts:
    """Network namespaces, one per host, on one bridge; ``with Hosts(...) as hosts:`` makes them
    and removes them (also at interpreter exit, on an error, Ctrl-C or SIGTERM).

    ``groups``: host name -> group number (1: servers, 2: subscribers, 3: publishers); host k of
    group g gets 10.N.g.k. ``bandwidth_mbit``: a tbf rate on both ends of each host's veth."""

    groups: dict[str, int]
    bandwidth_mbit: float | None = None
    tag: str = field(default_factory=lambda: str(os.getpid()))
    subnet: int = 0
    addresses: dict[str, str] = field(default_factory=dict)
    made: list[str] = field(default_factory=list)
    bridge: str = ""

    def netns(self, host: str) -> str:
        return f"{PREFIX}{self.tag}-{host}"

    @property
    def bridge_address(self) -> str:
        return f"10.{self.subnet}.0.1"

    def prefix(self, host: str) -> list[str]:
        """The words that run a command in ``host``'s namespace."""
        return ["ip", "netns", "exec", self.netns(host)]

    def up(self) -> Hosts:
        why = netns_permitted()
        if why is not None:
            raise HostsError(why)
        clean_leftovers()
        atexit.register(self.down)
        self.subnet = self.subnet or _free_subnet()
        self.bridge = f"{PREFIX}b{self.tag}"
        _ip("link", "add", self.bridge, "type", "bridge")
        self.made.append(self.bridge)
        _ip("addr", "add", f"{self.bridge_address}/16", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        counts: dict[int, int] = {}
        for k, (host, group) in enumerate(self.groups.items()):
            counts[group] = counts.get(group, 0) + 1
            if counts[group] > 254:
                raise HostsError(f"more than 254 hosts in group {group}")
            address = f"10.{self.subnet}.{group}.{counts[group]}"
            ns = self.netns(host)
            veth = f"{PREFIX}v{self.tag}x{k}"
            if len(veth) > 15:
                raise HostsError(f"interface name {veth} is longer than 15 characters")
            _ip("netns", "add", ns)
            self.made.append(ns)
            _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("link", "set", veth, "master", self.bridge, "up")
            _ip("-n", ns, "addr", "add", f"{address}/16", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            if self.bandwidth_mbit:
                for where in ([*self.prefix(host), "tc"], ["tc"]):
                    dev = "eth0" if len(where) > 1 else veth
                    burst = max(32 * 1024, int(self.bandwidth_mbit * 1e6 / 8 / 100))  # 10 ms at the rate
                    subprocess.run(
                        [*where, "qdisc", "add", "dev", dev, "root", "tbf"]
                        + ["rate", f"{self.bandwidth_mbit}mbit", "burst", str(burst), "latency", "100ms"],
                        check=True,
                        capture_output=True,
                    )
            self.addresses[host] = address
        return self

    def down(self) -> None:
        """Kill what still runs in the namespaces, then remove them and the bridge (idempotent)."""
        atexit.unregister(self.down)
        for name in reversed(self.made):
            if name == self.bridge:
                _ip("link", "del", name, check=False)
                continue
            for pid in _ip("netns", "pids", name, check=False).split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), signal.SIGKILL)
            _ip("netns", "del", name, check=False)
        self.made.clear()

    def __enter__(self) -> Hosts:
        previous = signal.getsignal(signal.SIGTERM)
        self._previous_sigterm = previous

        def interrupted(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt(f"signal {signum}")

        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, interrupted)
        try:
            return self.up()
        except BaseException:
            self.down()
            raise

    def __exit__(self, *exc: object) -> None:
        self.down()
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._previous_sigterm)


# --- a deployment over hosts --------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """Which host runs which process: servers one per host, subscribers round robin over the
    subscriber hosts, the publisher on its own."""

    servers: list[str]
    subscribers: list[str]
    subscriber_hosts: int
    publishers: tuple[str, ...] = ("p1",)

    def host_of(self) -> dict[str, str]:
        out = {s: f"srv{k}" for k, s in enumerate(self.servers, start=1)}
        out |= {s: f"sub{k % self.subscriber_hosts + 1}" for k, s in enumerate(self.subscribers)}
        out |= {p: f"pub{k}" for k, p in enumerate(self.publishers, start=1)}
        return out

    def groups(self) -> dict[str, int]:
        group = {"srv": 1, "sub": 2, "pub": 3}
        return {h: group[h[:3]] for h in dict.fromkeys(self.host_of().values())}


def write_hosts_deployment(
    folder: Path,
    workload: Workload,
    events: int,
    layout: Layout,
    addresses: dict[str, str],
    *,
    ordering: str,
    replicas: int,
    rate: float,
    delay_ms: float,
    jitter_ms: float,
    name: str,
    session_ms: int = 4000,
    heartbeat_ms: int | None = None,
) -> Path:
    """A deployment file with each process at its host's address, the workload's program and
    events, and the link delay in ``[emulation]``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "program.fdc").write_text(workload.program())
    (folder / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in workload.events(events)))
    host = layout.host_of()
    port: dict[str, int] = {}
    for k, s in enumerate(layout.subscribers):
        port[s] = 7100 + k
    lines = [
        f'name = "{name}"',
        'program = "program.fdc"',
        f"replicas = {replicas}",
        'keys = "keys"',
        f'ordering = "{ordering}"',
        "",
        "[timing]",
        f"session_timeout = {session_ms}",
        *([f"heartbeat_every = {heartbeat_ms}"] if heartbeat_ms else []),
        "",
        "[emulation]  # benchmarking aid: emulated link delay (no netem in this kernel)",
        f"link_delay_ms = {delay_ms}",
        f"link_jitter_ms = {jitter_ms}",
        "seed = 1",
        "",
        "[servers]",
        *(f'{s} = "tcp://{addresses[host[s]]}:7001"' for s in layout.servers),
        "",
    ]
    for s in layout.subscribers:
        lines += [
            f"[subscribers.{s}]",
            f'address = "tcp://{addresses[host[s]]}:{port[s]}"',
            f'subscription = "{s}"',
            "",
        ]
    for p in layout.publishers:
        lines += [
            f"[publishers.{p}]",
            f'address = "tcp://{addresses[host[p]]}:7200"',
            'events = "events.jsonl"',
            f"rate = {rate}",
            "",
        ]
    (folder / "deployment.toml").write_text("\n".join(lines))
    create_keys(folder / "keys", [*layout.servers, *layout.subscribers, *layout.publishers])
    return folder / "deployment.toml"


class Memory:
    """Samples the resident memory of a run's processes (their pids in run.json) every second."""

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.peak_total = 0
        self.peak: dict[str, int] = {}
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Memory:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.thread.join()

    def _loop(self) -> None:
        while not self.stopping.wait(1.0):
            self.sample()

    def sample(self) -> None:
        try:
            pids = json.loads((self.run_dir / "run.json").read_text()).get("pids", {})
        except (OSError, ValueError):
            return
        total = 0
        for name, pid in pids.items():
            rss = _rss(pid)
            total += rss
            self.peak[name] = max(self.peak.get(name, 0), rss)
        self.peak_total = max(self.peak_total, total)

    def figures(self, servers: list[str], subscribers: list[str]) -> dict[str, Any]:
        mib = 1 << 20
        subs = [self.peak.get(s, 0) for s in subscribers]
        return {
            "peak_total_mib": round(self.peak_total / mib),
            "server_max_mib": round(max((self.peak.get(s, 0) for s in servers), default=0) / mib),
            "subscriber_mean_mib": round(statistics.mean(subs) / mib) if subs else 0,
            "subscriber_max_mib": round(max(subs, default=0) / mib),
        }


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def per_subscriber(run_dir: Path, subscribers: list[str]) -> dict[str, Any]:
    """Each subscriber's throughput: the events that reached its engines per second, from the
    first publication to when its last one reached them (its final status's ``fed``, ``fed_at``)."""
    first = min(r["time"] for r in _records(run_dir / "logs" / "p1.runlog", "publish")) / 1e9
    rates, fed = {}, {}
    for s in subscribers:
        status = json.loads((run_dir / "status" / f"{s}.json").read_text())
        fed[s] = status.get("fed", 0)
        seconds = status.get("fed_at", 0.0) - first
        rates[s] = fed[s] / seconds if fed[s] and seconds > 0 else 0.0
    values = list(rates.values())
    return {
        "fed_per_s_mean": round(statistics.mean(values), 1),
        "fed_per_s_median": round(statistics.median(values), 1),
        "fed_per_s_min": round(min(values), 1),
        "fed_mean": round(statistics.mean(fed.values()), 1),
        "fed_total": sum(fed.values()),
        "fed_per_s": {s: round(r, 1) for s, r in rates.items()},
    }


def staged_start(run: LocalDeployment, batch: int = 10, timeout: float = 180) -> None:
    """Start the servers, then the subscribers ``batch`` at a time, then the publishers, each
    stage once the previous one is up: dozens of processes registering with ZooKeeper at once on
    two cores take longer than a process waits to register (30 s)."""
    d = run.deployment
    for name in d.servers:
        run.start_process(name)
    run.wait_for(lambda s: all(n in s for n in d.servers), timeout, "the servers to register")
    names = list(d.subscribers)
    for k in range(0, len(names), batch):
        part = names[k : k + batch]
        for name in part:
            run.start_process(name)
        run.wait_for(lambda s, part=part: all(s.get(n, {}).get("started") for n in part), timeout, "subscribers")
    for name in d.publishers:
        run.start_process(name)


ORDERINGS = {"faidecs": ("overlay", 3), "sequencer": ("sequencer", 1), "raft": ("raft", 3)}


def run_ordering(
    hosts: Hosts,
    zookeeper: str,
    layout: Layout,
    workload: Workload,
    label: str,
    *,
    events: int,
    rate: float,
    delay_ms: float,
    jitter_ms: float,
    name: str,
    heartbeat_ms: int | None = None,
) -> dict[str, Any]:
    """One deployment of ``label``'s ordering over the hosts; its figures."""
    ordering, replicas = ORDERINGS[label]
    path = write_hosts_deployment(
        scratch(),
        workload,
        events,
        layout,
        hosts.addresses,
        ordering=ordering,
        replicas=replicas,
        rate=rate,
        delay_ms=delay_ms,
        jitter_ms=jitter_ms,
        name=name,
        heartbeat_ms=heartbeat_ms,
    )
    host = layout.host_of()
    started = time.monotonic()
    with Memory(path.parent / "run") as memory:
        figures = measure(
            zookeeper,
            path,
            quiet_s=3.0,
            prefix=lambda process: hosts.prefix(host[process]),
            start=staged_start,
        )
    figures["wall_s"] = round(time.monotonic() - started, 1)
    figures["per_subscriber"] = per_subscriber(path.parent / "run", layout.subscribers)
    figures["memory"] = memory.figures(layout.servers, layout.subscribers)
    figures["folder"] = str(path.parent)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10 subscribers, fewer events")
    parser.add_argument("--servers", type=int, default=4, help="server hosts (one server each)")
    parser.add_argument("--subscribers", type=int, help="subscribers (default 50; 10 with --quick)")
    parser.add_argument("--subscriber-hosts", type=int, default=5, help="hosts the subscribers are spread over")
    parser.add_argument("--events", type=int, help="events of the throughput run (default 3000; 1000 with --quick)")
    parser.add_argument("--rate", type=float, default=50, help="events/s of the latency run (0: no latency run)")
    parser.add_argument("--delay", type=float, default=1.0, help="ms of emulated delay per hop")
    parser.add_argument("--jitter", type=float, default=4.0, help="ms of uniform jitter on top of --delay")
    parser.add_argument("--bandwidth", type=float, help="Mbit/s per host link (tbf); default: none")
    parser.add_argument("--orderings", default=",".join(ORDERINGS), help=f"of {', '.join(ORDERINGS)}")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--heartbeat-ms", type=int, help="[timing] heartbeat_every of every ordering (default: 20)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    subscribers = args.subscribers or (10 if args.quick else 50)
    events = args.events or (1000 if args.quick else 3000)
    labels = [x.strip() for x in args.orderings.split(",") if x.strip()]
    unknown = [x for x in labels if x not in ORDERINGS]
    if unknown:
        parser.error(f"--orderings: {unknown[0]} is not one of {', '.join(ORDERINGS)}")
    workload = Workload("C", subscribers=subscribers, seed=args.seed)
    layout = Layout(
        servers=[f"m{k}" for k in range(1, args.servers + 1)],
        subscribers=list(workload.conjunctions),
        subscriber_hosts=min(args.subscriber_hosts, subscribers),
    )
    began = time.monotonic()
    rows: list[dict[str, Any]] = []
    from faidecs.net.zkserver import ZooKeeperServer

    with Hosts(layout.groups(), bandwidth_mbit=args.bandwidth) as hosts:
        print(f"hosts: {json.dumps(hosts.addresses)}; bridge {hosts.bridge_address}", flush=True)
        with ZooKeeperServer(host=hosts.bridge_address, max_session_ms=20_000) as zk:
            for k, label in enumerate(labels):
                row: dict[str, Any] = {"ordering": label}
                try:
                    row["throughput"] = run_ordering(
                        hosts,
                        zk.address,
                        layout,
                        workload,
                        label,
                        events=events,
                        rate=0,
                        delay_ms=args.delay,
                        jitter_ms=args.jitter,
                        name=f"hosts{k}t",
                        heartbeat_ms=args.heartbeat_ms,
                    )
                    if args.rate:
                        row["latency"] = run_ordering(
                            hosts,
                            zk.address,
                            layout,
                            workload,
                            label,
                            events=max(200, int(args.rate * (5 if args.quick else 10))),
                            rate=args.rate,
                            delay_ms=args.delay,
                            jitter_ms=args.jitter,
                            name=f"hosts{k}l",
                            heartbeat_ms=args.heartbeat_ms,
                        )
                except LaunchError as exc:  # one ordering that does not come up must not lose the others
                    row["error"] = str(exc).splitlines()[0]
                print(json.dumps(_brief(row)), flush=True)
                rows.append(row)
    result = {
        "machine": _machine(),
        "scenario": "C",
        "seed": args.seed,
        "servers": args.servers,
        "subscribers": subscribers,
        "subscriber_hosts": layout.subscriber_hosts,
        "events": events,
        "rate": args.rate,
        "delay_ms": args.delay,
        "jitter_ms": args.jitter,
        "bandwidth_mbit": args.bandwidth,
        "heartbeat_ms": args.heartbeat_ms,
        "quick": args.quick,
        "wall_s": round(time.monotonic() - began, 1),
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    name = "hosts-quick" if args.quick else "hosts"
    (args.out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / f"{name}.md").write_text(markdown(result))
    print(markdown(result))


def _brief(row: dict[str, Any]) -> dict[str, Any]:
    out = {"ordering": row["ordering"], **({"error": row["error"]} if "error" in row else {})}
    for kind in ("throughput", "latency"):
        if kind in row:
            r = row[kind]
            out[kind] = {
                "events_per_s": r["events_per_s"],
                "fed_per_s_mean": r["per_subscriber"]["fed_per_s_mean"],
                "latency_ms": r["latency_ms"],
                "memory": r["memory"],
                "wall_s": r["wall_s"],
            }
    return out


def _machine() -> dict[str, Any]:
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory = 0
    with contextlib.suppress(OSError, ValueError):
        memory = int(Path("/proc/meminfo").read_text().split()[1]) * 1024
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(memory / (1 << 30), 1),
        "kernel": os.uname().release,
    }


def markdown(r: dict[str, Any]) -> str:
    m = r["machine"]
    bandwidth = f"{r['bandwidth_mbit']:g} Mbit/s per host link" if r["bandwidth_mbit"] else "no bandwidth cap"
    lines = [
        f"Scenario C of the dissertation's workload (seed {r['seed']}), {r['servers']} server hosts, "
        f"{r['subscribers']} subscribers on {r['subscriber_hosts']} hosts, one publisher host: one network "
        f"namespace per host on a bridge, link delay {r['delay_ms']:g} + uniform(0, {r['jitter_ms']:g}) ms per "
        f"hop emulated in the transport (no netem in this kernel), "
        f"{bandwidth}, heartbeat_every {r.get('heartbeat_ms') or 20} ms; "
        f"{m['cpu']} ({m['cores']} cores, {m['memory_gib']} GiB), kernel {m['kernel']}. Throughput: "
        f"{r['events']:,} events from an unthrottled publisher; per subscriber, the events that reached its "
        f"engines per second, from the first publication to its last event's arrival; latency under load: "
        f"in that run. Latency: a second run at {r['rate']:g} events/s (publication of a relation's last "
        f"event to its delivery). Whole command: {r['wall_s']:.0f} s.\n",
        "| ordering | fed/s per subscriber (mean / median / min) | vs faidecs | events/s | "
        "latency p50 / p99 (ms) | under load p50 (ms) | peak RSS, all processes (MiB) | per subscriber (MiB) | "
        "per server (MiB) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    base = next(
        (
            x["throughput"]["per_subscriber"]["fed_per_s_mean"]
            for x in r["rows"]
            if x["ordering"] == "faidecs" and "throughput" in x
        ),
        0,
    )
    for x in r["rows"]:
        if "throughput" not in x:
            lines.append(f"| {x['ordering']} | did not run: {x.get('error', '')} |  |  |  |  |  |  |  |")
            continue
        t = x["throughput"]
        p = t["per_subscriber"]
        ratio = base / p["fed_per_s_mean"] if p["fed_per_s_mean"] else 0
        lat = x.get("latency", {}).get("latency_ms", {})
        latency = f"{lat.get('p50')} / {lat.get('p99')}" if lat else ""
        loaded = t["latency_ms"].get("p50", "")
        mem = t["memory"]
        lines.append(
            f"| {x['ordering']} | "
            f"{p['fed_per_s_mean']:,.0f} / {p['fed_per_s_median']:,.0f} / {p['fed_per_s_min']:,.0f} | "
            f"{'' if x['ordering'] == 'faidecs' else f'faidecs {ratio:.2f}x'} | {t['events_per_s']:,} | {latency} | "
            f"{loaded} | "
            f"{mem['peak_total_mib']:,} | "
            f"{mem['subscriber_mean_mib']} (max {mem['subscriber_max_mib']}) | "
            f"{mem['server_max_mib']} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
