# Sourced by scripts/demo.sh and scripts/test.sh (the README's two commands), which build
# toolsmith on the machine that then runs it: builds llama.cpp for this machine's AVX-512.
#
# Without this, the `local` feature builds llama.cpp for x86-64 with AVX2, FMA and F16C (what
# `llama-cpp-sys-2` does unless Rust itself targets more), which runs on any recent x86-64 CPU.
# On a CPU with AVX-512 (VNNI, VBMI, BF16), a build that uses it evaluated prompts about 40 %
# faster (docs/benchmarks.md, "The embedded local model"); such a binary dies with SIGILL on a
# CPU without AVX-512, so it is a choice for a machine that builds for itself, as these scripts
# do, and not the default of `cargo build`.
#
# `llama-cpp-sys-2` passes `GGML_*` variables to llama.cpp's CMake. Each flag is set ON or OFF
# explicitly, never left unset, and LLAMA_LIB_PROFILE is set too (to the profile Cargo.toml
# already selects): llama-cpp-sys-2 rebuilds llama.cpp when a variable it has seen changes, and
# it always watches LLAMA_LIB_PROFILE, so switching between these scripts and a plain `cargo`
# command rebuilds llama.cpp (a few minutes) rather than silently keeping the other build.
#
# AMX is never turned on: llama.cpp's AMX path crashed on the Xeons we tried (which is also why
# nothing here builds with `-C target-cpu=native`). TOOLSMITH_PORTABLE_LLAMA=1 keeps the
# portable build.

llama_cpu_flag() {
    # $1: the GGML option; the rest: /proc/cpuinfo flags that must all be present.
    local option="$1" flag value=ON
    shift
    if [ "${TOOLSMITH_PORTABLE_LLAMA:-0}" = 1 ] || [ ! -r /proc/cpuinfo ]; then
        value=OFF
    else
        for flag in "$@"; do
            grep -qw -m1 "$flag" /proc/cpuinfo || value=OFF
        done
    fi
    export "$option=$value"
}

llama_cpu_flag GGML_AVX512 avx512f avx512cd avx512vl avx512dq avx512bw
llama_cpu_flag GGML_AVX512_VBMI avx512f avx512vbmi
llama_cpu_flag GGML_AVX512_VNNI avx512f avx512_vnni
llama_cpu_flag GGML_AVX512_BF16 avx512f avx512_bf16
export LLAMA_LIB_PROFILE=Release
echo "llama.cpp build: GGML_AVX512=$GGML_AVX512 VBMI=$GGML_AVX512_VBMI VNNI=$GGML_AVX512_VNNI BF16=$GGML_AVX512_BF16" >&2
unset -f llama_cpu_flag
