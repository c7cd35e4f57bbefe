#!/bin/sh
# Fan out N jobs, join them, then run a final step in the daemon.
#
#   PROMISED_SOCKET=/tmp/p.sock ./parallel-pipeline.sh 4
#   -> sum of squares of 1..4: 30
#
# Each job runs here under `promisectl run`, which settles its promise from the
# job's exit status and stdout (JSON). `promisectl all` joins the jobs into one
# promise whose value is the array of their values; `promisectl then` has the
# daemon run the final step with that array on stdin; `promisectl wait` prints
# the final value. A failing job rejects the join (fail-fast), so the final
# step never runs and `wait` exits 1.
#
# Environment: PROMISECTL (default: promisectl on PATH), PROMISED_SOCKET.
set -eu

promisectl=${PROMISECTL:-promisectl}
count=${1:-4}
run="pipeline/$$-$(date +%s)"   # ids unique to this run

# Create every job's promise first, so the join can name them all at once.
jobs=""
i=1
while [ "$i" -le "$count" ]; do
    "$promisectl" create "$run/job/$i" >/dev/null
    jobs="$jobs $run/job/$i"
    i=$((i + 1))
done

# Fan out: each job prints one JSON object, which becomes its promise's value.
i=1
while [ "$i" -le "$count" ]; do
    "$promisectl" run "$run/job/$i" -- \
        sh -c 'sleep 0.$1; printf "{\"job\":%d,\"square\":%d}\n" "$1" $(($1 * $1))' job "$i" >/dev/null &
    i=$((i + 1))
done

# Join, then let the daemon add up the squares once every job is fulfilled.
# shellcheck disable=SC2086 # word splitting of $jobs is intended
joined=$("$promisectl" all $jobs --id "$run/all")
final=$("$promisectl" then "$joined" --id "$run/sum" -- \
    sh -c 'grep -o "\"square\":[0-9]*" | cut -d: -f2 | awk "{ s += \$1 } END { print s }"')

sum=$("$promisectl" wait "$final" --timeout 60)
wait   # the background `promisectl run`s have finished once the join is fulfilled
echo "sum of squares of 1..$count: $sum"
