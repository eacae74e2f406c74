# Thin wrapper over CMake. `make run` and `make test` do all the set-up.
BUILD      ?= build
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all deps build run test test-asan test-tsan bench format format-check clean

all: build

deps:
	@tools/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/bin/simpler smoke
	$(BUILD)/bin/simpler run paged_attention --runtime hbg --case large

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

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
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSIMPLER_SANITIZE=address,undefined

test-asan: deps build-asan/CMakeCache.txt
	cmake --build build-asan -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j $(JOBS)

build-tsan/CMakeCache.txt: | deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSIMPLER_SANITIZE=thread

# ThreadSanitizer over the tests that can run under it (tests/plain: Criterion
# does not start under TSan). halt_on_error: a report fails the test.
test-tsan: deps build-tsan/CMakeCache.txt
	cmake --build build-tsan -j $(JOBS)
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ctest --test-dir build-tsan --output-on-failure -L plain

FORMAT_FILES = $(shell git ls-files '*.c' '*.h')

format:
	clang-format -i $(FORMAT_FILES)

format-check:
	clang-format --dry-run --Werror $(FORMAT_FILES)

clean:
	rm -rf $(BUILD) build-asan build-tsan
