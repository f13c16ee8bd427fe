#!/usr/bin/env bash
# Opt-in check of `openai-compatible:` against a real llama-cpp-python server: the server that
# cannot stream automatic tool choice (it drops the stream, which toolsmith reports as a stream
# without a finish reason) but answers the same request whole. Not part of scripts/test.sh: it
# compiles llama.cpp twice (llama-cpp-python's and toolsmith's) and takes a while.
#
#     scripts/llama-cpp-python-check.sh
#
# 1. installs `llama-cpp-python[server]` from PyPI into a venv (LLAMA_CPP_PYTHON_VENV, default
#    target/llama-cpp-python-venv; kept for the next run);
# 2. starts its server on the embedded model's GGUF (Gemma 3 270M, installed by
#    scripts/setup-local-model.sh when missing; TOOLSMITH_LOCAL_MODEL names another file) with
#    `--chat_format chatml-function-calling`, on 127.0.0.1:LLAMA_CPP_PYTHON_PORT (8765);
# 3. runs `toolsmith run --no-stream` against it with a prompt that needs the calculator, and
#    prints the run's parts; then the same run streamed, which this server is expected to fail
#    (its error says to try --no-stream).
#
# Exits non-zero when the server does not start or the --no-stream run fails.
set -euo pipefail
cd "$(dirname "$0")/.."

python="${PYTHON:-python3}"
version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
venv="${LLAMA_CPP_PYTHON_VENV:-${CARGO_TARGET_DIR:-target}/llama-cpp-python-venv}"
port="${LLAMA_CPP_PYTHON_PORT:-8765}"
base="http://127.0.0.1:$port/v1"
model="${TOOLSMITH_LOCAL_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/toolsmith/models/gemma-3-270m-q4_k_m.gguf}"

if [ ! -f "$model" ]; then
    if [ -n "${TOOLSMITH_LOCAL_MODEL:-}" ]; then
        echo "llama-cpp-python-check: TOOLSMITH_LOCAL_MODEL=$model does not exist" >&2
        exit 1
    fi
    scripts/setup-local-model.sh
fi

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
    echo "== pip install llama-cpp-python[server]==$version into $venv (compiles llama.cpp)" >&2
    "$python" -m venv "$venv"
    # llama.cpp's native build (every extension the CPU lists) died with SIGILL at the first
    # chat request on our virtualised Xeon, as its AMX path did for toolsmith's own build
    # (scripts/llama-cpu.sh): build it for AVX2/FMA/F16C, as toolsmith's portable build does
    # (CMAKE_ARGS overrides; no wheel cache, so that they always apply).
    CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}" \
        "$venv/bin/pip" install --quiet --no-cache-dir --disable-pip-version-check "llama-cpp-python[server]==$version"
fi

echo "== cargo build --release -p toolsmith-cli" >&2
cargo build --release -p toolsmith-cli
toolsmith="${CARGO_TARGET_DIR:-target}/release/toolsmith"

log="$(mktemp)"
echo "== llama-cpp-python server on $base ($model), log in $log" >&2
"$venv/bin/python" -m llama_cpp.server \
    --model "$model" \
    --model_alias gemma-3-270m \
    --chat_format chatml-function-calling \
    --n_ctx 4096 \
    --host 127.0.0.1 \
    --port "$port" >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT

for _ in $(seq 1 120); do
    if curl -sf "$base/models" >/dev/null; then
        break
    fi
    if ! kill -0 "$server" 2>/dev/null; then
        echo "llama-cpp-python-check: the server exited:" >&2
        cat "$log" >&2
        exit 1
    fi
    sleep 1
done
curl -sf "$base/models" >/dev/null || {
    echo "llama-cpp-python-check: the server did not answer within 120 s:" >&2
    tail -n 40 "$log" >&2
    exit 1
}

prompt="Use the calculator tool to compute 6 * 7, then give the result."
run() {
    env -u TOOLSMITH_MODEL -u OPENAI_API_KEY -u OPENAI_BASE_URL \
        "$toolsmith" run --model openai-compatible:gemma-3-270m --base-url "$base" \
        --tools calculator --max-steps 3 --json "$@" "$prompt"
}

echo "== toolsmith run --no-stream" >&2
run --no-stream

echo "== toolsmith run, streamed (this server is expected to fail here)" >&2
run || true
