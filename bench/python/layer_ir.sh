#!/bin/sh
# The Python layer's instructions per run, by callgrind (independent of the
# machine's load, unlike any timing): Ir inclusive of the binding's
# worker_run minus that of the sp_worker_run it calls, over 2*N runs (N
# warm-up + N measured, bench/python/layer_loop.py), for the positional and
# the named form of Worker.run on the 1-task hbg bench callable.
#   bench/python/layer_ir.sh [BUILD_DIR] [N]      (needs valgrind)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
n=${2:-300}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for form in positional named; do
    valgrind --tool=callgrind --callgrind-out-file="$out/cg.$form" --toggle-collect=worker_run \
        /usr/bin/python3 "$here/layer_loop.py" "$build" "$form" "$n" >/dev/null 2>"$out/log.$form" ||
        { cat "$out/log.$form"; exit 1; }
    callgrind_annotate --inclusive=yes --threshold=100 --tree=none "$out/cg.$form" >"$out/txt.$form"
    total=$(grep 'python/src/worker.c:worker_run ' "$out/txt.$form" | head -1 | awk '{gsub(",","",$1); print $1}')
    sp=$(grep 'src/worker/worker.c:sp_worker_run ' "$out/txt.$form" | head -1 | awk '{gsub(",","",$1); print $1}')
    echo "$form: $(( (total - sp) / (2 * n) )) instructions per run in the binding (worker_run $total - sp_worker_run $sp, $((2 * n)) runs)"
done
