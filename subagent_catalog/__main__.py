"""``python -m subagent_catalog``: the command line."""

from subagent_catalog.cli import main

if __name__ == "__main__":
    main()
