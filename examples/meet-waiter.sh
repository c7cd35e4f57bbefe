#!/bin/sh
# One of two unrelated scripts that meet on a well-known promise id.
# This one waits: it may start before or after meet-resolver.sh, and even
# before anyone created the id (the daemon answers the wait once the promise
# is created and settled).
#
#   ./meet-waiter.sh &          # prints "got: hello from the resolver"
#   ./meet-resolver.sh "hello from the resolver"
#
# Environment: PROMISECTL (default: promisectl on PATH), PROMISED_SOCKET,
# MEETING_ID (default: examples/meeting-point), MEETING_TIMEOUT (seconds, default 60).
# Exits with `promisectl wait`'s status: 1 rejected, 2 cancelled, 3 timed out.
set -eu

promisectl=${PROMISECTL:-promisectl}
id=${MEETING_ID:-examples/meeting-point}

message=$("$promisectl" wait "$id" --timeout "${MEETING_TIMEOUT:-60}" --raw)
echo "got: $message"
