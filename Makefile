# Thin wrapper over CMake. `make run` and `make test` do all the set-up.
BUILD      ?= build
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
PREFIX     ?= /usr/local
PYTHON     ?= python3

# Quiet by default: no "Entering directory" lines from the makes that
# cmake --build runs, and this file's own commands not echoed. V=1 shows
# every command (this file's and the compiler's).
MAKEFLAGS += --no-print-directory
ifeq ($(V),1)
Q :=
CMAKE_BUILD_FLAGS := --verbose
else
Q := @
CMAKE_BUILD_FLAGS :=
endif

.PHONY: all deps build run install test test-unit test-asan test-tsan test-summary bench fuzz \
        format format-check clean

all: build

deps:
	@tools/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	$(Q)cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS)

build: deps $(BUILD)/CMakeCache.txt
	$(Q)cmake --build $(BUILD) -j $(JOBS) $(CMAKE_BUILD_FLAGS)

run: build
	$(Q)$(BUILD)/bin/simpler smoke
	$(Q)$(BUILD)/bin/simpler run paged_attention --runtime hbg --case large

# Headers, libsimpler.so, the runtime modules, the command, the CMake
# package and simpler.pc under PREFIX (cmake/SimplerInstall.cmake).
install: build
	$(Q)cmake --install $(BUILD) --prefix $(PREFIX)

# The whole suite, then again under AddressSanitizer + UBSan and under
# ThreadSanitizer: CI runs exactly this, so the sanitizers gate every landing.
# The sanitizer phases also run every test in the checking modes
# (SIMPLER_CHECK=1: red zones around device buffers, SP_EKERNEL_OVERRUN;
# SIMPLER_SIM_PROTECT=1: the sim's device view closed outside launches, so
# host code that dereferences a device address faults); the first runs
# with the defaults (both off), as users do.
# Each phase keeps its ctest results (ctest-junit.xml in its build folder);
# the summary counts the Criterion cases of each phase and names the tests a
# phase leaves out, with the reason tests/CMakeLists.txt records.
# ctest keeps only 1 KiB of a passing test's output by default; the summary
# reads the Criterion "Synthesis:" line at its end.
CTEST_KEEP = --test-output-size-passed 4194304 --test-output-truncation head
test: test-unit test-asan test-tsan
	$(Q)$(PYTHON) tools/test_summary.py normal=$(BUILD) asan=build-asan tsan=build-tsan

test-summary:
	$(Q)$(PYTHON) tools/test_summary.py normal=$(BUILD) asan=build-asan tsan=build-tsan

test-unit: build
	$(Q)ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) \
	  $(CTEST_KEEP) --output-junit $(abspath $(BUILD))/ctest-junit.xml

# The peer suite (issue 7, docs/BENCHMARKS.md): StarPU, OpenMP (libgomp,
# libomp), oneTBB, OpenBLAS/LAPACKE and gnuplot come from Debian's packages;
# the configure step re-runs so a fresh install of OpenBLAS is picked up.
BENCH_DEPS = g++ clang libomp-dev pkg-config libstarpu-dev libtbb-dev liblapacke-dev \
             libopenblas-dev gnuplot-nox

bench:
	@SIMPLER_DEPS_EXTRA="$(BENCH_DEPS)" tools/install-deps.sh
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)
	bench/run --build-dir $(BUILD)

build-asan/CMakeCache.txt: | deps
	$(Q)cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSIMPLER_SANITIZE=address,undefined

test-asan: deps build-asan/CMakeCache.txt
	$(Q)cmake --build build-asan -j $(JOBS) $(CMAKE_BUILD_FLAGS)
	$(Q)SIMPLER_CHECK=1 SIMPLER_SIM_PROTECT=1 ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure \
	  -j $(JOBS) $(CTEST_KEEP) --output-junit $(abspath build-asan)/ctest-junit.xml

build-tsan/CMakeCache.txt: | deps
	$(Q)cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSIMPLER_SANITIZE=thread

# ThreadSanitizer over the whole suite. Criterion does not start under TSan,
# so build-tsan links the Criterion tests against tests/support/crshim (one
# forked child per test, as Criterion). halt_on_error: a report fails the test.
test-tsan: deps build-tsan/CMakeCache.txt
	$(Q)cmake --build build-tsan -j $(JOBS) $(CMAKE_BUILD_FLAGS)
	$(Q)SIMPLER_CHECK=1 SIMPLER_SIM_PROTECT=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ctest \
	  --test-dir build-tsan --output-on-failure -j $(JOBS) \
	  $(CTEST_KEEP) --output-junit $(abspath build-tsan)/ctest-junit.xml

# libFuzzer targets (issue 8, docs/RELIABILITY.md "Fuzzing"), built with
# Debian's clang and compiler-rt in build-fuzz: the whole tree under ASan +
# UBSan with fuzzer coverage (fuzzer-no-link), the targets with -fsanitize=fuzzer.
# Each runs FUZZ_SECONDS over a scratch corpus (build-fuzz/fuzz-corpus/<t>)
# seeded from tests/fuzz/corpus/<t> and regressions/<t>; a crash stops
# `make fuzz` and leaves its input in build-fuzz/fuzz-artifacts/<t>/.
FUZZ_DEPS    = clang libclang-rt-dev
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = callable args register
# register loads untrusted shared objects: libFuzzer's fork mode runs the
# fuzzing in a child process and, with -ignore_crashes, records a crash as a
# finding (crash-* in the artifacts) and goes on instead of ending the run.
FUZZ_FLAGS_register = -fork=1 -ignore_crashes=1

fuzz:
	@SIMPLER_DEPS_EXTRA="$(FUZZ_DEPS)" tools/install-deps.sh
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DSIMPLER_SANITIZE=address,undefined,fuzzer-no-link -DSIMPLER_FUZZ=ON \
	  -DCMAKE_C_FLAGS=-Wno-unknown-warning-option
	cmake --build build-fuzz -j $(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))
	@set -e; for t in $(FUZZ_TARGETS); do \
	  mkdir -p build-fuzz/fuzz-corpus/$$t build-fuzz/fuzz-artifacts/$$t; \
	  echo "== fuzz_$$t: $(FUZZ_SECONDS) s"; \
	  extra=""; [ "$$t" = register ] && extra="$(FUZZ_FLAGS_register)"; \
	  build-fuzz/bin/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $$extra \
	    -artifact_prefix=build-fuzz/fuzz-artifacts/$$t/ build-fuzz/fuzz-corpus/$$t \
	    tests/fuzz/corpus/$$t tests/fuzz/regressions/$$t; \
	done

FORMAT_FILES = $(shell git ls-files '*.c' '*.h')

format:
	clang-format -i $(FORMAT_FILES)

format-check:
	clang-format --dry-run --Werror $(FORMAT_FILES)

clean:
	rm -rf $(BUILD) build-asan build-tsan

# The soak test (issue 8, docs/RELIABILITY.md): SOAK_RUNS runs (default
# 10^4, a few minutes on 2 CPUs) over both runtimes and lanes, every example
# and injected faults; fails on a wrong result, an unnamed fault, or resident
# memory / open descriptors growing after warm-up. Not part of `make test`.
soak: build
	$(BUILD)/bin/soak

# valgrind memcheck over representative runs: no invalid access, no
# definite leak (--error-exitcode makes either fail the target). The
# open_close loops catch a leak per worker open/close.
VALGRIND = valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
           --suppressions=tests/valgrind/ld_so.supp \
           --child-silent-after-fork=yes

valgrind: build
	@SIMPLER_DEPS_EXTRA="valgrind" tools/install-deps.sh
	$(VALGRIND) $(BUILD)/bin/simpler run paged_attention --case small --runtime hbg
	$(VALGRIND) $(BUILD)/bin/simpler run paged_attention --case small --runtime tmr
	$(VALGRIND) $(BUILD)/bin/quickstart $(BUILD)/docs/quickstart/quickstart_callable.spc hbg
	$(VALGRIND) $(BUILD)/bin/open_close $(BUILD)/lib/libsimpler_hbg_sim.so 8
	$(VALGRIND) $(BUILD)/bin/open_close $(BUILD)/lib/libsimpler_tmr_sim.so 8

.PHONY: soak valgrind
