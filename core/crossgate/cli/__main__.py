"""``python -m crossgate.cli``: the same as the ``crossgate`` command."""

from crossgate.cli import main

main()
