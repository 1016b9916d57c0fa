#!/usr/bin/env bash
# Wick against llama.cpp's Vulkan backend on the same GPU and the same files: random weights at real
# shapes (Llama 3.1 8B in llama.cpp's Q4_K_M and in Q4_0; Qwen3.5 2B, Qwen2.5 1.5B's matrices and
# Llama 3.2 1B in Q4_K_M; Qwen3-30B-A3B's layer, 4 of its 48, in Q4_K_M; DeepSeek-V2's Multi-head
# Latent Attention in Youtu-LLM 2B's dense shape and GLM-4.7-Flash's first 3 layers, in Q4_K_M),
# `wick bench --profile`
# (and its decode with each norm in a kernel of its own, --fuse-norms off; its greedy decode a step
# ahead, as a reply runs, --read ahead; its prompt in chunks of 64 rather than a GPU's 512, without
# the matrix cores, --matrix-cores off, and in f32 tiles alone, --f16-tiles off) and `llama-bench` one
# after the other on each; then decode and a 512-token prompt deep into a long context (-d 4096 and
# 16384, with a check of 5 tokens there) on the 8B and 1.5B files, and decode from depth 0 and 512
# with the attention split as the adapter splits it and never, and at the first depth over twice the
# workgroups; then a step of 4 and of 8 sequences
# (`wick serve --parallel`'s step, and what a speculative check of as many tokens costs) beside the
# one-token step, kernel by kernel, on the same two; last, the first file's shapes tuned again with
# every candidate (`wick tune`; a first load times each form at one workgroup size first) and its
# decode after that.
#
#   scripts/bench-against-llama-cpp.sh LLAMA_CPP_SOURCE [VULKAN_PREFIX]
#
# LLAMA_CPP_SOURCE: a llama.cpp tree (the llama-cpp-python 0.3.36 sdist's vendor/llama.cpp is b11312),
# built here with GGML_VULKAN into LLAMA_CPP_SOURCE/build (a few minutes on 16 cores). VULKAN_PREFIX:
# where Vulkan headers of 1.4 or newer, glslc and SPIRV-Headers are unpacked (e.g. Debian 13's
# libvulkan-dev, glslc, libshaderc1, spirv-headers extracted with `dpkg -x`), if not installed; without
# glslc llama.cpp builds without cooperative matrices. Needs python3 with numpy and gguf (llama.cpp's
# gguf-py is used if gguf is missing), cmake and ninja, and target/release/wick (cargo build --release
# -p wick-cli; or scripts/pack-gpu-run.sh's archive, unpacked, with the kernel tests it runs first).
# Files go to models/shape/ (about 35 GB, the Q8_0 sources of the Q4_K_M files included); the tables
# to target/bench-against-llama-cpp/ (tuning-times.md: every candidate the tuner timed). DEPTHS="4096 16384" and REPS=3 by default;
# FILES, DEEP_FILES and STEP_FILES (names as below, without .gguf) run a subset, DEEP_FILES= none deep,
# STEP_FILES= no steps of several sequences; VARIANTS=0 runs `wick bench` in its defaults alone.
# QUICK=1: the 8B and 1.5B Q4_K_M files, the 8B at depth 4096 with a check of 5 tokens there, REPS=2,
# no variants and no steps of several sequences; each of those settings may still be given (QUICK=1
# FILES=youtu-llm-2b.shape.Q4_K_M DEEP_FILES=youtu-llm-2b.shape.Q4_K_M: MLA's prompt and decode, deep
# too, where its chunk's attention may run on the matrix cores). On a
# 16-core H200 it took 466 s with the 8B Q4_0 file added (FILES) and the packed kernel tests, which
# run beside llama.cpp's build and the files (on an H200 ops_matmul took 58 s, ops 89 s; each is held
# to 2 minutes). VARIANTS=1 on the 8B Q4_K_M file alone took 109 s more on the machine kept warm.
set -euo pipefail
cd "$(dirname "$0")/.."
llama=$(cd "$1" && pwd)
prefix=${2:-/usr}
out=target/bench-against-llama-cpp
models=models/shape
mkdir -p "$out" "$models"
python3 -c "import gguf" 2>/dev/null || export PYTHONPATH="$llama/gguf-py${PYTHONPATH:+:$PYTHONPATH}"
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)} WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
# Every tuned shape's candidates and their times, for judging kernel designs on this card later.
export WICK_TUNING_TIMES=${WICK_TUNING_TIMES:-$out/tuning-times.md}
chmod 700 "$XDG_RUNTIME_DIR"

# The kernel tests, where packed (scripts/pack-gpu-run.sh): the tuner picks kernels by time, and
# figures from a candidate that is wrong on this GPU would mean nothing. They run while llama.cpp
# builds and the files are made (the CPU's work), and nothing is measured before they end.
kernel_check=
if [ -x target/gpu-run/suite ]; then
  echo "checking every kernel candidate against the CPU on this GPU, beside llama.cpp's build"
  ( scripts/check-kernels.sh > "$out/kernel-tests.md" 2>&1 ||
    echo "KERNEL TESTS FAILED: a tuned kernel below may be a wrong one" >> "$out/kernel-tests.md" ) &
  kernel_check=$!
fi

echo "building llama-bench and llama-quantize with Vulkan"
loader=$(ldconfig -p | awk '/libvulkan\.so\.1 /{print $NF; exit}')
(
  export LD_LIBRARY_PATH="$prefix/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  cmake -S "$llama" -B "$llama/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_VULKAN=ON \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DCMAKE_PREFIX_PATH="$prefix" \
    -DVulkan_INCLUDE_DIR="$prefix/include" -DVulkan_GLSLC_EXECUTABLE="$prefix/bin/glslc" \
    ${loader:+-DVulkan_LIBRARY="$loader"}
  cmake --build "$llama/build" --target llama-bench llama-quantize -j "$(nproc)"
) > "$out/llama-build.log" 2>&1 || { tail -20 "$out/llama-build.log"; exit 1; }
bin=$llama/build/bin

# The file models/shape/NAME.gguf, made where missing: random weights at the shape, in Q8_0 or Q4_0,
# and llama.cpp's Q4_K_M mix (Q4_K with some Q6_K) quantized from the Q8_0 one.
make_file() {
  local name=$1 shape=${1%.*} type=${1##*.}
  [ -f "$models/$name.gguf" ] && return
  if [ "$type" = Q4_K_M ]; then
    make_file "$shape.Q8_0"
    "$bin/llama-quantize" --allow-requantize "$models/$shape.Q8_0.gguf" "$models/$name.gguf" Q4_K_M \
      >> "$out/quantize.log" 2>&1
    return
  fi
  case $shape in
    llama-3.1-8b.shape) python3 scripts/make-llama-shape.py --model 8b --type "$type" --out "$models" ;;
    llama-3.2-1b.shape) python3 scripts/make-llama-shape.py --model 1b --type "$type" --out "$models" ;;
    qwen2.5-1.5b.shape) python3 scripts/make-llama-shape.py --model qwen2.5-1.5b --type "$type" --out "$models" ;;
    qwen3.5-2b.shape) python3 scripts/make-qwen35-shape.py --model 2b --out "$models" ;;
    qwen3-30b-a3b.shape-4L) python3 scripts/make-moe-shape.py --model qwen3moe --layers 4 --type "$type" --out "$models" ;;
    youtu-llm-2b.shape) python3 scripts/make-shape-model.py --model youtu --type "$type" --out "$models" ;;
    glm-4.7-flash.shape-3L) python3 scripts/make-shape-model.py --model glm --layers 3 --type "$type" --out "$models" ;;
    *) echo "no recipe for $name" >&2; exit 1 ;;
  esac
}

# FILES and DEEP_FILES choose a subset (a lease too short for all of them, say); QUICK the subset above.
if [ "${QUICK:-0}" = 1 ]; then
  FILES=${FILES:-llama-3.1-8b.shape.Q4_K_M qwen2.5-1.5b.shape.Q4_K_M}
  DEEP_FILES=${DEEP_FILES-llama-3.1-8b.shape.Q4_K_M}
  STEP_FILES=${STEP_FILES-}
  DEPTHS=${DEPTHS:-4096}
  REPS=${REPS:-2}
  VARIANTS=${VARIANTS:-0}
fi
files=${FILES:-llama-3.1-8b.shape.Q4_K_M llama-3.1-8b.shape.Q4_0 qwen3.5-2b.shape.Q4_K_M qwen2.5-1.5b.shape.Q4_K_M \
llama-3.2-1b.shape.Q4_K_M qwen3-30b-a3b.shape-4L.Q4_K_M youtu-llm-2b.shape.Q4_K_M glm-4.7-flash.shape-3L.Q4_K_M}
deep_files=${DEEP_FILES-llama-3.1-8b.shape.Q4_K_M qwen2.5-1.5b.shape.Q4_K_M youtu-llm-2b.shape.Q4_K_M}
step_files=${STEP_FILES-llama-3.1-8b.shape.Q4_K_M qwen2.5-1.5b.shape.Q4_K_M}
for f in $files $deep_files $step_files; do make_file "$f"; done
if [ -n "$kernel_check" ]; then
  wait "$kernel_check"
  cat "$out/kernel-tests.md"
fi

reps=${REPS:-3}
for f in $files; do
  echo "== $f: wick"
  target/release/wick bench -m "$models/$f.gguf" -p 512 -n 128 -r "$reps" --profile 2>&1 | grep -v '^$' \
    | tee -a "$out/wick.md"
  if [ "${VARIANTS:-1}" = 1 ]; then
    echo "== $f: wick, each norm in a kernel of its own (--fuse-norms off), prompts in chunks of 64"
    target/release/wick bench -m "$models/$f.gguf" -p 0 -n 128 -r "$reps" --fuse-norms off 2>&1 \
      | grep -v '^$' | tee -a "$out/wick-norms-apart.md"
    target/release/wick bench -m "$models/$f.gguf" -p 512 -n 0 -b 64 -r "$reps" 2>&1 \
      | grep -v '^$' | tee -a "$out/wick-chunks-64.md"
    echo "== $f: wick, greedy steps a step ahead (--read ahead: each submitted before the one before it is read)"
    target/release/wick bench -m "$models/$f.gguf" -p 0 -n 128 -r "$reps" --read ahead 2>&1 \
      | grep -v '^$' | tee -a "$out/wick-ahead.md"
    echo "== $f: wick, prompts without the matrix cores (--matrix-cores off: the tiles, f16 or f32, tuned apart once)"
    target/release/wick bench -m "$models/$f.gguf" -p 512 -n 0 -r "$reps" --matrix-cores off 2>&1 \
      | grep -v '^$' | tee -a "$out/wick-no-matrix-cores.md"
    echo "== $f: wick, prompts in f32 tiles alone (--matrix-cores off --f16-tiles off: tuned apart once)"
    target/release/wick bench -m "$models/$f.gguf" -p 512 -n 0 -r "$reps" --matrix-cores off \
      --f16-tiles off 2>&1 | grep -v '^$' | tee -a "$out/wick-f32-tiles.md"
  fi
  echo "== $f: llama.cpp"
  "$bin/llama-bench" -m "$models/$f.gguf" -ngl 99 -p 512 -n 128 -r "$reps" 2>&1 | grep -v '^$' | tee -a "$out/llama.md"
done

# Decode and a prompt after a long context: attention reads the whole cache each token (split over the
# sequence from 1,024 positions on), and a chunk's queries walk it in tiles (the form tuned, a query a
# thread or blocks of queries whose heads are split; --profile names it). The profile also times a
# step of 5 tokens there (--parallel 5: a speculative check of 4 drafted tokens, its attention split
# as the one-token step's).
for f in $deep_files; do
  for d in ${DEPTHS:-4096 16384}; do
    echo "== $f at depth $d: wick"
    target/release/wick bench -m "$models/$f.gguf" -p 512 -n 32 -d "$d" -r "$reps" --profile \
      --parallel 5 2>&1 \
      | grep -v '^$' | tee -a "$out/wick-depth.md"
    echo "== $f at depth $d: llama.cpp"
    "$bin/llama-bench" -m "$models/$f.gguf" -ngl 99 -p 512 -n 32 -d "$d" -r "$reps" 2>&1 | grep -v '^$' \
      | tee -a "$out/llama-depth.md"
  done
done

# Where splitting a step's attention over the keys starts to pay (position 32 on GPUs unless told,
# --split-from): decode of 64 tokens from depth 0 and from 512, split as the adapter does and never.
for f in $deep_files; do
  for d in 0 512; do
    for from in adapter 1000000; do
      echo "== $f at depth $d, attention split from $from: wick"
      split=(); [ "$from" = adapter ] || split=(--split-from "$from")
      target/release/wick bench -m "$models/$f.gguf" -p 0 -n 64 -d "$d" -r "$reps" ${split[@]+"${split[@]}"} \
        2>&1 | grep -v '^$' | tee -a "$out/wick-split-from.md"
    done
    echo "== $f at depth $d: llama.cpp"
    "$bin/llama-bench" -m "$models/$f.gguf" -ngl 99 -p 0 -n 64 -d "$d" -r "$reps" 2>&1 | grep -v '^$' \
      | tee -a "$out/llama-split-from.md"
  done
done

# How many splits fill the GPU deep into a context (256 workgroups a layer unless told: 32 splits of
# the 8B's 8 groups of heads; --split-workgroups): decode at the first depth over 512 (64 splits),
# beside the depth section's decode above.
for f in $deep_files; do
  depths=${DEPTHS:-4096 16384}
  d=${depths%% *}
  echo "== $f at depth $d, split over 512 workgroups a layer: wick"
  target/release/wick bench -m "$models/$f.gguf" -p 0 -n 32 -d "$d" -r "$reps" --split-workgroups 512 \
    2>&1 | grep -v '^$' | tee -a "$out/wick-split-workgroups.md"
done

# A step of several sequences: each product reads its weights once for every four tokens (the pair
# kernel) or once for all of them (a tile, the norm folded in, where the tuner times one faster), so
# on a GPU it should cost about one step; a speculative check of as many tokens is the same pass.
# 14: two server slots drafting 6 tokens each, whose plans of 4, 8 and 14 rows are each profiled.
for f in $step_files; do
  for n in 4 8 14; do
    echo "== $f, a step of $n sequences: wick"
    target/release/wick bench -m "$models/$f.gguf" -p 0 -n 32 -r "$reps" --profile --parallel "$n" 2>&1 \
      | grep -v '^$' | tee -a "$out/wick-steps.md"
  done
done

# Last, where it changes nothing measured above: the first file's shapes timed again, every candidate
# of each (`wick tune`), where a first load timed each form at one workgroup size first; each shape's
# winners and times of both are in tuning-times.md, and the decode after it shows what the full race
# would have bought.
first=${files%% *}
echo "== $first: wick tune (every candidate), then decode"
target/release/wick tune -m "$models/$first.gguf" 2>&1 | tee -a "$out/wick-tune-every.md"
target/release/wick bench -m "$models/$first.gguf" -p 0 -n 128 -r "$reps" 2>&1 | grep -v '^$' \
  | tee -a "$out/wick-tune-every.md"
