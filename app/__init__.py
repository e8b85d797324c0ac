"""SpecScope's desktop front end (PySide6 + pyqtgraph).

Needs PySide6 < 6.12 on Python 3.11 (pinned in pyproject.toml): 6.12's
wrappers drop a reference to None/True/False on every signal emission and
void call there, and Python aborts after a few thousand of them.
"""
