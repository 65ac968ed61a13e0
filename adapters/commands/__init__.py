"""More `tandem` subcommands, one module each, found by adapters/cli.py.

A module defines NAME (the subcommand), HELP (one line for `tandem --help`),
DESCRIPTION (for `tandem NAME --help`), ORDER (its place in the list),
`configure(parser)` (its arguments) and `run(args)`, which raises
`adapters.cli.CliError` (or returns: exit 0).
"""
