"""``python -m mm2ctl``: the same entry point as the ``mm2ctl`` command."""

from mm2ctl.cli.main import main

if __name__ == "__main__":
    main()
