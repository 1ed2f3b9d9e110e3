"""Run command-line cases in this one process, each as `python <script> <args>` would: a fresh
Hydra, the environment restored, stderr captured; print each case's exit status and stderr as
JSON. An exception that escapes the script is printed as the traceback the user would see.

    python tests/hardening/cli_driver.py '[["play.py", ["num_envs=0"], null], ...]'

A script "-m unienv" runs the module, as `python -m unienv` does. The third field names a module to make unimportable for that case (an extra not installed).
"""

import contextlib
import io
import json
import os
import runpy
import sys
import traceback

from hydra.core.global_hydra import GlobalHydra


def run(script: str, args: list[str], blocked: str | None) -> tuple[object, str]:
    environ, modules = dict(os.environ), dict(sys.modules)
    if blocked:
        sys.modules[blocked] = None
    sys.argv = [script, *args]
    GlobalHydra.instance().clear()
    err = io.StringIO()
    status: object = 0
    with contextlib.redirect_stderr(err):
        try:
            if script.startswith("-m "):  # python -m <module>
                runpy.run_module(script[3:], run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(script, run_name="__main__")
        except SystemExit as e:
            status = e.code
        except BaseException:
            traceback.print_exc()
            status = "uncaught"
    os.environ.clear()
    os.environ.update(environ)
    if blocked:
        sys.modules.clear()
        sys.modules.update(modules)
    return status, err.getvalue()


if __name__ == "__main__":
    print(json.dumps([run(*case) for case in json.loads(sys.argv[1])]))
