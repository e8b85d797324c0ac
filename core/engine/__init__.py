"""The speculative round, drafters, sampling and acceptance rules."""
