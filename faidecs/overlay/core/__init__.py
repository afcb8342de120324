"""The overlay's protocol core, sans I/O: merger replicas, subscriber clients, placement, the
coordination interface, admission and the latch input stage. Messages in, messages out; the
simulator and the runtime drive it (import contracts in pyproject.toml keep it free of I/O)."""
