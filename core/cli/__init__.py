"""The headless commands, one module each."""
