"""`python -m phalanx ...` runs the `phalanx` command (see phalanx.cli.main)."""

from phalanx.cli.main import main

if __name__ == "__main__":
    main()
