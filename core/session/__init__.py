"""A run's record, its baseline and the run controller."""
