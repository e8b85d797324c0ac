"""What-ifs: one greedy run replayed under other drafters and settings (n-gram chains,
draft-simple from one pass of the draft), for the CLI and the window."""
