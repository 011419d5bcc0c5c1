"""``python -m attnprimer`` runs the CLI."""

import sys

from attnprimer.cli import main

if __name__ == "__main__":
    sys.exit(main())
