#!/usr/bin/env bash
# The sandbox attack suites once more, as an unprivileged user.
#
# `cargo test` runs them as whoever runs it; in CI that is root, for whom the kernel skips
# some checks (RLIMIT_NPROC, namespace permissions). When this script runs as root and
# `setpriv` exists, it copies the compiled test binaries that hold the sandbox's attack suites
# (`fs_attacks`, `exec_attacks`, `loopback_attacks`, `degraded`, `read_allowlist`, `cgroup`,
# `spare_helper`) and the built-in tools' hardening (`run_code`, `run_code_worker`,
# `file_guards`, `grep_glob`, `grep_cancel`), the `toolsmith-sandbox-exec` helper and the `toolsmith-run-code-worker` into a
# temporary directory and runs each suite as uid/gid 65534 (nobody) with a clean environment,
# TOOLSMITH_SANDBOX_HELPER and TOOLSMITH_RUN_CODE_WORKER pointing at the copies and TMPDIR at a
# directory only that user can write. Otherwise it says why it skips the pass.
#
# Output: one summary line per suite, then, as the very last line, `N passed, M failed` summed
# over everything it ran. Exits non-zero on any failure. Each suite is limited to
# $ATTACK_SUITE_TIMEOUT seconds (default 60); a normal pass takes ~15 s.
#
# Usage: scripts/attack-suite.sh   (from anywhere; honours CARGO_TARGET_DIR)
set -uo pipefail
cd "$(dirname "$0")/.."

UID_NOBODY=65534
LIMIT="${ATTACK_SUITE_TIMEOUT:-60}"
# One suite a line: its name, the package and the test target (binary) that hold it, and the
# test name filter that selects it in that binary (`-`: every test of the binary).
SUITES=(
    "fs_attacks       toolsmith-sandbox   it               fs_attacks::"
    "exec_attacks     toolsmith-sandbox   it               exec_attacks::"
    "loopback_attacks toolsmith-sandbox   it               loopback_attacks::"
    "degraded         toolsmith-sandbox   it               degraded::"
    "read_allowlist   toolsmith-sandbox   it               read_allowlist::"
    "cgroup           toolsmith-sandbox   it               cgroup::"
    "spare_helper     toolsmith-sandbox   spare_helper     -"
    "run_code         toolsmith-builtins  it               run_code::"
    "run_code_worker  toolsmith-builtins  it               run_code_worker::"
    "file_guards      toolsmith-builtins  it               file_guards::"
    "grep_glob        toolsmith-builtins  it               grep_glob::"
    "grep_cancel      toolsmith-builtins  it               grep_cancel::"
)
# The programs the test binaries need besides themselves.
PROGRAMS=(toolsmith-sandbox-exec toolsmith-run-code-worker)

echo "== unprivileged attack suite (uid $UID_NOBODY)"

skip() {
    echo "attack suite: skipping the unprivileged pass: $1"
    echo "0 passed, 0 failed"
    exit 0
}

if [ "$(id -u)" != 0 ]; then
    skip "not running as root (uid $(id -u)), so cargo test already ran the suites unprivileged"
fi
command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"
command -v python3 >/dev/null || skip "python3 (needed to read cargo's JSON) is not installed"

work="$(mktemp -d /tmp/toolsmith-attack.XXXXXX)"
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir -m 755 "$work/bin" "$work/logs"
mkdir -m 700 "$work/tmp"
chown "$UID_NOBODY:$UID_NOBODY" "$work/tmp"

# The same build as `cargo test --workspace` (scripts/test.sh), so this is a no-op there: with
# `-p toolsmith-sandbox` cargo would unify features differently and build a second copy.
if ! cargo test --workspace --locked --no-run --message-format=json \
    >"$work/cargo.json" 2>"$work/cargo.err"; then
    cat "$work/cargo.err"
    echo "attack suite: cargo could not build the test binaries"
    echo "0 passed, 1 failed"
    exit 1
fi

# The test binaries as "package:target", each once.
targets=()
for suite in "${SUITES[@]}"; do
    read -r _ package target _ <<<"$suite"
    [[ " ${targets[*]} " == *" $package:$target "* ]] || targets+=("$package:$target")
done

# "package:target path" for the test binaries, "name path" for the programs (bin targets, not
# their unit tests).
python3 - "$work/cargo.json" "${PROGRAMS[@]}" -- "${targets[@]}" >"$work/binaries" <<'EOF'
import json, re, sys
args = sys.argv[2:]
programs, wanted = set(args[: args.index("--")]), set(args[args.index("--") + 1 :])
packages = {t.split(":")[0] for t in wanted}


def package(msg):
    pid = msg.get("package_id", "")
    named = re.search(r"#([^#@]+)@", pid)  # path+file:///…/crates/sandbox#toolsmith-sandbox@0.1.0
    if named:
        return named.group(1)
    if " " in pid:  # toolsmith-sandbox 0.1.0 (path+file:///…), before cargo 1.77
        return pid.split(" ")[0]
    return pid.split("#")[0].rstrip("/").rsplit("/", 1)[-1]  # path+file:///…/name#0.1.0


found = {}
for line in open(sys.argv[1]):
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
        continue
    target, profile = msg["target"], msg.get("profile", {})
    name = package(msg)
    if name not in packages:
        continue
    if f"{name}:{target['name']}" in wanted and "test" in target["kind"]:
        found[f"{name}:{target['name']}"] = msg["executable"]
    elif target["name"] in programs and "bin" in target["kind"] and not profile.get("test"):
        found[target["name"]] = msg["executable"]
for name, exe in sorted(found.items()):
    print(name, exe)
EOF

declare -A exe=()
while read -r name path; do
    exe[$name]="$path"
done <"$work/binaries"
for name in "${PROGRAMS[@]}" "${targets[@]}"; do
    if [ -z "${exe[$name]:-}" ]; then
        echo "attack suite: cargo reported no executable for $name"
        echo "0 passed, 1 failed"
        exit 1
    fi
    # toolsmith-sandbox:it is copied as toolsmith-sandbox-it.
    install -m 755 "${exe[$name]}" "$work/bin/${name/:/-}"
done

total_passed=0
total_failed=0
for suite in "${SUITES[@]}"; do
    read -r name package target filter <<<"$suite"
    args=()
    [ "$filter" = - ] || args=("$filter")
    log="$work/logs/$name.log"
    start=$SECONDS
    (
        cd "$work/tmp" &&
            exec timeout --kill-after=5 "$LIMIT" \
                setpriv --reuid="$UID_NOBODY" --regid="$UID_NOBODY" --clear-groups --reset-env \
                env TOOLSMITH_SANDBOX_HELPER="$work/bin/toolsmith-sandbox-exec" \
                TOOLSMITH_RUN_CODE_WORKER="$work/bin/toolsmith-run-code-worker" \
                TMPDIR="$work/tmp" RUST_BACKTRACE=0 \
                "$work/bin/$package-$target" "${args[@]}"
    ) >"$log" 2>&1
    status=$?
    elapsed=$((SECONDS - start))
    result="$(grep -E '^test result:' "$log" | tail -n 1)"
    passed="$(sed -nE 's/.* ([0-9]+) passed;.*/\1/p' <<<"$result")"
    failed="$(sed -nE 's/.* ([0-9]+) failed;.*/\1/p' <<<"$result")"
    passed="${passed:-0}"
    failed="${failed:-0}"
    note=""
    if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
        # Crashed, timed out or never got to its summary: count the suite as one failure.
        failed=1
        if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
            note=" (timed out after ${LIMIT}s)"
        else
            note=" (exit status $status, no test summary)"
        fi
    elif [ "$passed" -eq 0 ] && [ "$failed" -eq 0 ]; then
        # A filter that matches no test (a module renamed) must not pass as an empty suite.
        failed=1
        note=" (no test matched \`$filter\` in $package's $target binary)"
    fi
    total_passed=$((total_passed + passed))
    total_failed=$((total_failed + failed))
    echo "$name as uid $UID_NOBODY: $passed passed, $failed failed in ${elapsed}s$note"
    grep -E '^SKIPPED' "$log" | sort -u | cut -c1-150 | sed 's/^/    /'
    if [ "$failed" -ne 0 ]; then
        echo "---- $name output (last 60 lines)"
        tail -n 60 "$log"
        echo "----"
    fi
done

echo "$total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]
