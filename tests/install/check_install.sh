#!/usr/bin/env bash
# The install as another project uses it (issue 14): `cmake --install` of
# this build into a fresh prefix, the layout and the SONAME checked, then
# docs/quickstart copied out of the source tree and built against the
# prefix twice, with find_package(simpler) and with pkg-config and its
# plain Makefile, and run on both runtimes; then the installed `simpler`
# runs smoke and an example. Nothing may come from the build tree: no
# LD_LIBRARY_PATH, no build path in an installed RUNPATH, and every
# libsimpler / module / data file a program loads is under the prefix
# (the loader's own record of what it opened: LD_DEBUG=files).
#
# usage: check_install.sh BUILD_DIR SOURCE_DIR [C_COMPILER]
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
cc=${3:-cc}
work=$(realpath "$(mktemp -d "${TMPDIR:-/tmp}/simpler_install.XXXXXX")")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
unset LD_LIBRARY_PATH SIMPLER_MODULE_PATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH

fail() {
  echo "check_install: FAIL: $*" >&2
  exit 1
}
step() { echo "== $*"; }
# run LOG CMD...: CMD's output into LOG; on failure show it and fail.
run() {
  local log=$1 rc=0
  shift
  "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    cat "$log" >&2
    fail "$* (exit $rc)"
  fi
}

version=$(sed -n 's/^#define SIMPLER_VERSION_STRING "\(.*\)"$/\1/p' "$src/include/simpler/version.h")
abi=$(sed -n 's/^#define SIMPLER_ABI_VERSION \([0-9][0-9]*\)$/\1/p' "$src/include/simpler/version.h")
if [ -z "$version" ] || [ -z "$abi" ]; then
  fail "cannot read the version from include/simpler/version.h"
fi

step "cmake --install into $prefix"
run "$work/install.log" cmake --install "$build" --prefix "$prefix"

step "layout"
for f in include/simpler/worker.h include/simpler/kernel.h include/simpler/orchestration.h \
  include/simpler/version.h lib/libsimpler.so "lib/libsimpler.so.$abi" "lib/libsimpler.so.$version" \
  lib/simpler/libsimpler_hbg_sim.so lib/simpler/libsimpler_tmr_sim.so \
  lib/simpler/libsimpler_platform_sim.so bin/simpler \
  lib/cmake/simpler/simplerConfig.cmake lib/cmake/simpler/simplerConfigVersion.cmake \
  lib/cmake/simpler/SimplerCallable.cmake lib/pkgconfig/simpler.pc \
  share/simpler/smoke/sp_smoke_kernel.so share/simpler/smoke/sp_smoke_orch.so \
  share/simpler/examples/vector_example.spc share/simpler/examples/paged_attention.spc; do
  [ -e "$prefix/$f" ] || fail "the install has no $f"
done
# Public headers only: exactly include/simpler/*.h of the source tree.
diff <(cd "$src/include/simpler" && ls) <(cd "$prefix/include/simpler" && ls) >/dev/null ||
  fail "installed headers differ from include/simpler: $(ls "$prefix/include/simpler")"
[ "$(readlink "$prefix/lib/libsimpler.so")" = "libsimpler.so.$abi" ] ||
  fail "lib/libsimpler.so -> $(readlink "$prefix/lib/libsimpler.so"), want libsimpler.so.$abi"
[ "$(readlink "$prefix/lib/libsimpler.so.$abi")" = "libsimpler.so.$version" ] ||
  fail "lib/libsimpler.so.$abi -> $(readlink "$prefix/lib/libsimpler.so.$abi")"
soname=$(readelf -d "$prefix/lib/libsimpler.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libsimpler.so.$abi" ] || fail "SONAME '$soname', want libsimpler.so.$abi"
runpath() { readelf -d "$1" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p'; }
for f in "$prefix"/lib/simpler/*.so; do
  [ "$(runpath "$f")" = "\$ORIGIN" ] || fail "$f: RUNPATH '$(runpath "$f")', want \$ORIGIN"
done
[ "$(runpath "$prefix/bin/simpler")" = "\$ORIGIN/../lib" ] ||
  fail "bin/simpler: RUNPATH '$(runpath "$prefix/bin/simpler")', want \$ORIGIN/../lib"
for f in "$prefix"/lib/libsimpler.so.* "$prefix"/lib/simpler/*.so "$prefix"/bin/simpler; do
  if runpath "$f" | grep -qF "$build"; then fail "$f: RUNPATH names the build tree"; fi
done

# loaded_from_prefix LOG_BASE BIN RUNTIME: the libsimpler BIN links
# resolves into the prefix (ldd), and every object the run dlopened (the
# loader's LD_DEBUG=files lines "file=PATH [0];  dynamically loaded by")
# is in the prefix (besides /proc/self/fd/N: a callable's objects, loaded
# from its blob's bytes), the runtime's module among them.
loaded_from_prefix() {
  local f opened
  # Normalised: pkg-config's libdir is <prefix>/lib/pkgconfig/../../lib.
  opened=$(cat "$1".* | sed -n 's/.*file=\([^ ]*\) .*dynamically loaded by.*/\1/p' |
    grep -v '^/proc/self/fd/' | xargs -r realpath -m | sort -u)
  rm -f "$1".*
  for f in $opened; do
    case "$f" in
    "$prefix"/*) ;;
    *) fail "$2 opened $f, outside the prefix $prefix" ;;
    esac
  done
  echo "$opened" | grep -qxF "$prefix/lib/simpler/libsimpler_$3_sim.so" ||
    fail "$2 did not open $prefix/lib/simpler/libsimpler_$3_sim.so (opened: $opened)"
  for f in $(ldd "$2" "$prefix/lib/simpler/libsimpler_$3_sim.so" |
    sed -n 's/.*libsimpler[^ ]* => \([^ ]*\) .*/\1/p' | xargs -r realpath -m); do
    case "$f" in
    "$prefix"/*) ;;
    *) fail "$2 resolves $f, outside the prefix $prefix" ;;
    esac
  done
}

# run_quickstart BIN CALLABLE: both runtimes print the PASS line, with
# everything loaded from the prefix.
run_quickstart() {
  for rt in hbg tmr; do
    run "$work/qs.out" env LD_DEBUG=files LD_DEBUG_OUTPUT="$work/ld" "$1" "$2" "$rt"
    grep -q "z = 2\*x + y: PASS" "$work/qs.out" || { cat "$work/qs.out" >&2; fail "$1 $rt: no PASS"; }
    loaded_from_prefix "$work/ld" "$1" "$rt"
  done
}

step "docs/quickstart with find_package(simpler)"
cp -R "$src/docs/quickstart" "$work/qs-cmake"
rm -f "$work/qs-cmake/Makefile" # CMake's own Makefile goes in the build dir; keep the copy plain
run "$work/cmake.log" cmake -S "$work/qs-cmake" -B "$work/qs-cmake/build" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc"
run "$work/build.log" cmake --build "$work/qs-cmake/build"
run_quickstart "$work/qs-cmake/build/quickstart" "$work/qs-cmake/build/quickstart_callable.spc"

step "docs/quickstart with pkg-config and its Makefile"
cp -R "$src/docs/quickstart" "$work/qs-make"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
[ "$(pkg-config --modversion simpler)" = "$version" ] || fail "pkg-config --modversion simpler"
run "$work/make.log" make -C "$work/qs-make" CC="$cc"
run_quickstart "$work/qs-make/quickstart" "$work/qs-make/quickstart_callable.spc"

step "the library reports the version of its headers"
cat >"$work/version.c" <<'C'
#include <stdio.h>
#include <string.h>
#include "simpler/version.h"
int main(void)
{
    printf("%s %d\n", sp_version(), sp_abi_version());
    return strcmp(sp_version(), SIMPLER_VERSION_STRING) || sp_abi_version() != SIMPLER_ABI_VERSION;
}
C
# shellcheck disable=SC2046
run "$work/cc.log" "$cc" -o "$work/version" "$work/version.c" $(pkg-config --cflags --libs simpler) \
  -Wl,-rpath,"$(pkg-config --variable=libdir simpler)"
run "$work/version.out" "$work/version"
[ "$(cat "$work/version.out")" = "$version $abi" ] || fail "sp_version: $(cat "$work/version.out")"

step "the installed simpler: smoke and run"
run "$work/smoke.out" env LD_DEBUG=files LD_DEBUG_OUTPUT="$work/ld" "$prefix/bin/simpler" smoke
loaded_from_prefix "$work/ld" "$prefix/bin/simpler" hbg
for rt in hbg tmr; do
  run "$work/run.out" env LD_DEBUG=files LD_DEBUG_OUTPUT="$work/ld" \
    "$prefix/bin/simpler" run vector_example --runtime "$rt"
  grep -q "^PASS vector_example" "$work/run.out" || { cat "$work/run.out" >&2; fail "simpler run vector_example --runtime $rt"; }
  loaded_from_prefix "$work/ld" "$prefix/bin/simpler" "$rt"
done
echo "check_install: PASS (prefix $prefix)"
