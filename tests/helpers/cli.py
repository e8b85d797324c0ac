"""The command line in tests."""

from __future__ import annotations

from specscope.core.cli.main import main


def doctor(capsys, *argv):
    """``specscope doctor ARGV...``: (exit status, stdout, stderr)."""
    code = main(["doctor", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err
