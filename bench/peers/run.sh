#!/usr/bin/env bash
# The agent loop against its peers: builds every client (release), starts the mock model on
# loopback, and prints for 1, 8 and 64 tools each client's CPU per run (getrusage user + system
# of the client process over the measured runs, divided by the runs: the best of ROUNDS
# alternating rounds) and instructions per run (callgrind: the instructions of CG_RUNS * 3 runs
# less those of CG_RUNS runs, divided by CG_RUNS * 2, so start-up and warm-up cancel out), each
# with its ratio to the floor (the hand-written loop).
#
# Where the processes run decides the figures: unpinned, the kernel put the mock on the
# client's core in one session and on the other core in the next, and the floor's CPU per run
# went from 81 to 264 µs (each wake-up of a client on an idle core finds its caches cold). So
# both are pinned: `PLACE=same` (the default) runs the mock and the client on CPU 0, taking
# turns; `PLACE=apart` runs the mock on CPU 1 and the client on CPU 0. Instruction counts do
# not depend on it.
#
#   bench/peers/run.sh                      # everything
#   CLIENTS="floor toolsmith" bench/peers/run.sh
#   PLACE=apart CG_RUNS=0 bench/peers/run.sh          # the mock on the other core
#   AT_ONCE=8 CG_RUNS=0 bench/peers/run.sh            # 8 runs at a time on the client's thread
#                                                     # (callgrind always runs them one by one)
#   RUNS=500 ROUNDS=1 CG_RUNS=0 bench/peers/run.sh    # quick, no callgrind
#
# A client that does not build is reported and left out; the others still run.
set -euo pipefail
cd "$(dirname "$0")"

CLIENTS=${CLIENTS:-"floor toolsmith toolsmith-wire rig genai siumai"}
TOOLS=${TOOLS:-"1 8 64"}
RUNS=${RUNS:-3000}
WARMUP=${WARMUP:-300}
ROUNDS=${ROUNDS:-3}
CG_RUNS=${CG_RUNS:-20}
PLACE=${PLACE:-same}
BIN=target/release

case "$PLACE" in
same) mock_cpu=0 ;;
apart) mock_cpu=1 ;;
*) echo "PLACE is same or apart, not $PLACE" >&2; exit 2 ;;
esac
# Prefixes, not functions: a function run in the background is a subshell, and `$!` would
# name it instead of the mock the trap must kill.
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
    on_mock=(taskset -c "$mock_cpu")
    on_client=(taskset -c 0)
    placed="$PLACE (mock on CPU $mock_cpu, client on CPU 0)"
else
    on_mock=()
    on_client=()
    placed="unpinned (taskset or a second core missing): figures depend on the scheduler"
fi

built=()
for client in mock $CLIENTS; do
    # One package at a time: a package's dependency features are its own (toolsmith's
    # `preserve_order` for serde_json does not reach the floor or the peers).
    if cargo build --release --locked --quiet -p "peers-$client" 2>"/tmp/peers-build-$client.log"; then
        [ "$client" = mock ] || built+=("$client")
    else
        echo "!! $client does not build here (see /tmp/peers-build-$client.log); left out" >&2
        [ "$client" = mock ] && exit 1
    fi
done

url_file=$(mktemp)
"${on_mock[@]}" "$BIN/mock" >"$url_file" &
mock=$!
trap 'kill $mock 2>/dev/null; rm -f "$url_file"' EXIT
for _ in $(seq 50); do [ -s "$url_file" ] && break; sleep 0.1; done
url=$(cat "$url_file")
echo "mock model at $url; clients: ${built[*]}; $RUNS runs after $WARMUP, ${AT_ONCE:-1} at a time, best of $ROUNDS rounds"
echo "$(rustc --version); $(nproc) cores; $(uname -r); placement: $placed"

declare -A cpu instr
field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p"; }

for tools in $TOOLS; do
    for round in $(seq "$ROUNDS"); do
        for client in "${built[@]}"; do
            us=$("${on_client[@]}" "$BIN/$client" "$url" "$tools" "$RUNS" "$WARMUP" | field cpu_us_per_run)
            best=${cpu[$client,$tools]:-}
            if [ -z "$best" ] || awk "BEGIN{exit !($us < $best)}"; then
                cpu[$client,$tools]=$us
            fi
        done
    done
    if [ "$CG_RUNS" -gt 0 ] && command -v valgrind >/dev/null; then
        for client in "${built[@]}"; do
            collected() {
                env -u AT_ONCE valgrind --tool=callgrind --callgrind-out-file=/dev/null \
                    "$BIN/$client" "$url" "$tools" "$1" 5 2>&1 >/dev/null |
                    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
            }
            few=$(collected "$CG_RUNS")
            many=$(collected $((CG_RUNS * 3)))
            instr[$client,$tools]=$(((many - few) / (CG_RUNS * 2)))
        done
    fi
done

ratio() { awk "BEGIN{printf \"%.2f\", $1 / $2}"; }
printf '\n%-14s %5s %14s %8s %16s %8s\n' client tools "CPU µs/run" "÷ floor" "instructions/run" "÷ floor"
for tools in $TOOLS; do
    for client in "${built[@]}"; do
        c=${cpu[$client,$tools]}
        i=${instr[$client,$tools]:-}
        cr=-; ir=-
        [ -n "${cpu[floor,$tools]:-}" ] && cr=$(ratio "$c" "${cpu[floor,$tools]}")
        [ -n "$i" ] && [ -n "${instr[floor,$tools]:-}" ] && ir=$(ratio "$i" "${instr[floor,$tools]}")
        printf '%-14s %5s %14s %8s %16s %8s\n' "$client" "$tools" "$c" "$cr" "${i:--}" "$ir"
    done
done
