#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser of outside input: the cargo-fuzz project in fuzz/
# (libFuzzer), on the stable toolchain. docs/reliability.md, "Fuzzing", lists the targets.
#
#   scripts/fuzz.sh TARGET SECONDS [LIBFUZZER_ARG…]   one campaign of TARGET, at nice 19, on one
#                                                      core; new inputs go to a work corpus
#                                                      (fuzz/target/work/TARGET), crashes to
#                                                      fuzz/artifacts/TARGET/; a summary last
#   scripts/fuzz.sh --campaign CPU_SECONDS [TARGET…]  each TARGET (default: all) until its process
#                                                      has used CPU_SECONDS of CPU time (user +
#                                                      system, not wall time: a campaign sharing
#                                                      its core still gets its whole budget), up
#                                                      to FUZZ_JOBS (default: the cores) at once,
#                                                      at nice 19; then --cmin; one summary line
#                                                      a target in fuzz/target/campaign.txt. The
#                                                      CPU time used is kept: a campaign cut short
#                                                      goes on from there when run again
#   scripts/fuzz.sh --smoke [SECONDS]                  every target for SECONDS (default 10)
#                                                      from its corpus, which is left unchanged
#   scripts/fuzz.sh --cmin TARGET                      rebuilds fuzz/corpus/TARGET: its named
#                                                      inputs (the starting ones, regressions),
#                                                      then the fewest inputs of it and of the
#                                                      work corpus, each at most 2 KiB, that
#                                                      reach every edge they reach
#   scripts/fuzz.sh --list                             the targets
#
# cargo-fuzz passes nightly flags (-Zsanitizer, -Cpasses=sancov-module…): on a stable toolchain
# RUSTC_BOOTSTRAP=1 lets the toolchain's own compiler take them. `cargo install cargo-fuzz` once.
# Builds are optimised, with debug assertions and overflow checks (-O -a). FUZZ_SANITIZER=none
# builds without AddressSanitizer (the default is address); FUZZ_NO_BUILD=1 runs the binaries
# already built, as they are.
set -euo pipefail
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/../fuzz"
export RUSTC_BOOTSTRAP=1
SANITIZER="${FUZZ_SANITIZER:-address}"

# The longest input (bytes) and the slowest input (seconds) each target is given.
max_len() {
  case "$1" in
    glob_pattern | calculator) echo 4096 ;;
    grep_pattern | provider_errors | agent_config | scripted_model | mcp_message) echo 8192 ;;
    *) echo 16384 ;;
  esac
}
TIMEOUT=10
RSS_LIMIT_MB=2048

targets() { sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^toolsmith-fuzz$'; }

need_cargo_fuzz() {
  if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is not installed: cargo install cargo-fuzz" >&2
    exit 1
  fi
}

build() {
  [ -n "${FUZZ_NO_BUILD:-}" ] && return
  need_cargo_fuzz
  echo "== cargo fuzz build (sanitizer: $SANITIZER)" >&2
  nice -n 19 cargo fuzz build -O -a -s "$SANITIZER" "$@" >&2
}

binary() {
  echo "target/$(rustc -vV | sed -n 's/^host: //p')/release/$1"
}

# The last statistics libFuzzer printed: `<runs> <cov> <ft> <corpus units>`.
stats() {
  local log="$1" runs cov ft corp
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  corp=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  echo "${runs:-?} ${cov:-?} ${ft:-?} ${corp:-?}"
}

# run TARGET SECONDS WORKDIR [ARG…]: libFuzzer on WORKDIR (written) and the corpus (read).
# With CPU_BUDGET set, SECONDS is CPU time over every segment of the campaign: what earlier
# segments used (and executed) is kept in WORKDIR.campaign, so a campaign ended with its session
# goes on where it was, from its work corpus, for the CPU time left.
run() {
  local target="$1" seconds="$2" work="$3"
  shift 3
  mkdir -p "$work" "artifacts/$target" target/logs
  local log="target/logs/$target.log" status=0 wall="$seconds" state="$work.campaign"
  local prior_cpu=0 prior_execs=0
  if [ -n "${CPU_BUDGET:-}" ]; then
    [ -f "$state" ] && read -r prior_cpu prior_execs <"$state"
    if [ "$prior_cpu" -ge "$seconds" ]; then
      echo "$target: its campaign is over ($prior_cpu s of CPU, $prior_execs execs)"
      return 0
    fi
    # The wall-time limit is only a backstop: cpu_limit interrupts the fuzzer (SIGINT:
    # libFuzzer prints its final statistics and exits 72) once the budget is spent.
    wall=$((seconds * 50))
  fi
  nice -n 19 "$(binary "$target")" "$work" "corpus/$target" \
    -max_total_time="$wall" -max_len="$(max_len "$target")" -timeout="$TIMEOUT" \
    -rss_limit_mb="$RSS_LIMIT_MB" -artifact_prefix="artifacts/$target/" -print_final_stats=1 \
    "$@" >"$log" 2>&1 &
  local pid=$! watcher="" cpu="" total=""
  if [ -n "${CPU_BUDGET:-}" ]; then
    cpu_limit "$pid" "$((seconds - prior_cpu))" "$log" "$state" "$prior_cpu" "$prior_execs" &
    watcher=$!
  fi
  wait "$pid" || status=$?
  local crashes
  crashes=$(find "artifacts/$target" -type f | wc -l)
  read -r runs cov ft corp <<<"$(stats "$log")"
  if [ -n "$watcher" ]; then
    wait "$watcher" || true
    read -r cpu _ <"$state"
    # The segment's exact count, now that libFuzzer has printed it.
    [ "$runs" != "?" ] && echo "$cpu $((prior_execs + runs))" >"$state"
    read -r cpu runs <"$state"
    total=" ($cpu s CPU)"
    # 72: libFuzzer's exit on SIGINT, the budget spent.
    [ "$status" -eq 72 ] && status=0
  fi
  # libFuzzer's timeout is wall time: a campaign at nice 19 starved by builds can overrun it on
  # an input that takes milliseconds. A timeout that does not happen again (the input run
  # alone, at normal priority) is put aside with its log, and the campaign goes on.
  if [ -n "${CPU_BUDGET:-}" ] && [ "$status" -eq 70 ] && starved "$target"; then
    echo "$target: a timeout that does not happen again (starved); going on" >&2
    run "$target" "$seconds" "$work" "$@"
    return
  fi
  printf '%-22s %4ss%s  execs %-10s cov %-6s ft %-6s corpus %-5s artifacts %s%s\n' \
    "$target" "$seconds" "$total" "$runs" "$cov" "$ft" "$corp" "$crashes" \
    "$([ "$status" -ne 0 ] && echo "  FAILED (exit $status): see fuzz/$log")"
  return "$status"
}

# starved TARGET: whether TARGET has timeout artifacts and each now runs within the timeout;
# they then go to target/logs/starved/, with the log that reported them.
starved() {
  local target="$1" input found=""
  for input in "artifacts/$target"/timeout-*; do
    [ -e "$input" ] || continue
    found=1
    timeout "$TIMEOUT" "$(binary "$target")" "$input" >/dev/null 2>&1 || return 1
  done
  [ -n "$found" ] || return 1
  mkdir -p target/logs/starved
  for input in "artifacts/$target"/timeout-*; do
    mv "$input" "target/logs/starved/$target-$(basename "$input")"
    cp "target/logs/$target.log" "target/logs/starved/$target-$(basename "$input").log"
  done
}

# cpu_limit PID SECONDS LOG STATE PRIOR_CPU PRIOR_EXECS: SIGINT to PID once its CPU time
# (utime + stime, every thread) reaches SECONDS. Every 5 s, STATE gets the campaign's CPU
# seconds and execs so far: the prior ones plus this process's (its execs as LOG last showed).
cpu_limit() {
  local pid="$1" limit="$2" log="$3" state="$4" prior_cpu="$5" prior_execs="$6"
  local tick used=0 fields execs
  tick=$(getconf CLK_TCK)
  while fields=$(cut -d')' -f2 "/proc/$pid/stat" 2>/dev/null); do
    # After the command name, fields 14 (utime) and 15 (stime) are the 12th and 13th.
    used=$(awk -v t="$tick" '{ printf "%d", ($12 + $13) / t }' <<<"$fields")
    execs=$(tail -c 4096 "$log" | grep -ao '^#[0-9]*' | tail -1 | tr -d '#' || true)
    echo "$((prior_cpu + used)) $((prior_execs + ${execs:-0}))" >"$state"
    if [ "$used" -ge "$limit" ]; then
      kill -INT "$pid" 2>/dev/null || true
      break
    fi
    sleep 5
  done
}

case "${1:-}" in
  --list)
    targets
    ;;
  --campaign)
    seconds="${2:?scripts/fuzz.sh --campaign CPU_SECONDS [TARGET…]}"
    shift 2
    list="${*:-$(targets)}"
    build
    export CPU_BUDGET=1
    jobs="${FUZZ_JOBS:-$(nproc)}"
    summary=target/campaign.txt
    for target in $list; do
      while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
      (
        line=$(run "$target" "$seconds" "target/work/$target" 2>&1) || true
        echo "$(date -u +%FT%TZ) $line" >>"$summary"
        FUZZ_NO_BUILD=1 "$SELF" --cmin "$target" >>"$summary" 2>&1 || echo "cmin $target failed" >>"$summary"
      ) &
    done
    wait
    cat "$summary"
    ;;
  --smoke)
    seconds="${2:-10}"
    build
    failed=0
    for target in $(targets); do
      work=$(mktemp -d)
      run "$target" "$seconds" "$work" || failed=1
      rm -rf "$work"
    done
    exit "$failed"
    ;;
  --cmin)
    target="${2:?scripts/fuzz.sh --cmin TARGET}"
    build "$target"
    kept=$(mktemp -d)
    small=$(mktemp -d)
    # Inputs libFuzzer added are named by their SHA-1; the others are kept whatever their size.
    find "corpus/$target" -type f -regextype posix-extended ! -regex '.*/[0-9a-f]{40}' \
      -exec cp {} "$kept/" \;
    find "corpus/$target" "target/work/$target" -type f -size -2049c -regextype posix-extended \
      -regex '.*/[0-9a-f]{40}' -exec cp {} "$small/" \; 2>/dev/null || true
    # Edges, not hit counts (-use_counters=0): the corpus stays small (docs/reliability.md).
    nice -n 19 "$(binary "$target")" -merge=1 -use_counters=0 -max_len="$(max_len "$target")" \
      -timeout="$TIMEOUT" -rss_limit_mb="$RSS_LIMIT_MB" "$kept" "$small" >/dev/null 2>&1
    rm -rf "corpus/$target" "$small"
    mv "$kept" "corpus/$target"
    chmod 755 "corpus/$target"
    echo "corpus/$target: $(find "corpus/$target" -type f | wc -l) files," \
      "$(du -s --apparent-size -k "corpus/$target" | cut -f1) KiB"
    ;;
  "" | -*)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
  *)
    target="$1"
    seconds="${2:?scripts/fuzz.sh TARGET SECONDS}"
    shift 2
    if ! targets | grep -qx "$target"; then
      echo "no target $target; the targets: $(targets | tr '\n' ' ')" >&2
      exit 2
    fi
    build "$target"
    run "$target" "$seconds" "target/work/$target" "$@"
    ;;
esac
