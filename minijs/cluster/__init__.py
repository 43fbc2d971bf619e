"""What the nodes of an in-process cluster share below every other floor: the simulated
network (:mod:`~minijs.cluster.network`), the one seam between nodes, and Raft
(:mod:`~minijs.cluster.raft`), the replicated log of the meta group and replicated streams.
Neither imports anything of minijs: the layers above hand them a clock, a seeded random
source and their state machines. The cluster itself (nodes, front door) is
:mod:`minijs.clustering`."""
