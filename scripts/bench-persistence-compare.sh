#!/usr/bin/env bash
# Durability's cost per tool call on SQLite: toolsmith against the OpenAI Agents SDK's
# SQLiteSession, in the same run (docs/benchmarks.md, "Persistence"). Needs Python 3 and
# PyPI; not part of scripts/test.sh.
#
# toolsmith: `cargo bench -p toolsmith-store --bench persistence` (`per_tool_call`: the step's
# save with the call's intent and key claim, then the outcome with the result's save: two
# commits, exactly-once). The SDK: bench/agents-sdk/persistence.py (one `add_items` with the
# call and its output: one commit, nothing recorded before the tool runs).
#
# Usage: scripts/bench-persistence-compare.sh [SECONDS]
#   SECONDS  measured time per side and round for the SDK (default 3)
#   ROUNDS   (environment) rounds, alternating the sides (default 3); each side's best round
#            is kept, so a burst of load from elsewhere does not decide the ratio
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-3}"
rounds="${ROUNDS:-3}"
venv="${XDG_CACHE_HOME:-$HOME/.cache}/toolsmith/bench-agents-sdk"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check openai-agents==0.24.0
fi
cargo bench -p toolsmith-store --bench persistence --no-run --quiet 2>/dev/null

# Criterion's mean of a benchmark, in microseconds.
ours() {
  cargo bench -p toolsmith-store --bench persistence --quiet -- "sqlite/$1\$" 2>/dev/null |
    awk '/time:/ { v = $4; u = $5; if (u == "ns") v /= 1000; if (u == "ms") v *= 1000; print v; exit }'
}

best_ours="" best_in_step="" best_full="" best_normal=""
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b < a) ? b : a }'; }
for round in $(seq "$rounds"); do
  echo "== round $round/$rounds: toolsmith" >&2
  best_ours="$(min "$best_ours" "$(ours per_tool_call)")"
  best_in_step="$(min "$best_in_step" "$(ours per_call_in_step)")"
  echo "== round $round/$rounds: OpenAI Agents SDK" >&2
  while read -r line; do
    us="$(echo "$line" | "$venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["per_call_us"])')"
    case "$line" in
      *FULL*) best_full="$(min "$best_full" "$us")" ;;
      *) best_normal="$(min "$best_normal" "$us")" ;;
    esac
  done < <("$venv/bin/python" bench/agents-sdk/persistence.py "$seconds")
done

printf '| per tool call, SQLite | µs | commits | vs toolsmith |\n|---|---:|---:|---:|\n'
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f×", a / b }'; }
printf '| toolsmith, a call in a step of its own | %.0f | 2 | 1.00× |\n' "$best_ours"
printf '| toolsmith, a further call of a step | %.0f | 2 | %s |\n' "$best_in_step" "$(ratio "$best_in_step" "$best_ours")"
printf '| Agents SDK SQLiteSession, synchronous=NORMAL | %.0f | 1 | %s |\n' "$best_normal" "$(ratio "$best_normal" "$best_ours")"
printf '| Agents SDK SQLiteSession, as shipped (FULL) | %.0f | 1 | %s |\n' "$best_full" "$(ratio "$best_full" "$best_ours")"
