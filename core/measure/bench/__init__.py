"""Bench and sweeps: a measured speed-up (the lossless check), the sweeps over drafters,
lengths and workloads, their rows and reports, and the synthetic-acceptance curve."""
