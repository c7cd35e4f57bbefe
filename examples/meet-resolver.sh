#!/bin/sh
# The other of two unrelated scripts that meet on a well-known promise id.
# This one resolves it with a message (creating it if nobody did yet); any
# meet-waiter.sh waiting on the id wakes up with that message.
#
#   ./meet-resolver.sh "hello from the resolver"
#
# Environment: PROMISECTL (default: promisectl on PATH), PROMISED_SOCKET,
# MEETING_ID (default: examples/meeting-point).
# Exits 5 if the id was already settled by someone else.
set -eu

promisectl=${PROMISECTL:-promisectl}
id=${MEETING_ID:-examples/meeting-point}

"$promisectl" create "$id" --if-exists >/dev/null
"$promisectl" resolve "$id" --string "${1:-hello}"
