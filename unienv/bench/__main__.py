"""`python -m unienv.bench`: the raw engine, the backend and the env, side by side in one run."""

from unienv.bench import main
from unienv.tools import cli

cli.run(main)  # a user's mistake: one line, no traceback (--debug shows it)
