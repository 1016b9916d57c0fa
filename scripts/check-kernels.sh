#!/usr/bin/env bash
# Runs the kernel tests (tests/ops*.rs) of the binary packed by scripts/pack-gpu-run.sh on this machine's
# GPU: every kernel candidate the tuner may offer this adapter against a CPU reference. The tuner
# picks kernels by time alone, so a candidate that is wrong on a device (a subgroup width no test
# machine had, a driver's miscompile) and fast would win there; this is what finds it. Exits
# non-zero if a test fails or finds no GPU.
#
#   scripts/check-kernels.sh [SUITE_BINARY]
#
# Each file's tests may run LIMIT seconds (120 unless told; on lavapipe they take 1 to 10 minutes,
# on a GPU seconds): a test that hangs on a driver must not take the whole run's time.
set -uo pipefail
cd "$(dirname "$0")/.."
suite=${1:-target/gpu-run/suite}
logs=target/gpu-run/logs
mkdir -p "$logs"
export CI=true WICK_TUNING=off # in CI mode a test that finds no adapter fails rather than skips
status=0
for t in ops ops_normed ops_matmul ops_attention ops_attention_step ops_mla; do
  log=$logs/$t.log
  start=$(date +%s)
  # A filter is matched anywhere in a test's path: "ops::" is that file's tests alone.
  if timeout "${LIMIT:-120}" "$suite" "$t::" > "$log" 2>&1; then result=ok; else result=FAILED; status=1; fi
  summary=$(grep -E '^test result' "$log" | tail -1)
  echo "$t: $result in $(( $(date +%s) - start )) s: ${summary:-no summary} (log: $log)"
  [ "$result" = ok ] || grep -E -A2 'panicked at' "$log" | head -30
done
exit $status
