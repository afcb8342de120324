"""The overlay as OS processes: the node (server, subscriber, publisher), the wire format and
codec, the deployment file, the launcher, ZooKeeper membership, UDP publishers, and the Raft
ordering baseline a deployment may choose instead of the mergers."""
