# Sourced by scripts/demo.sh (the README's first command), which builds toolsmith on the
# machine that then runs it: builds llama.cpp for this machine's AVX-512. Defines the array
# `llama_cpu_cargo`, to put after `cargo` on each command line that builds, and exports the
# variables it needs. Benchmarks use it too:
#
#     source scripts/llama-cpu.sh && cargo "${llama_cpu_cargo[@]}" run --release -p toolsmith-cli ...
#
# Without it the `local` feature builds llama.cpp for x86-64 with AVX2, FMA and F16C (what
# `llama-cpp-sys-2` does unless Rust itself targets more), which runs on any recent x86-64 CPU.
# On a CPU with AVX-512 (VNNI, VBMI, BF16), the build it selects evaluated prompts about 40 %
# faster (docs/benchmarks.md, "The embedded local model"). Such a binary dies with SIGILL on a
# CPU without AVX-512, so it is a choice for a machine that builds for itself, and not what a
# plain `cargo build` does. TOOLSMITH_PORTABLE_LLAMA=1 keeps the portable build.
#
# How: `llama-cpp-sys-2` passes `GGML_*` variables to llama.cpp's CMake, but only when CMake
# configures a new build directory: an existing one keeps the options it was configured with,
# whatever the variables say now. So the build also gets a directory of its own: cargo names a
# build script's output directory after the package's profile settings, and `codegen-units`
# (which only affects the crate's small Rust bindings) is set to a value that encodes the
# options. The portable and the tuned builds then live side by side, each built once.
#
# AMX is never turned on: llama.cpp's AMX path crashed on the Xeons we tried (which is also why
# nothing here builds with `-C target-cpu=native`).

llama_cpu_cargo=()
llama_cpu_options=0
llama_cpu_flag() {
    # $1: the GGML option; $2: its bit in the directory key; the rest: /proc/cpuinfo flags that
    # must all be present.
    local option="$1" bit="$2" flag
    shift 2
    [ "${TOOLSMITH_PORTABLE_LLAMA:-0}" != 1 ] && [ -r /proc/cpuinfo ] || return 0
    for flag in "$@"; do
        grep -qw -m1 "$flag" /proc/cpuinfo || return 0
    done
    export "$option=ON"
    llama_cpu_options=$((llama_cpu_options | bit))
}

llama_cpu_flag GGML_AVX512 1 avx512f avx512cd avx512vl avx512dq avx512bw
llama_cpu_flag GGML_AVX512_VBMI 2 avx512f avx512vbmi
llama_cpu_flag GGML_AVX512_VNNI 4 avx512f avx512_vnni
llama_cpu_flag GGML_AVX512_BF16 8 avx512f avx512_bf16
if [ "$llama_cpu_options" -ne 0 ]; then
    for profile in dev release; do
        llama_cpu_cargo+=(--config "profile.$profile.package.llama-cpp-sys-2.codegen-units=$((16 + llama_cpu_options))")
    done
    echo "llama.cpp: built for this CPU's AVX-512 (TOOLSMITH_PORTABLE_LLAMA=1 for a portable build)" >&2
fi
unset -f llama_cpu_flag
unset llama_cpu_options profile
