#!/bin/sh
# expect_job_ends.sh NP MPIEXEC ARGS... -- PROGRAM: run the job and pass when
# it ended with a non-zero status after every surviving rank printed that
# it was waiting, and none printed that its wait returned. ctest's TIMEOUT
# bounds the time (a hang fails the test).
np=$1
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
waiting=$(printf '%s\n' "$out" | grep -c 'waiting for rank 1')
if [ "$rc" -eq 0 ]; then
  echo "expect_job_ends: the job exited 0; a rank that died should fail it"
  exit 1
fi
if [ "$waiting" -lt 1 ]; then
  echo "expect_job_ends: no surviving rank got to its wait ($waiting of $((np - 1)))"
  exit 1
fi
if printf '%s\n' "$out" | grep -q 'returned (it must not)'; then
  echo "expect_job_ends: a wait returned"
  exit 1
fi
echo "expect_job_ends: the job ended with status $rc"
exit 0
