"""Every exception faidecs defines derives from :class:`faidecs.errors.FaidecsError`, so that a
caller can catch all of faidecs's errors with one clause. The test imports every module of the
package and looks at every class defined there (nested ones included): a new exception class that
derives from ``Exception`` directly fails it."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
from collections.abc import Iterator
from types import ModuleType

import faidecs
from faidecs.errors import FaidecsError
from tests.extras import missing_extra


def _modules() -> Iterator[ModuleType]:
    for info in pkgutil.walk_packages(faidecs.__path__, "faidecs."):
        if info.name.rsplit(".", 1)[-1] == "__main__":  # runs the command line when imported
            continue
        try:
            yield importlib.import_module(info.name)
        except ModuleNotFoundError as exc:
            if missing_extra(exc) is None:  # a module that needs a missing extra is not looked at
                raise


def _classes(owner: object, module: str) -> Iterator[type]:
    for value in vars(owner).values():
        if inspect.isclass(value) and value.__module__ == module and value is not owner:
            yield value
            yield from _classes(value, module)


def _exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module in _modules():
        for cls in _classes(module, module.__name__):
            if issubclass(cls, BaseException):
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return found


def test_every_exception_of_faidecs_derives_from_faidecs_error() -> None:
    exceptions = _exceptions()
    # The walk does find the package's exceptions, in every layer.
    for known in [
        "faidecs.errors.ProgramError",
        "faidecs.cli.inputs.CliError",
        "faidecs.ordering.network.NetworkError",
        "faidecs.overlay.sim.simulator.SimulationError",
        "faidecs.fieldpath.BadField",
    ]:
        assert known in exceptions
    if importlib.util.find_spec("cryptography") is not None:  # the overlay extra
        assert "faidecs.overlay.runtime.udp.UdpError" in exceptions
    stray = sorted(n for n, cls in exceptions.items() if not issubclass(cls, FaidecsError))
    assert stray == []


def test_errors_that_were_runtime_errors_still_are() -> None:
    from faidecs.ordering.network import NetworkError
    from faidecs.overlay.core.replica import ProtocolError
    from faidecs.overlay.sim.simulator import SimulationError

    assert issubclass(ProtocolError, RuntimeError)
    assert issubclass(SimulationError, RuntimeError)
    assert issubclass(NetworkError, RuntimeError)
