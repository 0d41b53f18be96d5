"""Measuring on a Ray cluster (`--ray-address`): the driver's ClusterEngine (engine.cluster.engine), its
dispatcher of jobs to the nodes (engine.cluster.dispatch) and what runs on each node (engine.cluster.node).
Ray is an optional extra: nothing here is imported without `--ray-address`."""
