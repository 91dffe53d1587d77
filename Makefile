# tilesim: build, test, demo, bench, check-asan, install.
#
# `make demo` and `make test` install missing Debian packages first (deps),
# so both work on a fresh Debian machine as root. Flags come from pkg-config;
# they are recursively expanded, so they are read after deps has run.

CC      ?= cc
BUILD   ?= build
PREFIX  ?= /usr/local
PKGS    := openblas criterion hwloc
DEBS    := libopenblas-dev libcriterion-dev libhwloc-dev pkg-config

# CFLAGS may be given on the command line (check-asan does); the flags the
# build needs are appended with override so that they survive it.
CFLAGS  ?= -O3 -g
override CFLAGS += -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -pthread -MMD -MP $(EXTRA_CFLAGS)
override LDFLAGS += -pthread $(EXTRA_LDFLAGS)
PKG_CFLAGS = $(shell pkg-config --cflags openblas hwloc)
PKG_LIBS   = $(shell pkg-config --libs openblas hwloc) -lm
CRIT_LIBS  = $(shell pkg-config --libs criterion)

LIB_SRC   := $(wildcard kernel/*.c sim/*.c)
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB       := $(BUILD)/libtilesim.a
EX_SRC    := $(wildcard examples/*.c)
EXAMPLES  := $(EX_SRC:%.c=$(BUILD)/%)
KER_SRC   := $(wildcard examples/kernels/*.c)
KER_OBJ   := $(KER_SRC:%.c=$(BUILD)/%.o)
# example kernels shared by examples, cli, tests and bench
KERNELS   := $(BUILD)/libexamples.a
TEST_SRC  := $(wildcard tests/*.c)
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/%.o)
TESTS     := $(BUILD)/tests/tilesim_tests
CLI_SRC   := $(wildcard cli/*.c)
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/%.o)
CLI       := $(BUILD)/tilesim
BENCH_SRC := $(wildcard bench/*.c)
BENCHES   := $(BENCH_SRC:%.c=$(BUILD)/%)

.PHONY: all deps demo demo-all test bench check-asan install clean
all: $(LIB) $(EXAMPLES) $(CLI) $(TESTS) $(BENCHES)

# Install what the build needs, only when something is missing.
deps:
	@if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists $(PKGS); then \
	  echo "tilesim: installing $(DEBS)"; \
	  if [ "$$(id -u)" != 0 ]; then echo "tilesim: run as root, or install: apt-get install $(DEBS)" >&2; exit 1; fi; \
	  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(DEBS)) >/dev/null || exit 1; \
	fi

$(BUILD)/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(KERNELS): $(KER_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/examples/%: $(BUILD)/examples/%.o $(KERNELS) $(LIB)
	$(CC) $(CFLAGS) $< $(KERNELS) $(LIB) $(LDFLAGS) $(PKG_LIBS) -o $@

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(KERNELS) $(LIB)
	$(CC) $(CFLAGS) $< $(KERNELS) $(LIB) $(LDFLAGS) $(PKG_LIBS) -o $@

# the `tilesim` command
$(CLI): $(CLI_OBJ) $(KERNELS) $(LIB)
	$(CC) $(CFLAGS) $(CLI_OBJ) $(KERNELS) $(LIB) $(LDFLAGS) $(PKG_LIBS) -o $@

$(TESTS): $(TEST_OBJ) $(KERNELS) $(LIB)
	$(CC) $(CFLAGS) $(TEST_OBJ) $(KERNELS) $(LIB) $(LDFLAGS) $(PKG_LIBS) $(CRIT_LIBS) -o $@

# The main job: the tiled matmul, f32 then bf16, verified against OpenBLAS.
demo: $(BUILD)/examples/matmul
	$(BUILD)/examples/matmul

# Every example program with its defaults; each verifies itself and fails on a mismatch.
demo-all: $(EXAMPLES)
	@set -e; for ex in $(EXAMPLES); do echo "### $$ex"; OPENBLAS_NUM_THREADS=1 $$ex; echo; done

# OpenBLAS inside the tests runs on one thread: results must not depend on it,
# and Criterion already runs tests in parallel processes. Every test has a
# timeout: a deadlock must be reported, never hang the suite.
test: $(TESTS) $(EXAMPLES) $(CLI)
	sh tests/readme_example.sh $(LIB)
	OPENBLAS_NUM_THREADS=1 $(TESTS) -j2 --timeout 120

bench: $(BENCHES)
	OPENBLAS_NUM_THREADS=1 $(BUILD)/bench/matmul_vs_blas
	$(BUILD)/bench/sweep_speed

# The whole suite again under AddressSanitizer and UBSan, no recovery.
# Leak detection stays off for the test runner (Criterion's own allocations
# at exit); the demo runs with it on. A huge allocation returns NULL, as
# malloc does without ASan, so that tilesim's PL_ENOMEM paths are what run.
SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
check-asan: deps
	$(MAKE) BUILD=build/asan CFLAGS="-O1 -g" EXTRA_CFLAGS="$(SAN)" EXTRA_LDFLAGS="$(SAN)" \
	  build/asan/tests/tilesim_tests build/asan/examples/matmul
	ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 OPENBLAS_NUM_THREADS=1 build/asan/tests/tilesim_tests -j2 --timeout 300
	OPENBLAS_NUM_THREADS=1 build/asan/examples/matmul 300 200 260 128 128 128 f32 >/dev/null
	OPENBLAS_NUM_THREADS=1 build/asan/examples/matmul 300 200 260 128 128 128 bf16 >/dev/null

install: $(LIB) $(CLI)
	install -d $(PREFIX)/bin $(PREFIX)/lib $(PREFIX)/include/tilesim/kernel $(PREFIX)/include/tilesim/sim
	install -m 755 $(CLI) $(PREFIX)/bin/
	install -m 644 $(LIB) $(PREFIX)/lib/
	install -m 644 kernel/pallas.h $(PREFIX)/include/tilesim/kernel/
	install -m 644 sim/tilesim.h $(PREFIX)/include/tilesim/sim/

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
