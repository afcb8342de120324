"""An asyncio application that is one subscriber of an overlay deployment (docs/deploy.md,
"Subscribers in an asyncio application").

    python examples/async_subscriber.py deployment.toml s2 --run-dir run/

It runs subscriber ``s2`` of the deployment inside its event loop and prints each delivery as a
JSON line; SIGTERM or Ctrl-C stops it as they stop a ``faidecs overlay node``. ZooKeeper is the
deployment's, or the one ``faidecs overlay up deployment.toml --run-dir run/`` started.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal

from faidecs.overlay import AsyncSubscriber


async def main(deployment: str, process: str, run_dir: str) -> None:
    async with AsyncSubscriber(deployment, process, run_dir=run_dir) as subscriber:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, lambda: asyncio.ensure_future(subscriber.stop()))
        await subscriber.started()
        print(json.dumps({"started": process}), flush=True)
        async for delivery in subscriber:  # ends once the subscriber is stopped
            line = {"id": delivery.id, "conjunction": delivery.conjunction, "relation": delivery.relation}
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("deployment")
    parser.add_argument("process")
    parser.add_argument("--run-dir", required=True)
    args = parser.parse_args()
    asyncio.run(main(args.deployment, args.process, args.run_dir))
