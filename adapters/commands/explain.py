"""`tandem explain ID --store URL [--kind KIND] [--json]`: why something is
in its current state, walked over the provenance the events record (spec
section 8). The logic is `replay.explain`; this is its command line."""

from __future__ import annotations

import argparse
import sys

from tandem.adapters.commands.common import EXIT_USAGE, CliError, open_or_fail, store_url_default
from tandem.adapters.terminal import printable
from tandem.replay.explain import KINDS, ExplainError, document, encode_json, render_text

NAME = "explain"
ORDER = 20
HELP = "why an operation, attempt, delivery, turn, alert, question, task, obligation, cause, runtime, investigation or consumer is as it is"
DESCRIPTION = (
    "Walk the store's log for ID and print the causal chain that produced its current state: each decision "
    "(position, event, resulting state) with the input that caused it (seq, trace file and line, type, input id) "
    "and the facts it relied on (task, grant and policy revisions, prerequisite outcomes, heartbeat, question holds, "
    "binding generation), then what it is waiting for. ID may be an operation id, an attempt (op/a1), a delivery "
    "(fg/d2), a turn (fg/t2), an alert (urgent:...), a question (task_id/question_key), a task id, an obligation "
    "(its operation id), a cause key, a reconciliation (consumer/r1), a runtime (bg-codex), an investigation (inv-flaky) or a change-log consumer (scm); an id that names several of these is "
    "explained once per kind, unless --kind picks one. Nothing is re-decided: see docs/explain.md."
)
EPILOG = "Exit codes: 0 explained; 1 the store could not be used, or nothing in it is named ID; 2 bad usage."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", metavar="ID", help="what to explain")
    parser.add_argument("--store", default=store_url_default, metavar="URL", help=f"default {store_url_default}")
    parser.add_argument("--kind", choices=KINDS, help="explain ID only as this kind")
    parser.add_argument("--json", action="store_true", help="print the explanation as JSON (docs/explain.md)")


def run(args: argparse.Namespace) -> None:
    if not args.id.strip():
        raise CliError("ID is empty", EXIT_USAGE)
    with open_or_fail(args.store, read_only=True) as store:
        try:
            explained = document(store, args.id, kind=args.kind)
        except ExplainError as error:
            raise CliError(str(error)) from error
    if args.json:
        sys.stdout.write(encode_json(explained).decode() + "\n")
    else:
        sys.stdout.write(render_text(explained, printable))  # input text escaped, never raw
