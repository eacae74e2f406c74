#!/usr/bin/env bash
# Installs the Debian packages the build and tests need, only those missing.
# Idempotent: a machine that has them all runs no apt command at all.
set -euo pipefail

# OpenBLAS + LAPACKE: the peer suite's smoke test (bench/run --quick) checks
# simpler's real tiled Cholesky with them.
packages=(cmake make gcc libcriterion-dev python3 liblapacke-dev libopenblas-dev)
[ "${SIMPLER_DEPS_EXTRA:-}" ] && read -r -a extra <<<"$SIMPLER_DEPS_EXTRA" && packages+=("${extra[@]}")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "simpler: installing missing Debian packages: ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
