#!/usr/bin/env bash
# Runs the kernel tests packed by scripts/pack-gpu-run.sh (target/gpu-run/tests/) on this machine's
# GPU: every kernel candidate the tuner may offer this adapter against a CPU reference. The tuner
# picks kernels by time alone, so a candidate that is wrong on a device (a subgroup width no test
# machine had, a driver's miscompile) and fast would win there; this is what finds it. Exits
# non-zero if a test fails or finds no GPU.
#
#   scripts/check-kernels.sh [TEST_DIR]
#
# Each test binary may run LIMIT seconds (120 unless told; on lavapipe they take 1 to 10 minutes,
# on a GPU seconds): a test that hangs on a driver must not take the whole run's time.
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:-target/gpu-run/tests}
logs=target/gpu-run/logs
mkdir -p "$logs"
export CI=true WICK_TUNING=off # in CI mode a test that finds no adapter fails rather than skips
status=0
for t in "$dir"/*; do
  log=$logs/$(basename "$t").log
  start=$(date +%s)
  if timeout "${LIMIT:-120}" "$t" > "$log" 2>&1; then result=ok; else result=FAILED; status=1; fi
  summary=$(grep -E '^test result' "$log" | tail -1)
  echo "$(basename "$t"): $result in $(( $(date +%s) - start )) s: ${summary:-no summary} (log: $log)"
  [ "$result" = ok ] || grep -E -A2 'panicked at' "$log" | head -30
done
exit $status
