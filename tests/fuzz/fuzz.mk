# tests/fuzz/fuzz.mk: libFuzzer harnesses (included by the Makefile).
#
#   make fuzz                  build the harnesses, run each for FUZZ_SECONDS (default 60)
#   make fuzz FUZZ_SECONDS=600 longer
#   make fuzz-build            build only: build/fuzz/fuzz_{chip_parse,pallas_call,cli,mesh_parse,mesh_call,hlo,model_parse}
#
# The library, the example kernels and the CLI are compiled again with clang
# and -fsanitize=fuzzer-no-link,address,undefined into FUZZ_BUILD, so that
# coverage reaches them; the harnesses link with -fsanitize=fuzzer. Each run
# starts from the checked-in corpus (tests/fuzz/corpus/NAME) copied into
# FUZZ_BUILD/corpus/NAME, which is where new inputs go: the tree is never
# written. A crash, sanitizer report, leak or timeout fails the target and
# leaves its input in FUZZ_BUILD/crashes/, named on the output; replay it with
#   build/fuzz/fuzz_NAME build/fuzz/crashes/NAME-crash-...
# tests/fuzz/FINDINGS.md lists what the harnesses found.

# included anywhere in the Makefile, this file must not become its default goal
FUZZ_SAVED_GOAL := $(.DEFAULT_GOAL)

FUZZ_BUILD   ?= build/fuzz
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_NAMES   := chip_parse pallas_call cli mesh_parse mesh_call hlo model_parse
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS  := -O1 -g -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -pthread -MMD -MP $(FUZZ_SAN)
FUZZ_PKG_CFLAGS = $(shell pkg-config --cflags openblas hwloc)
FUZZ_PKG_LIBS   = $(shell pkg-config --libs openblas hwloc) -lm

FUZZ_LIB_SRC := $(wildcard kernel/*.c sim/*/*.c examples/kernels/*.c)
FUZZ_CLI_SRC := $(filter-out cli/cli_main.c,$(wildcard cli/*.c))
FUZZ_LIB_OBJ := $(FUZZ_LIB_SRC:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_CLI_OBJ := $(FUZZ_CLI_SRC:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_LIB     := $(FUZZ_BUILD)/libtilesim_fuzz.a
FUZZ_BINS    := $(FUZZ_NAMES:%=$(FUZZ_BUILD)/fuzz_%)

.PHONY: fuzz fuzz-build fuzz-deps

fuzz: fuzz-build
	@fail=0; for h in $(FUZZ_NAMES); do \
	  sh tests/fuzz/run.sh $$h $(FUZZ_BUILD) $(FUZZ_SECONDS) || fail=1; \
	done; \
	if [ $$fail != 0 ]; then echo "fuzz: a harness failed; see above and tests/fuzz/FINDINGS.md" >&2; exit 1; fi

fuzz-build: $(FUZZ_BINS)

# clang with libFuzzer: on Debian 12 libclang_rt.fuzzer comes with libclang-rt-14-dev.
# The library's own packages (OpenBLAS, hwloc) come from the Makefile's deps.
fuzz-deps:
	@if ! printf 'int LLVMFuzzerTestOneInput(const char *d, long n) { (void)d; (void)n; return 0; }\n' | \
	    $(FUZZ_CC) -fsanitize=fuzzer -x c - -o /dev/null >/dev/null 2>&1; then \
	  echo "fuzz: installing clang libclang-rt-14-dev"; \
	  if [ "$$(id -u)" != 0 ]; then echo "fuzz: run as root, or install: apt-get install clang libclang-rt-14-dev" >&2; exit 1; fi; \
	  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q clang libclang-rt-14-dev) >/dev/null || exit 1; \
	fi
	@if ! pkg-config --exists openblas hwloc 2>/dev/null; then $(MAKE) --no-print-directory deps; fi

$(FUZZ_BUILD)/obj/%.o: %.c | fuzz-deps
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_PKG_CFLAGS) -c $< -o $@

$(FUZZ_LIB): $(FUZZ_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_chip_parse: $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_chip_parse.o $(FUZZ_LIB)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $^ $(FUZZ_PKG_LIBS) -o $@

$(FUZZ_BUILD)/fuzz_pallas_call: $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_pallas_call.o \
                                $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_kernel.o $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_dump.o $(FUZZ_LIB)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $^ $(FUZZ_PKG_LIBS) -o $@

$(FUZZ_BUILD)/fuzz_mesh_call: $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_mesh_call.o $(FUZZ_LIB)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $^ $(FUZZ_PKG_LIBS) -o $@

$(FUZZ_BUILD)/fuzz_mesh_parse: $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_mesh_parse.o $(FUZZ_LIB)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $^ $(FUZZ_PKG_LIBS) -o $@

$(FUZZ_BUILD)/fuzz_hlo: $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_hlo.o $(FUZZ_LIB)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $^ $(FUZZ_PKG_LIBS) -o $@

$(FUZZ_BUILD)/fuzz_model_parse: $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_model_parse.o $(FUZZ_LIB)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $^ $(FUZZ_PKG_LIBS) -o $@

$(FUZZ_BUILD)/fuzz_cli: $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_cli.o $(FUZZ_CLI_OBJ) $(FUZZ_LIB)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $^ $(FUZZ_PKG_LIBS) -o $@

-include $(shell find $(FUZZ_BUILD)/obj -name '*.d' 2>/dev/null)

.DEFAULT_GOAL := $(FUZZ_SAVED_GOAL)
