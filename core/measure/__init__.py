"""Costs, calibration, sweeps, statistics and the lossless check."""
