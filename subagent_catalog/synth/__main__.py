"""``python -m subagent_catalog.synth``: write a synthetic corpus."""

from subagent_catalog.synth.generate import main

if __name__ == "__main__":
    main()
