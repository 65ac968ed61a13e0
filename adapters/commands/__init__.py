"""`tandem`'s subcommands, one module each; adapters/cli.py builds its parser
from them.

Every module here but `common.py` (what they share: exit codes, `CliError`,
`open_or_fail`, option types) is one subcommand, and defines the same names:

    NAME               the subcommand
    ORDER              its place in `tandem --help` (ties: by NAME)
    HELP               its line in `tandem --help`
    DESCRIPTION        the paragraph of `tandem NAME --help`
    EPILOG             what follows the options there (exit codes), or None
    configure(parser)  adds its arguments
    run(args)          does it: returns (exit 0) or raises `common.CliError`,
                       whose code is the exit code
"""

SUPPORT_MODULES = frozenset({"common"})  # modules here that are not subcommands
