"""``python -m contrastkit``: the same as the ``contrastkit`` console script."""

from contrastkit.cli import main

main()
