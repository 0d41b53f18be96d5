"""Tuning a whole model workload by workload: workload keys and the tuner."""
