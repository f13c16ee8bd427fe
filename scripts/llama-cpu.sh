# Sourced by scripts/demo.sh (the README's first command), which builds toolsmith on the
# machine that then runs it: builds llama.cpp for this machine's AVX-512. Defines
# `llama_cpu_profile`, the Cargo profile to build with, and exports the variables it needs.
# Benchmarks use it too:
#
#     source scripts/llama-cpu.sh && cargo run --profile "$llama_cpu_profile" -p toolsmith-cli ...
#
# The binaries are then in target/$llama_cpu_profile/.
#
# Without it the `local` feature builds llama.cpp for x86-64 with AVX2, FMA and F16C (what
# `llama-cpp-sys-2` does unless Rust itself targets more), which runs on any recent x86-64 CPU.
# On a CPU with AVX-512 (VNNI, VBMI, BF16), the build it selects evaluated prompts about 40 %
# faster (docs/benchmarks.md, "The embedded local model"). Such a binary dies with SIGILL on a
# CPU without AVX-512, so it is a choice for a machine that builds for itself, and not what a
# plain `cargo build` does. TOOLSMITH_PORTABLE_LLAMA=1 keeps the portable build.
#
# How: `llama-cpp-sys-2`'s build script hands every `GGML_*` environment variable to
# llama.cpp's CMake; this script sets GGML_AVX512, GGML_AVX512_VBMI, GGML_AVX512_VNNI and
# GGML_AVX512_BF16 to ON for the extensions /proc/cpuinfo lists. CMake reads them only when it
# configures a new build directory (an existing one keeps its options, whatever the variables
# say now), so the tuned build is made with the `llama-avx512` profile of the workspace's
# Cargo.toml: the release profile in a target directory of its own, kept beside the portable
# one of `cargo build --release`. If that directory's llama.cpp was configured with other
# options (on another CPU, or by a build without this script), it is cleaned first.
#
# AMX is never turned on: llama.cpp's AMX path crashed on the Xeons we tried (which is also why
# nothing here builds with `-C target-cpu=native`).

llama_cpu_profile=release
llama_cpu_flag() {
    # $1: the GGML option; the rest: /proc/cpuinfo flags that must all be present.
    local option="$1" flag
    shift
    [ "${TOOLSMITH_PORTABLE_LLAMA:-0}" != 1 ] && [ -r /proc/cpuinfo ] || return 0
    for flag in "$@"; do
        grep -qw -m1 "$flag" /proc/cpuinfo || return 0
    done
    export "$option=ON"
    llama_cpu_profile=llama-avx512
}

llama_cpu_flag GGML_AVX512 avx512f avx512cd avx512vl avx512dq avx512bw
llama_cpu_flag GGML_AVX512_VBMI avx512f avx512vbmi
llama_cpu_flag GGML_AVX512_VNNI avx512f avx512_vnni
llama_cpu_flag GGML_AVX512_BF16 avx512f avx512_bf16
if [ "$llama_cpu_profile" != release ]; then
    echo "llama.cpp: built for this CPU's AVX-512, profile $llama_cpu_profile" \
        "(TOOLSMITH_PORTABLE_LLAMA=1 for a portable build)" >&2
    # CMakeCache.txt records the options a build directory was configured with.
    for llama_cpu_cache in "${CARGO_TARGET_DIR:-target}/$llama_cpu_profile"/build/llama-cpp-sys-2-*/out/build/CMakeCache.txt; do
        [ -f "$llama_cpu_cache" ] || continue
        for llama_cpu_option in GGML_AVX512 GGML_AVX512_VBMI GGML_AVX512_VNNI GGML_AVX512_BF16; do
            if [ "$(sed -n "s/^$llama_cpu_option:[A-Z]*=//p" "$llama_cpu_cache")" != "${!llama_cpu_option:-OFF}" ]; then
                echo "llama.cpp: $llama_cpu_cache has other options: building it again" >&2
                cargo clean --quiet -p llama-cpp-sys-2 --profile "$llama_cpu_profile"
                break 2
            fi
        done
    done
fi
unset -f llama_cpu_flag
unset llama_cpu_cache llama_cpu_option
