"""`tandem`: the command line. Each subcommand is a module of
adapters/commands/ (NAME, ORDER, HELP, DESCRIPTION, EPILOG, `configure`,
`run`); this builds the parser from them, runs one and maps its errors to
exit codes.

Exit codes: 0 done; 1 the store or a file could not be used; 2 bad usage or a
bad trace (schema errors are printed as `line N: what is wrong`, at most 20,
and nothing is written to any store).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
from types import ModuleType
from typing import NoReturn

from tandem.adapters import commands
from tandem.adapters.commands.common import EXIT_OK, EXIT_USAGE, CliError
from tandem.adapters.store import store_url_help
from tandem.adapters.terminal import printable
from tandem.adapters.trace import TraceInvalid
from tandem.replay.input_errors import did_you_mean

DESCRIPTION = (
    "Tandem: the durable core of a foreground/background agent orchestrator. "
    "Inputs (JSON Lines traces, docs/contract/) are decided into immutable events "
    "in an append-only store; views are folds of those events."
)
EPILOG = f"Stores: {store_url_help}\nExit codes: 0 done, 1 store or file unusable, 2 bad usage or bad trace."


def command_modules() -> list[ModuleType]:
    """Every subcommand module of adapters/commands/, in ORDER (then NAME)."""
    modules = [
        importlib.import_module(f"{commands.__name__}.{info.name}")
        for info in pkgutil.iter_modules(commands.__path__)
        if info.name not in commands.SUPPORT_MODULES
    ]
    return sorted(modules, key=lambda module: (module.ORDER, module.NAME))


_invalid_choice = re.compile(r"invalid choice: '(?P<word>[^']*)' \(choose from (?P<choices>.*)\)$")


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose "invalid choice" (an unknown command, say)
    also names the closest choices: `invalid choice: 'deamon' (did you mean
    `daemon`?) (choose from ...)`."""

    def error(self, message: str) -> NoReturn:
        found = _invalid_choice.search(message)
        if found is not None:
            choices = re.findall(r"'([^']*)'", found["choices"])
            hint = did_you_mean(found["word"], choices)
            message = message[: found.start("word") + len(found["word"]) + 1] + hint + message[found.end("word") + 1 :]
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tandem", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in command_modules():
        sub = subcommands.add_parser(module.NAME, help=module.HELP, description=module.DESCRIPTION, epilog=module.EPILOG)
        module.configure(sub)
        sub.set_defaults(handler=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.handler(args)
    except TraceInvalid as invalid:
        for error in invalid.errors:
            print(printable(str(error)), file=sys.stderr)
        if invalid.total > len(invalid.errors):
            print(f"... and {invalid.total - len(invalid.errors)} more bad line(s)", file=sys.stderr)
        print(f"tandem: {printable(invalid.path)} is not a valid trace; nothing was written", file=sys.stderr)
        return EXIT_USAGE
    except CliError as error:
        print(f"tandem: {printable(str(error))}", file=sys.stderr)  # it may quote an input or a file name
        return error.code
    except BrokenPipeError:
        return EXIT_OK
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
