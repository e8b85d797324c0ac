"""The bundle's one executable (packaging/specscope.spec): ``specscope [ARGS]`` does what the
installed ``specscope`` script does (the window by default, ``run``, ``doctor``, ...).

``specscope -m specscope.core.MODULE ARGS`` runs that module as ``python -m`` would: the crash
probe and the quantizer start themselves as ``[sys.executable, "-m", MODULE, ...]``, and in the
bundle ``sys.executable`` is this program. Only SpecScope's own modules run this way.
"""

import runpy
import sys


def main() -> int:
    if len(sys.argv) >= 3 and sys.argv[1] == "-m":
        module = sys.argv[2]
        if not module.startswith("specscope."):
            print(f"specscope: error: -m {module}: the bundle runs only SpecScope's own modules",
                  file=sys.stderr)
            return 2
        sys.argv = [sys.argv[0], *sys.argv[3:]]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return 0
    from specscope.app.main import cli
    return cli()


if __name__ == "__main__":
    sys.exit(main())
