# tilesim: build, test, demo, bench, check-asan, install, fuzz.
#
# `make demo` and `make test` install missing Debian packages first (deps),
# so both work on a fresh Debian machine as root. Flags come from pkg-config;
# they are recursively expanded, so they are read after deps has run.
# The library needs openblas and hwloc; criterion, jansson (the tests parse
# the JSON tilesim writes) and g++ (a test is C++) are for the tests only.

CC      ?= cc
CXX     ?= g++
BUILD   ?= build
PREFIX  ?= /usr/local
DESTDIR ?=
PKGS    := openblas criterion hwloc jansson
DEBS    := libopenblas-dev libcriterion-dev libhwloc-dev libjansson-dev pkg-config g++
# the version the pkg-config file carries: the newest entry of docs/changelog.md
VERSION := $(or $(shell sed -n 's/^- \([0-9][0-9.]*\):.*/\1/p' docs/changelog.md 2>/dev/null | head -n 1),0.0)

# CFLAGS may be given on the command line (check-asan does); the flags the
# build needs are appended with override so that they survive it.
CFLAGS  ?= -O3 -g
override CFLAGS += -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -pthread -MMD -MP $(EXTRA_CFLAGS)
override LDFLAGS += -pthread $(EXTRA_LDFLAGS)
# C++ (the test that the public headers work from C++): EXTRA_CFLAGS apply
# too (-Werror, sanitizers) unless EXTRA_CXXFLAGS is given.
CXXFLAGS ?= -O2 -g
EXTRA_CXXFLAGS ?= $(EXTRA_CFLAGS)
override CXXFLAGS += -std=c++17 -Wall -Wextra -pedantic-errors -pthread -MMD -MP $(EXTRA_CXXFLAGS)
PKG_CFLAGS = $(shell pkg-config --cflags openblas hwloc)
# -ldl: plugins (dlopen); in libc since glibc 2.34, a separate library before
PKG_LIBS   = $(shell pkg-config --libs openblas hwloc) -lm -ldl
TEST_CFLAGS = $(shell pkg-config --cflags criterion jansson)
TEST_LIBS  = $(shell pkg-config --libs criterion jansson)

LIB_SRC   := $(wildcard kernel/*.c sim/*/*.c)
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB       := $(BUILD)/libtilesim.a
EX_SRC    := $(wildcard examples/*.c)
EXAMPLES  := $(EX_SRC:%.c=$(BUILD)/%)
KER_SRC   := $(wildcard examples/kernels/*.c)
KER_OBJ   := $(KER_SRC:%.c=$(BUILD)/%.o)
# example kernels shared by examples, cli, tests and bench
KERNELS   := $(BUILD)/libexamples.a
TEST_SRC  := $(wildcard tests/*.c)
TEST_CXX_SRC := $(wildcard tests/*.cc)
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/%.o) $(TEST_CXX_SRC:%.cc=$(BUILD)/%.o)
TESTS     := $(BUILD)/tests/tilesim_tests
CLI_SRC   := $(wildcard cli/*.c)
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/%.o)
CLI       := $(BUILD)/tilesim
BENCH_SRC := $(wildcard bench/*.c)
BENCHES   := $(BENCH_SRC:%.c=$(BUILD)/%)
# every object of this build directory: their .d files, and only theirs, are read
ALL_OBJ   := $(LIB_OBJ) $(KER_OBJ) $(TEST_OBJ) $(CLI_OBJ) $(EX_SRC:%.c=$(BUILD)/%.o) $(BENCH_SRC:%.c=$(BUILD)/%.o)
# the installed headers: the public ones and every project header they include
PUB_HDR   := kernel/pallas.h kernel/pltpu.h sim/tilesim.h sim/tilesim_check.h sim/kdef.h sim/tilesim_mesh.h sim/tilesim_hlo.h sim/tilesim_memview.h sim/tilesim_review.h sim/tilesim_kernel.h
# kernel plugins (sim/kdef.h): examples/plugin/NAME.c -> BUILD/examples/plugin/NAME.so
PLUGIN_SRC := $(wildcard examples/plugin/*.c)
PLUGINS   := $(PLUGIN_SRC:%.c=$(BUILD)/%.so)
# plugins that misbehave on purpose, for the suite (tests/plugins/NAME.c -> BUILD/tests/plugins/NAME.so)
TPLUGIN_SRC := $(wildcard tests/plugins/*.c)
PLUGINS   += $(TPLUGIN_SRC:%.c=$(BUILD)/%.so)
# Programs that load plugins export the library to them: every symbol of
# libtilesim.a (a plugin may call one the program never does) in the
# dynamic symbol table.
WHOLE_LIB  = -rdynamic -Wl,--whole-archive $(LIB) -Wl,--no-whole-archive

.PHONY: all deps demo demo-all test test-docs docs-regen docs-deps bench check-asan check-clang check-tsan install fuzz clean mpi mpi-deps test-mpi \
        browser-deps test-browser
all: $(LIB) $(EXAMPLES) $(CLI) $(TESTS) $(BENCHES) $(PLUGINS)

# Example and bench objects are intermediate files of a pattern chain; keep
# them, or make deletes them after linking and rebuilds them every time.
# Only those: a bare .SECONDARY makes every target intermediate, and make may
# then skip building a new, missing object.
.SECONDARY: $(EX_SRC:%.c=$(BUILD)/%.o) $(BENCH_SRC:%.c=$(BUILD)/%.o)

# Install what the build needs, only when something is missing.
deps:
	@if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists $(PKGS) || \
	    ! command -v $(CXX) >/dev/null 2>&1; then \
	  echo "tilesim: installing $(DEBS)"; \
	  if [ "$$(id -u)" != 0 ]; then echo "tilesim: run as root, or install: apt-get install $(DEBS)" >&2; exit 1; fi; \
	  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(DEBS)) >/dev/null || exit 1; \
	fi

$(BUILD)/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

$(TEST_SRC:%.c=$(BUILD)/%.o): $(BUILD)/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) $(TEST_CFLAGS) -c $< -o $@

$(BUILD)/%.o: %.cc | deps
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(PKG_CFLAGS) $(TEST_CFLAGS) -c $< -o $@

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
	$(CC) $(CFLAGS) $(CLI_OBJ) $(KERNELS) $(WHOLE_LIB) $(LDFLAGS) $(PKG_LIBS) -o $@

# A plugin is built with the one line the README gives (plus the build's
# -Werror or sanitizers): nothing of the library is linked in, the program
# that loads it provides it.
$(BUILD)/examples/plugin/%.so: examples/plugin/%.c sim/kdef.h sim/tilesim.h kernel/pallas.h | deps
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC -O2 -Wall -Wextra -I. $(EXTRA_CFLAGS) $< -o $@

$(BUILD)/tests/plugins/%.so: tests/plugins/%.c sim/kdef.h sim/tilesim.h kernel/pallas.h | deps
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC -O2 -Wall -Wextra -I. $(EXTRA_CFLAGS) $< -o $@

# linked by the C++ driver: a test is C++ (its runtime, and the sanitizers' C++ parts)
$(TESTS): $(TEST_OBJ) $(KERNELS) $(LIB)
	$(CXX) $(filter-out -std=%,$(CFLAGS)) $(TEST_OBJ) $(KERNELS) $(WHOLE_LIB) $(LDFLAGS) $(PKG_LIBS) $(TEST_LIBS) -o $@

# The main job: the tiled matmul, f32 then bf16, verified against OpenBLAS.
demo: $(BUILD)/examples/matmul
	$(BUILD)/examples/matmul

# Every example program with its defaults; each verifies itself and fails on a mismatch.
demo-all: $(EXAMPLES)
	@set -e; for ex in $(EXAMPLES); do echo "### $$ex"; OPENBLAS_NUM_THREADS=1 $$ex; echo; done

# OpenBLAS inside the tests runs on one thread: results must not depend on it,
# and Criterion already runs tests in parallel processes. Every test has a
# timeout: a deadlock must be reported, never hang the suite. Criterion's
# --timeout does not always end a hung test (Snaipe/Criterion#345), so the
# whole run is limited too (SUITE_TIMEOUT seconds).
SUITE_TIMEOUT ?= 900
test: $(TESTS) $(EXAMPLES) $(CLI) $(PLUGINS)
	sh tools/layering.sh $(BUILD)
	sh tests/readme_example.sh $(LIB)
	sh tests/readme_mesh_example.sh $(LIB)
	OPENBLAS_NUM_THREADS=1 timeout -k 10 $(SUITE_TIMEOUT) $(TESTS) -j2 --timeout 120

bench: $(BENCHES)
	OPENBLAS_NUM_THREADS=1 $(BUILD)/bench/matmul_vs_blas
	$(BUILD)/bench/sweep_speed
	$(BUILD)/bench/megacore_threads
	OPENBLAS_NUM_THREADS=1 $(BUILD)/bench/mesh_scale

# The whole suite again under AddressSanitizer and UBSan, no recovery.
# Leak detection stays off for the test runner (Criterion's own allocations
# at exit); the demo runs with it on. A huge allocation returns NULL, as
# malloc does without ASan, so that tilesim's PL_ENOMEM paths are what run.
# float-cast-overflow: GCC leaves it out of "undefined" (clang has it); a NaN or huge
# double converted to an integer is undefined behaviour (FINDINGS F7).
SAN := -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer
# The suite runs the tilesim command and the examples of its own build
# directory (tests/test_cli.c), so those are built with the sanitizers too.
check-asan: deps
	$(MAKE) BUILD=build/asan CFLAGS="-O1 -g" EXTRA_CFLAGS="$(SAN)" EXTRA_LDFLAGS="$(SAN)" \
	  build/asan/tests/tilesim_tests build/asan/tilesim $(EX_SRC:%.c=build/asan/%) \
	  $(PLUGIN_SRC:%.c=build/asan/%.so) $(TPLUGIN_SRC:%.c=build/asan/%.so)
	ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 OPENBLAS_NUM_THREADS=1 \
	  timeout -k 10 $(SUITE_TIMEOUT) build/asan/tests/tilesim_tests -j2 --timeout 300
	OPENBLAS_NUM_THREADS=1 build/asan/examples/matmul 300 200 260 128 128 128 f32 >/dev/null
	OPENBLAS_NUM_THREADS=1 build/asan/examples/matmul 300 200 260 128 128 128 bf16 >/dev/null

# The suite again with clang's ASan and UBSan: GCC 12's UBSan does not report
# arithmetic on a NULL pointer (NULL + 0, FINDINGS.md F1), clang's does.
# clang comes from the same packages as `make fuzz` (fuzz-deps installs them).
check-clang: deps fuzz-deps
	$(MAKE) BUILD=build/clang CC=clang CXX=clang++ CFLAGS="-O1 -g" CXXFLAGS="-O1 -g" EXTRA_CFLAGS="$(SAN)" \
	  EXTRA_LDFLAGS="$(SAN)" build/clang/tests/tilesim_tests build/clang/tilesim $(EX_SRC:%.c=build/clang/%) \
	  $(PLUGIN_SRC:%.c=build/clang/%.so) $(TPLUGIN_SRC:%.c=build/clang/%.so)
	ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 OPENBLAS_NUM_THREADS=1 \
	  timeout -k 10 $(SUITE_TIMEOUT) build/clang/tests/tilesim_tests -j2 --timeout 300

# The suites whose code runs on several host threads (the megacore cores of
# issue 11, pl_sweep's workers) under ThreadSanitizer: a data race between
# them fails the test (halt_on_error). libtsan comes with gcc; nothing to
# install. Criterion needs tests/tsan_criterion_arena.c to start under TSan.
# OpenBLAS on one thread: its own threads are not ours to check. Both suites
# run, then the target fails if either did.
# Not mesh_collectives_handshake: its kernels race on purpose, and a
# kernel's own loads and stores (pl_add on a buffer another device's copy
# lands in) are not tracked, so the simulator's host threads race with them
# as the kernel's devices would; the race the test wants is reported anyway.
TSAN := -fsanitize=thread -fno-omit-frame-pointer
check-tsan: deps
	$(MAKE) BUILD=build/tsan CFLAGS="-O1 -g" EXTRA_CFLAGS="$(TSAN)" EXTRA_LDFLAGS="$(TSAN)" build/tsan/tests/tilesim_tests
	@status=0; for suite in megacore_threads sweep_threads mesh_runtime mesh_timing mesh_races mesh_race_queue mesh_collectives mesh_scoped mesh_cores; do \
	  echo "check-tsan: $$suite"; \
	  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 OPENBLAS_NUM_THREADS=1 \
	    timeout -k 10 $(SUITE_TIMEOUT) build/tsan/tests/tilesim_tests -j2 --timeout 600 --filter "$$suite/*" || status=1; \
	done; exit $$status

# Across host processes with Open MPI (README "Across machines"). The
# default build does not depend on MPI: `make mpi` builds the library and
# the command again with mpicc and -DTILESIM_MPI into build/mpi, then copies
# them to build/libtilesim_mpi.a and build/tilesim-mpi. test-mpi runs them
# under mpirun on this host (loopback), comparing with one process.
MPI_DEBS := libopenmpi-dev openmpi-bin
mpi-deps:
	@if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then \
	  echo "tilesim: installing $(MPI_DEBS)"; \
	  if [ "$$(id -u)" != 0 ]; then echo "tilesim: run as root, or install: apt-get install $(MPI_DEBS)" >&2; exit 1; fi; \
	  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(MPI_DEBS)) >/dev/null || exit 1; \
	fi

mpi: deps mpi-deps
	$(MAKE) BUILD=build/mpi CC=mpicc EXTRA_CFLAGS="-DTILESIM_MPI $(EXTRA_CFLAGS)" build/mpi/libtilesim.a build/mpi/tilesim \
	  build/mpi/libexamples.a
	cp build/mpi/libtilesim.a build/libtilesim_mpi.a
	cp build/mpi/tilesim build/tilesim-mpi

# tests/mpi/mesh_cases.c: meshes across ranks through the library (races,
# M10, faults, deadlocks, the trace), built with mpicc against the MPI build
MPI_CASES := build/mpi/tests/mpi/mesh_cases
$(MPI_CASES): tests/mpi/mesh_cases.c mpi
	@mkdir -p $(dir $@)
	mpicc $(CFLAGS) -DTILESIM_MPI $< build/mpi/libexamples.a build/mpi/libtilesim.a $(PKG_LIBS) $(LDFLAGS) -o $@

test-mpi: mpi $(CLI) $(PLUGINS) $(MPI_CASES)
	sh tests/mpi/test_mpi.sh $(CLI) build/tilesim-mpi $(MPI_CASES)

# The teaching page (tilesim run/explain --html) in a real browser: headless
# Chromium loads it and tests/browser/test_browser.sh checks the DOM its
# script renders and that a screenshot is not blank; the matmul page's
# screenshot is kept as BUILD/page.png (docs/page.png in the README).
# Debian's chromium is installed when missing, as `make mpi` does Open MPI.
BROWSER_DEBS := chromium
# Every code block of README.md and docs/*.md against the program (tools/doccheck.py):
# C blocks compile against the installed headers, console blocks run and print
# what they show. docs-regen rewrites the shown outputs with what is printed now.
DOC_PREFIX = $(abspath $(BUILD)/docs-prefix)
DOCCHECK = python3 tools/doccheck.py --include $(DOC_PREFIX)/include/tilesim \
  --libs "$$(PKG_CONFIG_PATH=$(DOC_PREFIX)/lib/pkgconfig pkg-config --libs tilesim)"
docs-deps:
	@if ! command -v python3 >/dev/null 2>&1; then \
	  echo "tilesim: installing python3"; \
	  if [ "$$(id -u)" != 0 ]; then echo "tilesim: run as root, or install: apt-get install python3" >&2; exit 1; fi; \
	  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3) >/dev/null || exit 1; \
	fi

test-docs: docs-deps $(LIB) $(CLI) $(PLUGINS) $(EXAMPLES)
	rm -rf $(DOC_PREFIX)
	$(MAKE) --no-print-directory install PREFIX=$(DOC_PREFIX) >/dev/null
	$(DOCCHECK)

docs-regen: docs-deps $(LIB) $(CLI) $(PLUGINS) $(EXAMPLES)
	rm -rf $(DOC_PREFIX)
	$(MAKE) --no-print-directory install PREFIX=$(DOC_PREFIX) >/dev/null
	$(DOCCHECK) --fix

browser-deps:
	@if ! command -v chromium >/dev/null 2>&1; then \
	  echo "tilesim: installing $(BROWSER_DEBS)"; \
	  if [ "$$(id -u)" != 0 ]; then echo "tilesim: run as root, or install: apt-get install $(BROWSER_DEBS)" >&2; exit 1; fi; \
	  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(BROWSER_DEBS)) >/dev/null || exit 1; \
	fi

test-browser: browser-deps $(CLI) $(PLUGINS)
	sh tests/browser/test_browser.sh $(CLI) $(BUILD)/page.png

# Install the library, the CLI, the public headers (and every project header
# they include: the check fails the install when one is missing from PUB_HDR)
# and tilesim.pc. The library is static, so the pkg-config file's Libs carry
# its dependencies too: `pkg-config --libs tilesim` links with or without
# --static. DESTDIR stages the files; the .pc file names PREFIX.
PC_DEPLIBS = $(shell pkg-config --libs openblas hwloc) -lm -ldl -pthread
install: $(LIB) $(CLI)
	@for h in $(PUB_HDR); do \
	  for inc in $$(sed -n 's/^#include "\(.*\)"/\1/p' $$h); do \
	    f=$$(realpath -m --relative-to=. "$$(dirname $$h)/$$inc"); \
	    case " $(PUB_HDR) " in *" $$f "*) ;; \
	      *) echo "install: $$h includes $$f, which is not in PUB_HDR" >&2; exit 1;; esac; \
	  done; \
	done
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 $(CLI) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/
	@for h in $(PUB_HDR); do \
	  echo "install -m 644 $$h $(DESTDIR)$(PREFIX)/include/tilesim/$$h"; \
	  install -D -m 644 $$h $(DESTDIR)$(PREFIX)/include/tilesim/$$h || exit 1; \
	done
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' -e 's|@DEPLIBS@|$(PC_DEPLIBS)|g' \
	  tilesim.pc.in > $(BUILD)/tilesim.pc
	install -m 644 $(BUILD)/tilesim.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/

# `make fuzz` (FUZZ_SECONDS, default 60) comes from tests/fuzz/fuzz.mk; without
# it the target fails rather than report that there was nothing to do.
-include tests/fuzz/fuzz.mk
ifeq ($(wildcard tests/fuzz/fuzz.mk),)
fuzz:
	@echo "make fuzz: tests/fuzz/fuzz.mk is missing" >&2; exit 1
endif

clean:
	rm -rf build

-include $(ALL_OBJ:.o=.d)
