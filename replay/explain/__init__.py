"""`explain`: why something is in its current state, from the recorded links.

Every event the engine decides by itself names the input that caused it
(`cause`, the seq of the `InputAccepted`/`InputRejected` that opens its
transaction, which carries the trace file, line and input id) and the facts it
relied on (docs/contract/README.md, "Provenance"; `domain/events.py`, `domain/provenance.py`).
This package walks those links over a store's log and re-decides nothing: it
never runs `decide`, `evolve` or the pass. A fact names what it relied on by
key (a task, grant or policy revision, an operation, a question, a heartbeat,
a binding generation...); the key leads to the event that established it (the
latest one with that key at or before the fact's position), and so to its
input; and, for a thing that can change, to its latest event in the log
("now").

    explanations = explain(store, "op-form")            # one per kind that matches
    explanations = explain(store, "op-form", kind="operation")
    print(render_text(document(store, "op-form")))      # or encode_json(...), to_json(...)

An id may be an operation, an attempt (`op/a1`), a delivery (`fg/d2`), a
turn (`fg/t2`), an alert (`urgent:…`), a question (`task_id/question_key`),
a task, an obligation (its operation id), a cause key, a reconciliation
(`consumer/r1`), a runtime, an investigation or a change-log consumer (`scm`). An id that is several of these (an operation and its
obligation share an id) is explained once per kind, in `KINDS` order.

The modules: `model` (the JSON model), `keys` (both directions of
domain/keys.py: an event's keys, a key kind's event types for the byte
prefilter), `log` (the log reader and the `Resolver`), `now` (states from the
lifecycles), `facts` and `blocks` (fact builders), `chain` (the walk every
kind shares: event type -> renderer), one module per family of kinds
(`operations`, `conversations`, `alerts`, `tasks`, `causes`), `walk` (which
kinds an id names, the reads), `indexed` (the same reads through a
`LogIndex`) and `render` (text and JSON).

Cost: two or three reads of the log (the thing's own events, then the events
its facts name), holding only those events: explain is a diagnostic, off the
hot path. With `document(store, id, index=LogIndex)` (replay/index.py) it
reads only the events it keeps, fetched by position, whatever the log's
length; the output is the same, as of the index's head.
"""

from __future__ import annotations

from tandem.replay.explain.blocks import block_fact_facts
from tandem.replay.explain.keys import event_keys
from tandem.replay.explain.model import (
    Current,
    Document,
    ExplainError,
    Explanation,
    Fact,
    InputRef,
    Link,
    Source,
    Waiting,
)
from tandem.replay.explain.render import encode_json, render_text, to_json
from tandem.replay.explain.walk import KINDS, document, explain

__all__ = [
    "KINDS",
    "Current",
    "Document",
    "ExplainError",
    "Explanation",
    "Fact",
    "InputRef",
    "Link",
    "Source",
    "Waiting",
    "block_fact_facts",
    "document",
    "encode_json",
    "event_keys",
    "explain",
    "render_text",
    "to_json",
]
