"""What each input kind does and where docs/contract/ specifies it: the
client's typed inputs (client/inputs.py) take their docstrings from here.

Written from the contract's tables ("Every kind at a glance" and "Kinds
added in v1.2" of docs/contract/README.md), and checked against them and
against the domain's kinds by tests/client/test_inputs.py: a kind added to
the domain without its row here, or a row that says otherwise than the
contract, fails there.
"""

from __future__ import annotations

# kind: (what it does, where docs/contract/ specifies it)
KIND_DOCS: dict[str, tuple[str, str]] = {
    "engine.configure": ("sets the engine's timings and batch size, before anything else", "docs/contract/authority.md#engineconfigure"),
    "policy.set": ("sets the policy every grant is intersected with", "docs/contract/authority.md#policyset"),
    "rule.set": ("a rule-scoped grant for lifecycle automation", "docs/contract/authority.md#ruleset"),
    "task.delegate": ("a task and its narrowed grant", "docs/contract/tasks.md#taskdelegate"),
    "task.revise": ("a new task revision; fences its pending actions", "docs/contract/tasks.md#taskrevise"),
    "grant.revise": ("a new grant revision; fences what it no longer allows", "docs/contract/authority.md#grantrevise"),
    "task.cancel": ("cancels the task, revokes its grant, cancels its actions", "docs/contract/tasks.md#taskcancel"),
    "task.complete": ("completes the task on evidence", "docs/contract/tasks.md#taskcomplete"),
    "question.raise": ("opens (or raises again) a question that holds work", "docs/contract/tasks.md#questionraise"),
    "question.answer": ("answers it, revises the task, lifts its holds", "docs/contract/tasks.md#questionanswer"),
    "action.propose": ("proposes a managed action", "docs/contract/actions.md#actionpropose"),
    "action.revalidate": ("puts a fenced action back to `pending` under current authority", "docs/contract/actions.md#actionrevalidate"),
    "action.cancel": ("cancels an action, or asks for its cancellation", "docs/contract/actions.md#actioncancel"),
    "executor.receipt": ("what the executor did with the latest attempt", "docs/contract/actions.md#executorreceipt"),
    "executor.reconcile": ("settles an `unknown` attempt", "docs/contract/actions.md#executorreconcile"),
    "executor.outcome": ("the action's outcome", "docs/contract/actions.md#executoroutcome"),
    "observe": ("one observation of a source", "docs/contract/inbox.md#observe"),
    "log.batch": ("change-log entries after the consumer's cursor", "docs/contract/consumer.md#logbatch"),
    "log.pruned": ("the log's deletion watermark", "docs/contract/consumer.md#logpruned"),
    "log.reconcile": ("the surviving facts that end a reconciliation", "docs/contract/consumer.md#logreconcile"),
    "triage.classify": ("the triage of one update revision", "docs/contract/inbox.md#triageclassify"),
    "conversation.open": ("a foreground or background conversation", "docs/contract/conversation.md#conversationopen"),
    "background.bind": ("binds a background to a foreground at a new generation", "docs/contract/conversation.md#backgroundbind"),
    "human.message": ("queues a message; raises the intent revision", "docs/contract/conversation.md#humanmessage"),
    "human.queue_edit": ("edits or withdraws a queued message", "docs/contract/conversation.md#humanqueue_edit"),
    "intent.synced": ("the intent revision the background has caught up with", "docs/contract/conversation.md#intentsynced"),
    "provider.receipt": ("what the provider did with a delivery", "docs/contract/conversation.md#providerreceipt"),
    "provider.reconcile": ("settles an `unknown` delivery", "docs/contract/conversation.md#providerreconcile"),
    "turn.ended": ("the running turn's end", "docs/contract/conversation.md#turnended"),
    "context.reset": ("a new context epoch, and a reseed", "docs/contract/conversation.md#contextreset"),
    "usage.report": ("tokens used by a conversation or an operation", "docs/contract/actions.md#usagereport"),
    "approval.required": ("an approval opens on a conversation", "docs/contract/conversation.md#approvalrequired"),
    "approval.resolved": ("the human resolves it", "docs/contract/conversation.md#approvalresolved"),
    "hold.failure": ("a failure hold on a conversation", "docs/contract/conversation.md#holdfailure"),
    "hold.release": ("releases it", "docs/contract/conversation.md#holdrelease"),
    "alert.seen": ("marks an alert seen", "docs/contract/alerts.md#alertseen"),
    "alert.resolve": ("resolves an alert", "docs/contract/alerts.md#alertresolve"),
    "watchdog.heartbeat": ("the watchdog is alive", "docs/contract/health.md#watchdogheartbeat"),
    "health.incident": ("opens a health incident", "docs/contract/alerts.md#healthincident"),
    "health.recovered": ("ends it", "docs/contract/alerts.md#healthrecovered"),
    "daemon.stop": ("the daemon stops, expectedly or not", "docs/contract/alerts.md#daemonstop"),
    "daemon.start": ("the daemon starts; after a crash, an incident", "docs/contract/alerts.md#daemonstart"),
    "scope.pause": ("no new automation in a task, or everywhere", "docs/contract/actions.md#scopepause"),
    "scope.resume": ("lifts the pause", "docs/contract/actions.md#scoperesume"),
    "card.propose": ("a suggestion for the human", "docs/contract/inbox.md#cardpropose"),
    "tick": ("time passes", "docs/contract/alerts.md#tick"),
    "tool_policy.set": ("a role's exact tool allowlist and read roots", "docs/contract/tools.md#tool_policyset"),
    "runtime.admit": ("admits a runtime before it starts, or refuses it", "docs/contract/tools.md#runtimeadmit"),
    "tool.request": ("a runner asks before each tool call: allowed or denied", "docs/contract/tools.md#toolrequest"),
    "evidence.attach": ("evidence for a succeeded action", "docs/contract/actions.md#evidenceattach"),
    "provider.readiness": ("a provider account is ready, or not", "docs/contract/health.md#providerreadiness"),
    "host.suspend": ("the host announces it goes to sleep", "docs/contract/health.md#hostsuspend--hostresume"),
    "host.resume": ("the host announces it has woken", "docs/contract/health.md#hostsuspend--hostresume"),
    "investigation.open": ("a background's bounded inquiry into a cause", "docs/contract/investigations.md#investigationopen"),
    "investigation.close": ("concludes, abandons or delegates it", "docs/contract/investigations.md#investigationclose"),
    "background.checkpoint": ("the background's sync cursor, evidence and bounded summary", "docs/contract/investigations.md#backgroundcheckpoint"),
    "delivery.composed": ("the exact payload of a delivery", "docs/contract/conversation.md#deliverycomposed"),
    "source.alias": ("one source is the same object as another", "docs/contract/reviews.md#sourcealias"),
}
