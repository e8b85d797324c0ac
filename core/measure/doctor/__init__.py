"""The pair doctor: whether a draft can draft for a target and what it would buy (the
rules llama.cpp checks, heads and MTP blocks, drafts of another vocabulary, the calibrated
estimate, the ranking of a user's models)."""
