"""The advisor: which drafter and settings to use for a target on this machine, its report,
its charts and its file."""
