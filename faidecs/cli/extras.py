"""The optional extras and the third-party packages they install: a command that needs a missing
one says so in one line (``pip install 'faidecs[overlay]'``) instead of a traceback.

>>> missing_extra(ModuleNotFoundError("No module named 'zmq'", name="zmq"))
'overlay'
>>> print(missing_extra_message(ModuleNotFoundError(name="zmq.auth"), "overlay keys"))
faidecs: overlay keys needs the overlay extra (zmq is not installed): pip install 'faidecs[overlay]'
>>> missing_extra(ModuleNotFoundError("No module named 'nothere'", name="nothere")) is None
True
"""

from __future__ import annotations

#: top-level package -> the extra of pyproject.toml that installs it
EXTRA_OF = {
    "zmq": "overlay",
    "kazoo": "overlay",
    "cryptography": "overlay",
    "pysyncobj": "overlay",
    "pyspark": "spark",
    "prometheus_client": "metrics",
    "nats": "nats",
    "paho": "mqtt",
    # faidecs compare's plots and rich tables (matplotlib is in the bench extra too)
    "matplotlib": "compare",
    "rich": "compare",
}

#: what an extra needs besides its Python packages
BESIDES = {"spark": " (and Java 17)"}


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """The extra whose package ``exc`` did not find, or None for any other missing module."""
    return EXTRA_OF.get((exc.name or "").split(".")[0])


def missing_extra_message(exc: ModuleNotFoundError, command: str) -> str | None:
    """The one line for ``faidecs COMMAND`` failing on ``exc``, or None if no extra installs it."""
    extra = missing_extra(exc)
    if extra is None:
        return None
    package = (exc.name or "").split(".")[0]
    return (
        f"faidecs: {command} needs the {extra} extra ({package} is not installed): "
        f"pip install 'faidecs[{extra}]'{BESIDES.get(extra, '')}"
    )


__all__ = ["BESIDES", "EXTRA_OF", "missing_extra", "missing_extra_message"]
