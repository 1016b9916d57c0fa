#!/usr/bin/env bash
# Runs the tests of the kernels on matrix cores (cooperative matrices) where this machine's GPU has
# none: on Mesa's lavapipe from Debian testing (Mesa 26 has VK_KHR_cooperative_matrix, 8 x 8 f16
# products into f32), in a minimal Debian root made once with debootstrap and kept in the cache.
# The tests' binary is built here and copied in; nothing of the checkout is mounted. Needs root
# (chroot) on Debian or Ubuntu. Arguments: test filters of tests/suite.rs (default: the matmul checks on
# the 8 x 8 products lavapipe advertises and on the 16 x 16 ones GPUs have, which it runs too, and
# the check before tuning offers them; then the experts' block of tests/ops_moe.rs, a chunk's
# attention of tests/ops_attention.rs and MLA's of tests/ops_mla.rs). Each checks only its candidates on the matrix cores there
# (WICK_MATRIX_CORES_ONLY=1): scripts/test.sh's run on this machine's adapter checked the rest.
# WICK_MATRIX_CORES_ROOT sets where the root lives.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "test-matrix-cores: needs root (chroot)" >&2; exit 1; }
root=${WICK_MATRIX_CORES_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/wick/matrix-cores-root}
suite=forky
mirror=http://deb.debian.org/debian
# Debian testing's Release file may be past its Valid-Until between publishes.
apt_opts=(-o Acquire::Check-Valid-Until=false -o Dpkg::Use-Pty=0)

if [ ! -e "$root/usr/share/vulkan/icd.d/lvp_icd.json" ] && [ ! -e "$root/usr/share/vulkan/icd.d/lvp_icd.x86_64.json" ]; then
  command -v debootstrap >/dev/null || {
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  }
  echo "test-matrix-cores: making a Debian $suite root with Mesa's lavapipe in $root"
  rm -rf "$root"
  mkdir -p "$root"
  # Older debootstraps have no script for testing's name; sid's serves every suite since.
  debootstrap --variant=minbase "$suite" "$root" "$mirror" /usr/share/debootstrap/scripts/sid >/dev/null
  chroot "$root" apt-get "${apt_opts[@]}" update -qq
  chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install -y -qq \
    --no-install-recommends mesa-vulkan-drivers libvulkan1 >/dev/null
fi

# The tests' binary (tests/suite.rs), built here and copied into the root. With the workspace's
# features, as scripts/test.sh's `cargo test --workspace` built it: the package's own would build it again.
binary=$(cargo test --release --workspace --test suite --no-run 2>&1 | grep -o "target/release/deps/suite-[0-9a-f]*" | head -1)
[ -x "$binary" ] || { echo "test-matrix-cores: no tests/suite.rs binary was built" >&2; exit 1; }
cp "$binary" "$root/tmp/wick-suite"
# Only the candidates on the matrix cores: the run of the same tests before, on this machine's own
# adapter, checked every other one.
in_root() {
  chroot "$root" env CI=true WGPU_BACKEND=vulkan XDG_RUNTIME_DIR=/tmp/xdg WICK_MATRIX_CORES_ONLY=1 \
    /tmp/wick-suite --test-threads 1 --nocapture "$@" 2>&1
}
filters=("$@")
[ ${#filters[@]} -gt 0 ] || filters=(matmul_every_type_against_cpu matrix_cores)
mkdir -p "$root/tmp/xdg" && chmod 700 "$root/tmp/xdg"
out=$(in_root "${filters[@]}") || { echo "$out"; exit 1; }
echo "$out" | grep -v "does not fit"
# A root whose lavapipe lost its cooperative matrices would skip the check: that is a failure here.
echo "$out" | grep -q "matmul on matrix cores: checked" || {
  echo "test-matrix-cores: the adapter in $root has no matrix cores Wick can use" >&2
  exit 1
}
# The experts' products over a chunk (a mixture-of-experts prompt) on the matrix cores too, and a
# chunk's attention there, MLA's too.
if [ $# -eq 0 ]; then
  out=$(in_root experts_block) || { echo "$out"; exit 1; }
  echo "$out" | grep -v "does not fit"
  out=$(in_root tiled_attention_against_cpu matrix_attention) || { echo "$out"; exit 1; }
  echo "$out" | grep -E "matrix cores: |test result"
  echo "$out" | grep -q "attention on matrix cores: the check passed" &&
    echo "$out" | grep -q "attention on matrix cores: checked" || {
    echo "test-matrix-cores: a chunk's attention was not checked on the matrix cores" >&2
    exit 1
  }
  out=$(in_root absorbed_mla matrix_latent) || { echo "$out"; exit 1; }
  echo "$out" | grep -E "matrix cores: |test result"
  echo "$out" | grep -q "mla attention on matrix cores: the check passed" &&
    echo "$out" | grep -q "mla attention on matrix cores: checked" || {
    echo "test-matrix-cores: MLA's chunk attention was not checked on the matrix cores" >&2
    exit 1
  }
fi
