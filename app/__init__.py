"""SpecScope's desktop front end (PySide6 + pyqtgraph)."""
