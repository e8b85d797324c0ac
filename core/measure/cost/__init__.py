"""The cost model and the measurements it stands on: the textbook and calibrated models,
the calibration of a pair on this machine and its cache, break-even, and the cost of distance."""
