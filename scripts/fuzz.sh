#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser of outside input: the cargo-fuzz project in fuzz/
# (libFuzzer), on the stable toolchain. docs/reliability.md, "Fuzzing", lists the targets.
#
#   scripts/fuzz.sh TARGET SECONDS [LIBFUZZER_ARG…]   one campaign of TARGET, at nice 19, on one
#                                                      core; new inputs go to a work corpus
#                                                      (fuzz/target/work/TARGET), crashes to
#                                                      fuzz/artifacts/TARGET/; a summary last
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
run() {
  local target="$1" seconds="$2" work="$3"
  shift 3
  mkdir -p "$work" "artifacts/$target" target/logs
  local log="target/logs/$target.log" status=0
  nice -n 19 "$(binary "$target")" "$work" "corpus/$target" \
    -max_total_time="$seconds" -max_len="$(max_len "$target")" -timeout="$TIMEOUT" \
    -rss_limit_mb="$RSS_LIMIT_MB" -artifact_prefix="artifacts/$target/" -print_final_stats=1 \
    "$@" >"$log" 2>&1 || status=$?
  local crashes
  crashes=$(find "artifacts/$target" -type f | wc -l)
  read -r runs cov ft corp <<<"$(stats "$log")"
  printf '%-22s %4ss  execs %-10s cov %-6s ft %-6s corpus %-5s artifacts %s%s\n' \
    "$target" "$seconds" "$runs" "$cov" "$ft" "$corp" "$crashes" \
    "$([ "$status" -ne 0 ] && echo "  FAILED (exit $status): see fuzz/$log")"
  return "$status"
}

case "${1:-}" in
  --list)
    targets
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
