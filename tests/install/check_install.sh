#!/usr/bin/env bash
# The install as another project uses it (issue 14): `cmake --install` of
# this build into a fresh prefix, the layout and the SONAME checked, then
# docs/quickstart copied out of the source tree and built against the
# prefix twice, with find_package(simpler) and with pkg-config and its
# plain Makefile, and run on both runtimes; then the installed `simpler`
# runs smoke and an example. Nothing may come from the build tree: no
# LD_LIBRARY_PATH, no build path in an installed RUNPATH, and every
# libsimpler / module / data file a program loads is under the prefix
# (the loader's own record of what it opened: LD_DEBUG=files). Then the
# Python package from the prefix alone (issue 15): import, an installed
# example on both runtimes, build_callable against the installed headers.
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
  lib/simpler/libsimpler_platform_sim.so lib/simpler/simpler-load-probe bin/simpler \
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
for f in "$prefix"/lib/simpler/*.so "$prefix"/lib/simpler/simpler-load-probe; do
  [ "$(runpath "$f")" = "\$ORIGIN" ] || fail "$f: RUNPATH '$(runpath "$f")', want \$ORIGIN"
done
[ "$(runpath "$prefix/bin/simpler")" = "\$ORIGIN/../lib" ] ||
  fail "bin/simpler: RUNPATH '$(runpath "$prefix/bin/simpler")', want \$ORIGIN/../lib"
for f in "$prefix"/lib/libsimpler.so.* "$prefix"/lib/simpler/*.so "$prefix"/lib/simpler/simpler-load-probe \
  "$prefix"/bin/simpler; do
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

# The Python package (issue 15), from the prefix alone: PYTHONPATH names
# only the prefix's site-packages, the script runs from a directory outside
# both trees with the build's interpreter (Debian's python3), no user site,
# no script directory on sys.path (-P). It imports simpler, runs the
# installed vector_example on both runtimes with numpy inputs, and builds a
# callable with build_callable against the installed headers (a compiler
# wrapper records the command lines) and runs it. Every libsimpler,
# runtime module and simpler file the interpreter opens is in the prefix,
# nothing in the build or source tree.
cache_var() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
if compgen -G "$build/python/simpler/_simpler*.so" >/dev/null; then
  step "the Python package from the prefix"
  python=$(cache_var Python3_EXECUTABLE)
  [ -x "$python" ] || fail "the build's Python3_EXECUTABLE '$python' is not executable"
  pydir=$(cache_var SIMPLER_PYTHON_INSTALL_DIR)
  case "$pydir" in
  /*) fail "SIMPLER_PYTHON_INSTALL_DIR=$pydir is outside the prefix: nothing to check" ;;
  esac
  pysite=$prefix/$pydir
  [ -e "$pysite/simpler/__init__.py" ] || fail "the install has no $pydir/simpler/__init__.py"
  ext=$(compgen -G "$pysite/simpler/_simpler*.so") || fail "the install has no $pydir/simpler/_simpler*.so"
  [ "$(runpath "$ext")" != "" ] || fail "$ext has no RUNPATH (libsimpler would not be found)"
  if runpath "$ext" | grep -qF "$build"; then fail "$ext: RUNPATH names the build tree"; fi
  grep -qF "$build" "$pysite/simpler/_paths.py" && fail "$pydir/simpler/_paths.py names the build tree"
  grep -qF "$src" "$pysite/simpler/_paths.py" && fail "$pydir/simpler/_paths.py names the source tree"
  mkdir -p "$work/py"
  cat >"$work/py/cc-wrapper" <<SH
#!/bin/sh
printf '%s\n' "\$*" >>"$work/py/cc.log"
exec "$cc" "\$@"
SH
  chmod +x "$work/py/cc-wrapper"
  cat >"$work/py/check.py" <<'PY'
import os
import sys

prefix, build, src, work = sys.argv[1:5]
import numpy as np
import simpler
import simpler._paths

def under(path, root):
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root + os.sep)

site = os.environ["PYTHONPATH"]
for m in (simpler, simpler._simpler, simpler._paths):
    assert under(m.__file__, site), f"{m.__name__} from {m.__file__}, not {site}"
for name, m in list(sys.modules.items()):
    f = getattr(m, "__file__", None) or ""
    assert not (under(f, build) or under(f, src)), f"module {name} from the tree: {f}"
assert not simpler._paths.BUILD_TREE, "the installed _paths says BUILD_TREE"
assert under(simpler.include_dir(), prefix) and os.path.isfile(
    os.path.join(simpler.include_dir(), "simpler", "kernel.h")), simpler.include_dir()
assert under(simpler.examples_dir(), prefix), simpler.examples_dir()
assert simpler.__version__ == sys.argv[5], (simpler.__version__, sys.argv[5])

rng = np.random.default_rng(15)
a = rng.standard_normal(4096).astype(np.float32)
b = rng.standard_normal(4096).astype(np.float32)
c = a + b
want = (c + 1) * (c + 2) + c
vec = simpler.example("vector_example")
for rt in ("hbg", "tmr"):
    with simpler.Worker(runtime=rt) as w:
        f = np.zeros_like(a)
        r = w.run(vec, (a, b, f), (4,))
        np.testing.assert_allclose(f, want, rtol=1e-6, atol=1e-6, err_msg=rt)
        assert r.stats.tasks > 0, (rt, r.stats)
        print(f"vector_example {rt}: {r.stats.tasks} tasks, PASS")

os.makedirs(os.path.join(work, "src"), exist_ok=True)
kern = os.path.join(work, "src", "twice.c")
orch = os.path.join(work, "src", "twice_orch.c")
with open(kern, "w") as fh:
    fh.write('#include "simpler/kernel.h"\n'
             "SP_KERNEL(twice)\n{\n    (void)ctx;\n"
             "    const sp_tensor *x = sp_arg_tensor(args, 0), *y = sp_arg_tensor(args, 1);\n"
             "    const float *xp = sp_tensor_data(x);\n    float *yp = sp_tensor_data(y);\n"
             "    for (int64_t i = 0; i < x->shape[0]; i++)\n        yp[i] = 2.0f * xp[i];\n}\n")
with open(orch, "w") as fh:
    fh.write('#include "simpler/orchestration.h"\n#include "twice_orch_kernels.h"\n'
             "SP_ORCHESTRATION(orchestration)\n{\n"
             "    sp_tensor x = args->tensors[SP_ARG_x], y = args->tensors[SP_ARG_y];\n"
             "    sp_task t = sp_task_aiv(SP_FUNC_twice);\n"
             "    sp_task_in(&t, &x);\n    sp_task_arg(&t, &y, SP_OUT_EXISTING);\n"
             "    sp_submit(o, &t);\n}\n")
cc = os.path.join(work, "cc-wrapper")
callable_ = simpler.build_callable(orchestration=orch, kernels=[("twice", "aiv", kern, "ie")],
                                   signature="x:in:f32[n],y:out:f32[n]", cc=cc,
                                   cache_dir=os.path.join(work, "cache"))
with open(os.path.join(work, "cc.log")) as fh:
    lines = fh.read().splitlines()
assert lines, "build_callable did not run the compiler"
inc = "-I" + simpler.include_dir()
for line in lines:
    assert inc in line.split(), f"no {inc} in: {line}"
    assert build not in line and src not in line, f"the tree in: {line}"
for rt in ("hbg", "tmr"):
    with simpler.Worker(runtime=rt) as w:
        r = w.run(callable_, x=a, y=None)
        np.testing.assert_array_equal(r.outputs["y"], 2 * a, err_msg=rt)
        print(f"build_callable twice {rt}: PASS")
PY
  run "$work/py.out" env -u PYTHONHOME -u PYTHONSTARTUP -u SIMPLER_CACHE_DIR -u CC -C "$work/py" \
    PYTHONPATH="$pysite" PYTHONNOUSERSITE=1 PYTHONDONTWRITEBYTECODE=1 LD_DEBUG=files LD_DEBUG_OUTPUT="$work/ld" \
    "$python" -P "$work/py/check.py" "$prefix" "$build" "$src" "$work/py" "$version"
  cat "$work/py.out"
  [ "$(grep -c 'PASS$' "$work/py.out")" -eq 4 ] || fail "the Python check did not pass 4 runs"
  # Everything the interpreter dlopened that is simpler's is the prefix's;
  # nothing comes from either tree (numpy and the interpreter's own
  # extensions are the system's).
  opened=$(cat "$work"/ld.* | sed -n 's/.*file=\([^ ]*\) .*dynamically loaded by.*/\1/p' |
    grep -v '^/proc/self/fd/' | xargs -r realpath -m | sort -u)
  rm -f "$work"/ld.*
  for f in $opened; do
    case "$f" in
    "$build"/* | "$src"/*) fail "python3 opened $f, in the build or source tree" ;;
    "$prefix"/*) ;;
    *simpler*) fail "python3 opened $f, outside the prefix $prefix" ;;
    esac
  done
  for f in "$ext" "$prefix/lib/simpler/libsimpler_hbg_sim.so" "$prefix/lib/simpler/libsimpler_tmr_sim.so"; do
    echo "$opened" | grep -qxF "$(realpath -m "$f")" || fail "python3 did not open $f (opened: $opened)"
  done
  for f in $(ldd "$ext" | sed -n 's/.*libsimpler[^ ]* => \([^ ]*\) .*/\1/p' | xargs -r realpath -m); do
    case "$f" in
    "$prefix"/*) ;;
    *) fail "$ext resolves $f, outside the prefix $prefix" ;;
    esac
  done
else
  step "no Python package in this build ($build/python/simpler/_simpler*.so): not checked"
fi
echo "check_install: PASS (prefix $prefix)"
