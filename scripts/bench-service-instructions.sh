#!/usr/bin/env bash
# The service bench's SQLite server under callgrind: user-space instructions per run.
#
#   scripts/bench-service-instructions.sh [BENCH_BINARY]
#
# Time per run on a shared 2-core machine moves by ±15 % from one run to the next; instructions
# do not, so this is how two builds of the service are compared (docs/benchmarks.md, "The harness
# service"). The bench starts its server under callgrind (SERVICE_BENCH_WRAP); after a 25 s
# warm-up the profile is zeroed, 15 s later dumped, and the runs in between are counted from the
# server's store (one thread per run). The background checkpoint is counted apart: it works per
# interval, not per run. Needs valgrind and python3. Without BENCH_BINARY, the bench is built
# first.
set -euo pipefail
cd "$(dirname "$0")/.."

bench=${1:-}
if [[ -z $bench ]]; then
  bench=$(cargo bench -p toolsmith-server --bench service --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "service" and m.get("executable"):
        print(m["executable"])')
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

SERVICE_BENCH_WRAP="valgrind --tool=callgrind --callgrind-out-file=$out/callgrind.%p" \
  "$bench" 40 8 >"$out/bench.log" 2>&1 &
bench_pid=$!
# The server under valgrind takes a while to start: wait for it and its database.
pid='' db=''
for _ in $(seq 60); do
  pid=$(pgrep -nf "valgrind.*__serve sqlite" || true)
  [[ -n $pid ]] && db=$(readlink /proc/"$pid"/fd/* 2>/dev/null | grep -m1 '\.db$' || true)
  [[ -n $db ]] && break
  sleep 1
done
[[ -n $db ]] || { echo "the bench's server did not start" >&2; exit 1; }
sleep 20
threads() {
  python3 -c 'import sqlite3,sys
c = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
print(c.execute("select count(*) from threads").fetchone()[0])' "$db"
}
callgrind_control -z "$pid" >/dev/null 2>&1
before=$(threads)
sleep 15
callgrind_control -d "$pid" >/dev/null 2>&1
sleep 2
after=$(threads)
# The profile is written: the rest of the bench is not needed.
kill "$bench_pid" "$pid" 2>/dev/null || true
wait 2>/dev/null || true
profile="$out/callgrind.$pid.1"
annotated=$(callgrind_annotate --inclusive=yes --threshold=100 "$profile" 2>/dev/null)
total=$(awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}' <<<"$annotated")
# The background checkpoint works per interval, not per run: under valgrind the runs are some
# thirty times slower, so its share of a run would be thirty times what it is. Counted apart.
checkpoint=$(awk '/:sqlite3Checkpoint / {gsub(",", "", $1); print $1; exit}' <<<"$annotated")
runs=$((after - before))
echo "runs: $runs; instructions per run: $(((total - ${checkpoint:-0}) / runs)) (the background checkpoint apart: $((${checkpoint:-0} / 15)) a second)"
