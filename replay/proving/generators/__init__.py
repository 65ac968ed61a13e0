"""The fuzzers' input generators: each draws one trace line of one input kind
from what exists now (`universe.Builder.state`), over a small universe of
ids, so that most inputs apply and the rejections that happen are the
interesting ones. `kinds.KINDS` maps every kind to its generator and weight;
`kinds.traces()` is a Hypothesis strategy of whole well-formed traces.

- universe.py: the ids, the preambles, the `Builder`, the shared draws;
- work.py: tasks, grants, questions, rules, actions, executor receipts and
  outcomes, usage, heartbeats, scopes, policy;
- sources.py: observations, triage, the change log (contract section 3.4);
- conversations.py: conversations, deliveries, turns, approvals, holds,
  health, alerts (contract section 5 and 6);
- kinds.py: the weighted table and `traces()`;
- owners.py: a second foreground, its tasks, and both owners' messages and
  turns around maintenance work (contract v1.2 section 8.1's scope).
"""
