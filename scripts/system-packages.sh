#!/usr/bin/env bash
# Installs the Debian packages the build needs, before anything compiles:
#
#     scripts/system-packages.sh [postgresql] [npm] [python3] [chromium]
#
# Always: cmake, clang and libclang-dev, which building llama.cpp (the embedded local model's
# engine, compiled from source by the `local` feature) needs: CMake for llama.cpp itself, and
# libclang for bindgen, which writes its Rust bindings (without it the build dies after minutes
# in a bindgen panic, "Unable to find libclang"). `postgresql` adds the server the store's
# PostgreSQL tests start (CI asks for it; without it those tests are skipped and say so);
# `npm` and `python3` what the service's tests run (the AI SDK's client, the example worker);
# `chromium` the browser the web console's test drives (headless, through playwright-core,
# which downloads no browser of its own).
#
# Only what is missing is installed, with apt-get (through sudo when not root), without
# questions. Where that cannot be done (no apt-get, or neither root nor sudo) it stops at once
# and prints the command to run. Used by scripts/demo.sh, scripts/test.sh and .ci/run.
set -euo pipefail

# Whether a package's files are there: the commands or files the build uses.
present() {
    case "$1" in
        cmake | clang | npm | python3) command -v "$1" >/dev/null ;;
        libclang-dev) compgen -G "/usr/lib/llvm-*/lib/libclang.so" >/dev/null ;;
        postgresql) compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null ;;
        chromium) [ -x /usr/bin/chromium ] ;;
        *) return 2 ;;
    esac
}
for package in "$@"; do
    present "$package" || [ $? -ne 2 ] || { echo "system-packages: unknown package $package" >&2; exit 2; }
done

# The packages of cmake, clang, libclang-dev and the arguments that are not there.
missing() {
    local package
    for package in cmake clang libclang-dev "$@"; do
        present "$package" || echo "$package"
    done
}

mapfile -t wanted < <(missing "$@")
[ ${#wanted[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null && sudo="sudo"
fi
cannot() {
    echo "system-packages: missing ${wanted[*]}: $1." >&2
    if command -v apt-get >/dev/null; then
        echo "Install them as root, then run this again:" >&2
        echo "    apt-get update && apt-get install -y ${wanted[*]}" >&2
    else
        echo "Install them (on Debian and Ubuntu: apt-get install -y ${wanted[*]}), then run this again." >&2
    fi
    exit 1
}
command -v apt-get >/dev/null || cannot "this system has no apt-get to install them"
[ "$(id -u)" -eq 0 ] || [ -n "$sudo" ] || cannot "this user is not root, and sudo is not installed"

echo "system-packages: installing ${wanted[*]} (apt-get${sudo:+, through sudo})" >&2
if ! { $sudo apt-get update -qq &&
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${wanted[@]}" >/dev/null; }; then
    cannot "apt-get${sudo:+ through sudo} failed"
fi
mapfile -t still < <(missing "$@")
[ ${#still[@]} -eq 0 ] || cannot "apt-get ran, but ${still[*]} still cannot be found"
