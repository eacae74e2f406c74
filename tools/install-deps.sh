#!/usr/bin/env bash
# Installs the Debian packages the build and tests need, only those missing.
# Checks first (dpkg-query, no root needed): a machine that has them all
# runs no apt command and needs no root. Only when something is missing does
# it need root or a sudo that asks no password; without either it prints
# what is missing and the apt-get line to run, and exits 1.
set -euo pipefail

# OpenBLAS + LAPACKE: the peer suite's smoke test (bench/run --quick) checks
# simpler's real tiled Cholesky with them. pkg-config: the install test
# builds docs/quickstart with it (tests/install/check_install.sh).
# python3-dev, python3-numpy, python3-pytest: the Python package (python/)
# builds against Debian's python3 and its tests run under pytest with numpy.
# openmpi-bin, libopenmpi-dev: level 4 (several ranks, src/l4/) is built on
# Open MPI, and its tests run under mpirun.
packages=(cmake make gcc libcriterion-dev python3 pkg-config liblapacke-dev libopenblas-dev
  python3-dev python3-numpy python3-pytest openmpi-bin libopenmpi-dev)
[ "${SIMPLER_DEPS_EXTRA:-}" ] && read -r -a extra <<<"$SIMPLER_DEPS_EXTRA" && packages+=("${extra[@]}")

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "simpler: no dpkg-query here (not Debian/Ubuntu?): install these (or your system's" \
    "equivalents) yourself: ${packages[*]}" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

apt_line="apt-get install -y --no-install-recommends ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo"
  else
    echo "simpler: missing Debian packages: ${missing[*]}" >&2
    echo "simpler: not root and no password-less sudo; run as root:" >&2
    echo "  apt-get update && $apt_line" >&2
    exit 1
  fi
fi
echo "simpler: installing missing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
