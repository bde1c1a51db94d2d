"""Subcommand groups of the `volratio` command line; see `volratio/cli.py`."""
