"""The entity records the decision state holds, gathered: each area declares
its own in `domain/<area>/state.py` (a grant, a task, an action and its
attempts, a conversation and its messages, turns and deliveries, an inbox
update, a consumer, an alert, an obligation, ...), re-exported here
(`records.Action` is domain/actions/state.py's); this module keeps the one
record no area owns, a trace's ingest progress.

A record's `state` starts where its lifecycle starts (`TASK.initial`, ...) and
moves only as its events say (`after`). Records are plain data: the indexes
over them are the State's (domain/state.py). They are pickled in snapshots,
so their modules are part of the snapshot fingerprint.
"""

from __future__ import annotations

from dataclasses import dataclass

from tandem.domain.authority.state import *  # noqa: F403
from tandem.domain.tasks.state import *  # noqa: F403
from tandem.domain.actions.state import *  # noqa: F403
from tandem.domain.inbox.state import *  # noqa: F403
from tandem.domain.reviews.state import *  # noqa: F403
from tandem.domain.consumer.state import *  # noqa: F403
from tandem.domain.conversation.state import *  # noqa: F403
from tandem.domain.conversation.state import *  # noqa: F403
from tandem.domain.alerts.state import *  # noqa: F403
from tandem.domain.budgets.state import *  # noqa: F403
from tandem.domain.tools.state import *  # noqa: F403
from tandem.domain.health.state import *  # noqa: F403
from tandem.domain.investigations.state import *  # noqa: F403



@dataclass(slots=True)
class TraceProgress:
    line: int
    offset: int
    digest: str

