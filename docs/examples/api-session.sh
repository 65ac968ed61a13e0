#!/usr/bin/env bash
# The curl session of docs/api.md, run for real: serves the bundled example
# (tandem demo --serve) on a fresh SQLite store in a scratch folder, then
# prints each command (as `$ ...`) and what it printed. tests/e2e/test_api_doc.py
# runs it and checks that docs/api.md shows this output (tokens, times and the
# port aside).
#
#   bash docs/examples/api-session.sh            # from a checkout, .venv set up
#   TANDEM="tandem" PORT=8765 bash docs/examples/api-session.sh
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
TANDEM="${TANDEM:-$here/.venv/bin/tandem}"
PORT="${PORT:-8765}"
scratch="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$scratch"' EXIT
cd "$scratch"

show() { printf '$ %s\n' "$1"; printf '%s\n\n' "$(bash -c "$1" 2>&1 || true)"; }

"$TANDEM" demo --serve --store sqlite:///demo.db --listen "127.0.0.1:$PORT" >served.txt 2>server.log &
server=$!
for _ in $(seq 1 100); do grep -q '^stop with' served.txt 2>/dev/null && break; sleep 0.1; done
printf '$ tandem demo --serve --store sqlite:///demo.db\n'
cat served.txt
printf '\n'

export U="http://127.0.0.1:$PORT"
token() { jq -r ".tokens[] | select(.actor == \"$1\") | .token" tandem-demo-tokens.json; }
export H="Authorization: Bearer $(token human)"
export B="Authorization: Bearer $(token background)"
export J="Content-Type: application/json"
cat <<'SHOWN'
$ U=http://127.0.0.1:8765 J="Content-Type: application/json"
$ token() { jq -r ".tokens[] | select(.actor == \"$1\") | .token" tandem-demo-tokens.json; }
$ H="Authorization: Bearer $(token human)" B="Authorization: Bearer $(token background)"

SHOWN

show 'curl -s $U/v1/health'
show 'curl -s -H "$H" $U/v1/views/actions | jq -c ".position, (.rows[] | {operation_id, state, attempts})"'
show 'curl -s -H "$H" -H "$J" $U/v1/inputs -d '"'"'{"type": "human.message", "conversation_id": "fg", "message_id": "m2", "text": "Is signup done?"}'"'"' | jq -c ".position, .results[]"'
show 'curl -s -H "$B" -H "$J" $U/v1/inputs -d '"'"'{"type": "task.cancel", "task_id": "signup"}'"'"' | jq -c ".results[] | {accepted, reason}"'
show 'curl -s -H "$B" -H "$J" $U/v1/inputs -d '"'"'{"type": "task.cancel", "actor": "human", "task_id": "signup"}'"'"''
show 'curl -s -H "$H" "$U/v1/events?after=75&limit=2" | jq -c "(.events[] | {position, type, input}), .next_after"'
show 'curl -s -H "$H" $U/v1/explain/op-form | jq -r ".matches[0].steps[] | \"\(.position) \(.event) (line \(.input.line)): \(.summary)\""'
show 'curl -s -H "$H" "$U/v1/views/tasks?at=30" | jq -c ".position, (.rows[] | {task_id, state, actions})"'
show 'curl -s -H "$H" -H "$J" $U/v1/whatif -d '"'"'{"edits": [{"op": "insert_after", "input": 22, "value": {"type": "grant.revise", "at": "2026-03-01T09:55:40Z", "actor": "background", "grant_id": "g-signup", "expected_revision": 1, "allowed_operations": ["worker.start", "worker.test", "scm.push"]}}]}'"'"' | jq -c ".edits, .first_divergence, (.views[] | {view, added})"'
show 'curl -s -H "$H" -H "$J" $U/v1/whatif -d '"'"'{"edits": [{"op": "drop", "input": 5}, {"op": "set", "input": 5, "field": "generation", "value": 2}]}'"'"''
show 'curl -s -N -m 1 -H "$H" -H "Last-Event-ID: 71" $U/v1/stream'
show 'curl -s -H "$H" -X DELETE $U/v1/views'
show 'curl -s "$U/v1/views?token=$(jq -r ".tokens[0].token" tandem-demo-tokens.json)"'
