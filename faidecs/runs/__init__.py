"""Runs: run logs (format ``faidecs.runlog/1``), replaying an event log through the engine, and
several subscriber processes over one total order. What the property checker reads."""
