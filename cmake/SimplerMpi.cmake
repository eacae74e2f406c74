# mpirun for simpler's own tests (tests/l4, examples/multichip,
# docs/quickstart), in one place: -np 2 and -np 4 on this machine, loopback
# only (the shared-memory BTL without its single-copy mechanism, which
# needs ptrace rights containers often lack), oversubscribed (fewer CPUs
# than ranks), allowed to run as root (CI does). mpirun's own --timeout and
# ctest's TIMEOUT bound every test, so a hung rank fails it, never CI.
set(SIMPLER_MPIEXEC_ARGS --oversubscribe --timeout 150 --mca btl self,vader
    --mca btl_vader_single_copy_mechanism none)
# Under ASan, Open MPI's own leaks are suppressed (tests/l4/lsan.supp): its
# components stay mapped and the slow unwinder walks its frames (built
# without frame pointers), so the frames name them; ours still fail a test.
# (ASAN_OPTIONS here replaces make test-asan's detect_leaks=1, kept.)
set(SIMPLER_MPIEXEC_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mca_base_component_disable_dlclose=1
    LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/l4/lsan.supp:print_suppressions=0
    ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0)

# simpler_add_mpi_test(NAME <ctest name> NP <ranks> [TIMEOUT <s>] COMMAND <exe> [args...]):
# <exe> (a target's file or a path) on <ranks> ranks with the settings above.
function(simpler_add_mpi_test)
  cmake_parse_arguments(T "" "NAME;NP;TIMEOUT" "COMMAND" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 180)
  endif()
  list(POP_FRONT T_COMMAND exe)
  add_test(NAME ${T_NAME}
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${T_NP} ${SIMPLER_MPIEXEC_ARGS}
            ${MPIEXEC_PREFLAGS} ${exe} ${MPIEXEC_POSTFLAGS} ${T_COMMAND})
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS l4 PROCESSORS 2
    ENVIRONMENT "${SIMPLER_MPIEXEC_ENV}")
endfunction()
