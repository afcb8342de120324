"""One ZooKeeper on loopback for every test of deployments of OS processes in a session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from faidecs.net.zkserver import ZooKeeperServer


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = ZooKeeperServer(data_dir=tmp_path_factory.mktemp("zookeeper"))
    server.start()
    yield server.address
    server.stop()
