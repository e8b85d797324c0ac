"""Data shipped with SpecScope: the demo model pair, example prompts."""
