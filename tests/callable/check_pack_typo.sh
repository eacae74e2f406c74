#!/bin/sh
# Issue 14: `simpler pack` with a typo'd --entry used to exit 0 and the
# callable failed only at registration. Now it exits 1, names the symbol
# and the file, and writes no blob.
# usage: check_pack_typo.sh SIMPLER ORCH.so KERNELS.so WORK_DIR
set -u
simpler=$1 orch=$2 kernels=$3 work=$4
out="$work/typo_check.spc"
rm -f "$out"
msg=$("$simpler" pack -o "$out" --orch "$orch" --entry sample_orhc \
      --kernel "0:aiv:$kernels:sample_add" 2>&1)
rc=$?
fail() { echo "check_pack_typo: $1"; echo "output: $msg"; exit 1; }
[ "$rc" -eq 1 ] || fail "exit $rc, expected 1"
case "$msg" in
*"SP_EMODULE_SYMBOL"*"'sample_orhc'"*"$orch"*) ;;
*) fail "the error does not name the status, the symbol and the file" ;;
esac
[ ! -e "$out" ] || fail "a refused pack left $out"
# The right name packs.
"$simpler" pack -o "$out" --orch "$orch" --entry sample_orch \
    --kernel "0:aiv:$kernels:sample_add" || fail "the correct entry did not pack"
echo "check_pack_typo: ok"
