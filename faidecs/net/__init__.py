"""What the overlay's and the ordering layers' OS processes run on: the ZeroMQ/CurveZMQ transport
(given a codec by its user), key material, a standalone ZooKeeper, status files, process run logs,
and stopping child processes. Knows no protocol of its own."""
