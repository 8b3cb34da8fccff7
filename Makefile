# Makefile - builds, tests and benchmarks arenad.
#
# Layout (one-way dependencies, each module a static archive; each folder
# of planner/ is compiled with only the include folders it may use, so a
# wrong include fails to compile, and tests/layers.sh, run by the deploy
# suite, checks the archives' symbols against the same map):
#   planner/core/        libarenacore.a        graph model, validation, lower bound,
#                                              verifier, time index     (libc)
#   planner/heuristics/  libarenaheuristics.a  the greedy planners      (core)
#   planner/search/      libarenasearch.a      improvement passes and exact
#                                              search, search.c on top  (core, heuristics)
#   planner/run/         libarenarun.a         planner_run() and `best` (core, heuristics, search)
#   planner/formats/     libarenaformats.a     CSV, .tflite, digests    (core)
#   storage/  libarenastorage.a  sqlite plan cache                  (sqlite3, planner)
#   proto/    libarenawire.a     protobuf-c messages and framing    (protobuf-c)
#   daemon/   arenad             libuv service                      (all above)
#   client/lib/      libarenad-client.a   the C library interpreters link (proto, planner)
#   client/cli/      libarenacli.a        arenactl                  (lib, proto, planner)
#   client/tflm/     libarenad-tflm.a     TFLite Micro adapter      (lib, planner)
#   client/tflite/   libarenad-tflite.a   TFLite adapter            (lib, planner, ops)
#   client/tflm/ops/ libarenad-tflm-ops.a TFLite Micro kernels      (ops)
#   client/ops/      (in both ops archives) shared kernels          (libc++)
#   client/examples/ plan_example, tflm_infer, tflite_infer         (the adapters)
#   tests/    Check suites, one binary per module: build/tests/check_<module>
#   bench/    benchmark programs behind `make bench`
#   deploy/   systemd units and config (no C)
#
# Targets: all (default), deps, test (alias check), run, bench, fuzz,
#          test-browser, tflite-lib (TensorFlow Lite's kernels the tests
#          use, built once), tflite (the TFLite adapter and tflite_infer
#          on the whole of TFLite, tflite-full-lib), tflite-check (that
#          tflite_infer on every model), gen-models, tflm (TensorFlow
#          Lite Micro, the TFLM planner and its example), clean.
# TFLITE_INCLUDE and TFLITE_LIBS build against a TFLite of one's own
# instead of the bundled one (docs/client.md, "Building TFLite").
# Variables: OPT (default -O2 -g), SANITIZE=address,undefined or
#            SANITIZE=thread (`make SANITIZE=thread test` runs every suite,
#            the daemons they start included, under ThreadSanitizer),
#            DEBUG=1, FUZZ_SECONDS (per fuzz target, default 60),
#            TFLITE_ADAPTER_OPT (added after OPT for the TFLite adapter,
#            default -Os).

BUILD   ?= build
CC      ?= cc
OPT     ?= -O2 -g
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wformat=2 -Wvla
CSTD    := -std=c11
DEFS    := -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
ifeq ($(DEBUG),1)
DEFS    += -DARENA_DEBUG=1
endif
ifneq ($(SANITIZE),)
SANFLAGS := -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -fno-omit-frame-pointer
endif

# Debian 12 packages the build and the tests need. `make deps` installs the
# missing ones with apt-get when run as root.
DEB_DEPS := build-essential pkg-config check libsqlite3-dev libuv1-dev \
            libprotobuf-c-dev protobuf-c-compiler libsystemd-dev libinih-dev

PKGS_CHECK  := check
PKGS_SQLITE := sqlite3
PKGS_PROTO  := libprotobuf-c
PKGS_DAEMON := libuv libsystemd inih

CFLAGS_ALL  = $(CSTD) $(OPT) $(WARN) $(DEFS) $(SANFLAGS) -MMD -MP \
              -Istorage -Iproto -I$(BUILD)/gen $(CFLAGS)

# The include folders of planner/: a folder of it sees its own and those
# below it; everything outside planner/ sees the public headers of core
# (planner.h, arena_error.h) and formats (graph_csv.h, tflite.h,
# digest.h); tests, fuzz targets and benchmarks see every folder, to
# reach internals.
PLANNER_DIRS         := core heuristics search run formats
INC_planner_core       := -Iplanner/core
INC_planner_heuristics := $(INC_planner_core) -Iplanner/heuristics
INC_planner_search     := $(INC_planner_heuristics) -Iplanner/search
INC_planner_run        := $(INC_planner_search) -Iplanner/run
INC_planner_formats    := $(INC_planner_core) -Iplanner/formats
INC_PUBLIC             := -Iplanner/core -Iplanner/formats
INC_PLANNER_ALL        := $(addprefix -Iplanner/,$(PLANNER_DIRS))
# The include folders of client/, by part (docs/architecture.md): the
# library sees its own; arenactl the library's and its own; the adapters
# their own, the shared kernels and the library only as installed
# (<arenad/arenad_client.h>, from $(BUILD)/include), never the CLI's;
# the kernels nothing of arenad's; the examples the adapters and kernels.
# tests, fuzz targets and benchmarks see every folder.
INC_client_lib      := -Iclient/lib
INC_client_cli      := -Iclient/lib -Iclient/cli
INC_client_tflm     := -Iclient/tflm
INC_client_tflm_ops := -Iclient/tflm/ops -Iclient/ops
INC_client_tflite   := -Iclient/tflite -Iclient/ops
INC_client_ops      := -Iclient/ops
INC_client_examples := -Iclient/examples -Iclient/tflm -Iclient/tflm/ops \
                       -Iclient/tflite -Iclient/ops
INC_CLIENT_ALL      := $(sort $(foreach p,lib cli tflm tflm_ops tflite ops examples,$(INC_client_$(p))))
# $(call client_part,SOURCE): lib, cli, tflm, tflm_ops, tflite, ops or
# examples, for a source under client/.
client_part = $(if $(filter client/tflm/ops/%,$(1)),tflm_ops,$(word 2,$(subst /, ,$(1))))
# $(call client_incs,SOURCE): the client/ include folders SOURCE may use.
client_incs = $(if $(filter client,$(firstword $(subst /, ,$(1)))),$(INC_client_$(call client_part,$(1))),$(if $(filter tests fuzz bench,$(firstword $(subst /, ,$(1)))),$(INC_CLIENT_ALL)))
# $(call incs_of,SOURCE): the planner and client include folders SOURCE
# may use.
incs_of = $(if $(filter planner,$(firstword $(subst /, ,$(1)))),$(INC_planner_$(word 2,$(subst /, ,$(1)))),$(if $(filter tests fuzz bench,$(firstword $(subst /, ,$(1)))),$(INC_PLANNER_ALL),$(INC_PUBLIC))) $(call client_incs,$(1))
LDFLAGS_ALL = $(SANFLAGS) $(LDFLAGS)

pc_cflags = $(shell pkg-config --cflags $(1) 2>/dev/null)
pc_libs   = $(shell pkg-config --libs $(1) 2>/dev/null)

.PHONY: all deps test check run bench clean FORCE
all: $(PLANNER_LIBS) $(BUILD)/arenactl $(BUILD)/arenad

# Rebuild everything when the compiler flags change (e.g. SANITIZE=...).
$(BUILD)/.flags: FORCE
	@mkdir -p $(BUILD)
	@echo '$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) $(PIC_FLAGS)' | cmp -s - $@ || \
	  echo '$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) $(PIC_FLAGS)' > $@

$(BUILD)/%.o: %.c $(BUILD)/.flags | $(BUILD)/gen/arenad.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(call incs_of,$<) $(EXTRA_CFLAGS_$(firstword $(subst /, ,$<))) -c -o $@ $<

# ---- planner ---------------------------------------------------------------
# One archive per folder; PLANNER_LIBS lists them in link order, top
# first, so that a call from a lower folder into a higher one fails to
# link.
define planner_lib
PLANNER_SRC_$(1) := $$(wildcard planner/$(1)/*.c)
$$(BUILD)/libarena$(1).a: $$(PLANNER_SRC_$(1):%.c=$$(BUILD)/%.o)
	rm -f $$@ && ar rcs $$@ $$^
endef
$(foreach d,$(PLANNER_DIRS),$(eval $(call planner_lib,$(d))))
PLANNER_SRC  := $(foreach d,$(PLANNER_DIRS),$(PLANNER_SRC_$(d)))
PLANNER_HDR  := $(wildcard $(addsuffix /*.h,$(addprefix planner/,$(PLANNER_DIRS))))
PLANNER_LIBS := $(addprefix $(BUILD)/libarena,$(addsuffix .a,run search heuristics formats core))

# ---- storage ---------------------------------------------------------------
STORAGE_SRC := $(wildcard storage/*.c)
STORAGE_OBJ := $(STORAGE_SRC:%.c=$(BUILD)/%.o)
EXTRA_CFLAGS_storage = $(call pc_cflags,$(PKGS_SQLITE))
$(BUILD)/libarenastorage.a: $(STORAGE_OBJ)
	rm -f $@ && ar rcs $@ $^

# ---- proto (generated messages + framing) ----------------------------------
$(BUILD)/gen/arenad.pb-c.c $(BUILD)/gen/arenad.pb-c.h: proto/arenad.proto
	@mkdir -p $(BUILD)/gen
	protoc-c --c_out=$(BUILD)/gen -Iproto $<
$(BUILD)/gen/arenad.pb-c.o: $(BUILD)/gen/arenad.pb-c.c $(BUILD)/.flags
	$(CC) $(CFLAGS_ALL) $(call pc_cflags,$(PKGS_PROTO)) -c -o $@ $<
WIRE_SRC := $(wildcard proto/*.c)
WIRE_OBJ := $(WIRE_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/arenad.pb-c.o
EXTRA_CFLAGS_proto = $(call pc_cflags,$(PKGS_PROTO))
$(BUILD)/libarenawire.a: $(WIRE_OBJ)
	rm -f $@ && ar rcs $@ $^

# ---- daemon --------------------------------------------------------------
DAEMON_SRC := $(wildcard daemon/*.c)
DAEMON_OBJ := $(DAEMON_SRC:%.c=$(BUILD)/%.o)
EXTRA_CFLAGS_daemon = $(call pc_cflags,$(PKGS_DAEMON) $(PKGS_PROTO) $(PKGS_SQLITE))
DAEMON_LIBS = $(call pc_libs,$(PKGS_DAEMON) $(PKGS_PROTO) $(PKGS_SQLITE)) -lpthread
$(BUILD)/arenad: $(DAEMON_OBJ) $(BUILD)/libarenastorage.a $(BUILD)/libarenawire.a $(PLANNER_LIBS)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(DAEMON_LIBS)

# ---- client library --------------------------------------------------------
# libarenad-client bundles the client, wire and planner objects, compiled
# with -fPIC into $(BUILD)/pic/ so that one set of objects serves both the
# static archive and the shared library. They are compiled with
# -fvisibility=hidden: the shared library exports only the functions that
# client/lib/arenad_client.h marks ARENAD_CLIENT_API (the deploy suite checks
# the list), while arenactl and the tests, which link the static archive,
# still reach everything inside. PREFIX goes into the pkg-config file.
CLIENT_VERSION   := 0.1.0
CLIENT_SOVERSION := 1
PREFIX           ?= /usr/local
CLIENT_SO        := libarenad-client.so.$(CLIENT_SOVERSION)
CLIENT_LIB_SRC   := $(wildcard client/lib/*.c) $(WIRE_SRC) $(PLANNER_SRC)
CLIENT_PIC_OBJ   := $(CLIENT_LIB_SRC:%.c=$(BUILD)/pic/%.o) $(BUILD)/pic/gen/arenad.pb-c.o
# The installed headers, as a program sees them: <arenad/arenad_client.h>
# (deploy/install.sh puts them in PREFIX/include/arenad/). The example is
# compiled against this copy alone, like a program outside the tree.
CLIENT_HEADERS   := client/lib/arenad_client.h planner/core/planner.h planner/core/arena_error.h
CLIENT_INC       := $(addprefix $(BUILD)/include/arenad/,$(notdir $(CLIENT_HEADERS)))
CLIENT_TARGETS   := $(BUILD)/libarenad-client.a $(BUILD)/$(CLIENT_SO) \
                    $(BUILD)/libarenad-client.so $(BUILD)/arenad-client.pc \
                    $(BUILD)/examples/plan_example
all: $(CLIENT_TARGETS)
PIC_FLAGS := -fPIC -fvisibility=hidden
$(BUILD)/pic/%.o: %.c $(BUILD)/.flags | $(BUILD)/gen/arenad.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(call incs_of,$<) $(PIC_FLAGS) $(call pc_cflags,$(PKGS_PROTO)) -c -o $@ $<
$(BUILD)/pic/gen/arenad.pb-c.o: $(BUILD)/gen/arenad.pb-c.c $(BUILD)/.flags
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(PIC_FLAGS) $(call pc_cflags,$(PKGS_PROTO)) -c -o $@ $<
$(BUILD)/libarenad-client.a: $(CLIENT_PIC_OBJ)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/$(CLIENT_SO): $(CLIENT_PIC_OBJ)
	$(CC) $(LDFLAGS_ALL) -shared -Wl,-soname,$(CLIENT_SO) -o $@ $^ \
	  $(call pc_libs,$(PKGS_PROTO)) -lm
$(BUILD)/libarenad-client.so: $(BUILD)/$(CLIENT_SO)
	ln -sf $(CLIENT_SO) $@
$(BUILD)/arenad-client.pc: client/lib/arenad-client.pc.in Makefile
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(CLIENT_VERSION)|g' $< > $@
define stage_header
$(BUILD)/include/arenad/$(notdir $(1)): $(1)
	@mkdir -p $$(dir $$@)
	cp $$< $$@
endef
$(foreach h,$(CLIENT_HEADERS),$(eval $(call stage_header,$(h))))
$(BUILD)/client/examples/plan_example.o: client/examples/plan_example.c $(BUILD)/.flags $(CLIENT_INC)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(OPT) $(WARN) $(DEFS) $(SANFLAGS) -MMD -MP $(CFLAGS) \
	  -I$(BUILD)/include -c -o $@ $<
$(BUILD)/examples/plan_example: $(BUILD)/client/examples/plan_example.o $(BUILD)/libarenad-client.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(call pc_libs,$(PKGS_PROTO)) -lm

# ---- arenactl ----------------------------------------------------------------
# client/cli/ is its own archive, libarenacli.a, linked above the
# library: a call from the library into the CLI fails to link.
CLI_SRC := $(wildcard client/cli/*.c)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
$(BUILD)/libarenacli.a: $(filter-out $(BUILD)/client/cli/arenactl.o,$(CLI_OBJ))
	rm -f $@ && ar rcs $@ $^
$(BUILD)/arenactl: $(BUILD)/client/cli/arenactl.o $(BUILD)/libarenacli.a $(BUILD)/libarenad-client.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(call pc_libs,$(PKGS_PROTO)) -lm

# ---- tests -----------------------------------------------------------------
# $(call check_prog,module,archives,extra ldlibs): build/tests/check_<module>
# from tests/check_<module>.c, the module's further parts
# tests/check_<module>_*.c (a long suite split by subject), the shared
# runner tests/check_main.c and the helpers in tests/testutil.c.
EXTRA_CFLAGS_tests = $(call pc_cflags,$(PKGS_CHECK) $(PKGS_SQLITE) $(PKGS_PROTO))
CHECK_LIBS = $(call pc_libs,$(PKGS_CHECK)) -lm -lpthread
TESTUTIL_OBJ := $(BUILD)/tests/testutil.o
TEST_BINS :=
define check_prog
$(BUILD)/tests/check_main_$(1).o: tests/check_main.c $(BUILD)/.flags
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS_ALL) $$(INC_PLANNER_ALL) $$(EXTRA_CFLAGS_tests) -DCHECK_SUITE=$(1)_suite -c -o $$@ $$<
$(BUILD)/tests/check_$(1): $(BUILD)/tests/check_$(1).o $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/check_$(1)_*.c)) $(BUILD)/tests/check_main_$(1).o $(TESTUTIL_OBJ) $(2)
	$$(CC) $$(LDFLAGS_ALL) -o $$@ $$^ $(3) $$(CHECK_LIBS)
TEST_BINS += $(BUILD)/tests/check_$(1)
endef

$(eval $(call check_prog,planner,$(PLANNER_LIBS),))
$(eval $(call check_prog,csv,$(PLANNER_LIBS),))
# check_cli also unit-tests arenactl's text and JSON escaping
# (client/cli/cli_util.c) and file writing (client/cli/cli_write.c).
$(eval $(call check_prog,cli,$(BUILD)/libarenacli.a $(PLANNER_LIBS),))
# check_exact plans traces from the benchmarks' generator.
$(eval $(call check_prog,exact,$(BUILD)/bench/tracegen.o $(PLANNER_LIBS),))
$(BUILD)/tests/check_exact.o $(BUILD)/tests/check_exact_large.o \
$(BUILD)/tests/check_exact_squeeze.o $(BUILD)/tests/check_exact_lns.o \
$(BUILD)/tests/check_exact_joint.o $(BUILD)/tests/check_exact_window.o: EXTRA_CFLAGS_tests += -Ibench
$(eval $(call check_prog,digest,$(PLANNER_LIBS),))
$(eval $(call check_prog,tflite,$(PLANNER_LIBS),))
$(eval $(call check_prog,models,$(PLANNER_LIBS),))
$(eval $(call check_prog,wire,$(BUILD)/libarenawire.a $(PLANNER_LIBS),$(call pc_libs,$(PKGS_PROTO))))
# check_client also unit-tests the plan bundle codec (proto/wire_bundle.c).
$(eval $(call check_prog,client,$(BUILD)/libarenad-client.a,$(call pc_libs,$(PKGS_PROTO))))
# check_daemon also unit-tests daemon/hotcache.c, and reads the daemon's
# database through a storage handle of its own.
$(BUILD)/tests/check_daemon: $(BUILD)/tests/daemon_harness.o
$(eval $(call check_prog,daemon,$(BUILD)/tests/daemon_harness.o $(BUILD)/bench/tracegen.o $(BUILD)/daemon/hotcache.o $(BUILD)/libarenastorage.a $(BUILD)/libarenawire.a $(PLANNER_LIBS),$(call pc_libs,$(PKGS_PROTO) $(PKGS_SQLITE))))
$(BUILD)/tests/check_daemon_hotcache.o: EXTRA_CFLAGS_tests += -Idaemon
$(BUILD)/tests/check_daemon_background.o: EXTRA_CFLAGS_tests += -Idaemon -Ibench
# arenad-faults: arenad with conn.c built with -DARENAD_FAULT_INJECTION, so
# that the tests can make allocations fail (see conn_faults_init in
# daemon/server_int.h). Only the tests run it; the installed arenad reads
# no such setting.
FAULTS_OBJ := $(filter-out $(BUILD)/daemon/conn.o,$(DAEMON_OBJ)) $(BUILD)/tests/faults/conn.o
$(BUILD)/tests/faults/conn.o: daemon/conn.c $(BUILD)/.flags | $(BUILD)/gen/arenad.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(INC_PUBLIC) $(EXTRA_CFLAGS_daemon) -DARENAD_FAULT_INJECTION -c -o $@ $<
$(BUILD)/tests/arenad-faults: $(FAULTS_OBJ) $(BUILD)/libarenastorage.a $(BUILD)/libarenawire.a $(PLANNER_LIBS)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(DAEMON_LIBS)
$(BUILD)/tests/check_daemon: | $(BUILD)/tests/arenad-faults
$(BUILD)/tests/check_daemon: | $(BUILD)/arenad
$(eval $(call check_prog,service,$(BUILD)/tests/daemon_harness.o $(BUILD)/libarenad-client.a,$(call pc_libs,$(PKGS_PROTO))))
$(BUILD)/tests/check_service: | $(BUILD)/arenad $(BUILD)/tests/poison_db
# poison_db: a test tool (tests/poison_db.c) that replaces the plans a
# cache database stores by poisoned ones, which verify but need
# gigabytes, for the tests of unusable plans (service, tflm, tflite_rt).
$(BUILD)/tests/poison_db: $(BUILD)/tests/poison_db.o $(BUILD)/libarenastorage.a $(PLANNER_LIBS)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(call pc_libs,$(PKGS_SQLITE))
build-tests: $(BUILD)/tests/poison_db
ifneq ($(STORAGE_SRC),)
$(eval $(call check_prog,storage,$(BUILD)/libarenastorage.a $(PLANNER_LIBS),$(call pc_libs,$(PKGS_SQLITE))))
endif

# deploy suite (see the deploy section below): units, man pages, install,
# .deb, sd_notify, socket activation and socket permissions.
$(eval $(call check_prog,deploy,$(BUILD)/tests/daemon_harness.o $(BUILD)/libarenawire.a $(PLANNER_LIBS),$(call pc_libs,$(PKGS_PROTO))))
$(BUILD)/tests/check_deploy.o $(BUILD)/tests/check_deploy_static.o: \
  EXTRA_CFLAGS_tests += -DDEPLOY_BUILD='"$(BUILD)"' -DDEPLOY_SANFLAGS='"$(SANFLAGS)"'
$(BUILD)/tests/check_deploy: | $(BUILD)/arenad $(BUILD)/arenactl $(BUILD)/examples/plan_example

# Sanitizers slow the suites down (ThreadSanitizer about tenfold on the
# exact search), so their test cases get longer timeouts: Check multiplies
# every tcase timeout by CK_TIMEOUT_MULTIPLIER.
TIMEOUT_MULTIPLIER := $(if $(findstring thread,$(SANITIZE)),10,$(if $(SANITIZE),3,1))
test check: deps
	@$(MAKE) --no-print-directory -j$(TFLM_JOBS) $(TFLM_DIR)/libtflm.a
	@$(MAKE) --no-print-directory build-tests
	@CK_TIMEOUT_MULTIPLIER=$${CK_TIMEOUT_MULTIPLIER:-$(TIMEOUT_MULTIPLIER)} \
	  sh tests/run.sh $(BUILD) $(notdir $(TEST_BINS))

.PHONY: build-tests
build-tests: all $(TEST_BINS)

# ---- run -------------------------------------------------------------------
# Starts arenad in the foreground on ./run/arenad.sock with its cache in
# ./run/cache.db; Ctrl-C drains and stops it. In another terminal:
#   ARENAD_SOCKET=run/arenad.sock build/arenactl plan tests/data/models/person_detect.csv
run: deps
	@$(MAKE) --no-print-directory all
	@mkdir -p run
	$(BUILD)/arenad --socket run/arenad.sock --db run/cache.db

# ---- bench -----------------------------------------------------------------
BENCH_SRC := $(wildcard bench/bench_*.c)
BENCH_BINS := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
$(BUILD)/bench/bench_planner: $(BUILD)/bench/bench_planner.o $(BUILD)/bench/tracegen.o $(PLANNER_LIBS)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lm
$(BUILD)/bench/bench_exact: $(BUILD)/bench/bench_exact.o $(BUILD)/bench/tracegen.o $(PLANNER_LIBS)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lm
$(BUILD)/bench/bench_cli: $(BUILD)/bench/bench_cli.o $(BUILD)/bench/tracegen.o $(PLANNER_LIBS) | $(BUILD)/arenactl
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lm
$(BUILD)/bench/bench_storage: $(BUILD)/bench/bench_storage.o $(BUILD)/libarenastorage.a $(PLANNER_LIBS)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(call pc_libs,$(PKGS_SQLITE)) -lm
$(BUILD)/bench/bench_service: $(BUILD)/bench/bench_service.o $(BUILD)/tests/daemon_harness.o $(BUILD)/tests/testutil.o $(BUILD)/libarenad-client.a | $(BUILD)/arenad
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(call pc_libs,$(PKGS_PROTO)) -lpthread -lm
$(BUILD)/bench/bench_background: $(BUILD)/bench/bench_background.o $(BUILD)/bench/tracegen.o $(BUILD)/tests/daemon_harness.o $(BUILD)/tests/testutil.o $(BUILD)/libarenawire.a $(PLANNER_LIBS) | $(BUILD)/arenad
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(call pc_libs,$(PKGS_PROTO)) -lpthread -lm
EXTRA_CFLAGS_bench = $(call pc_cflags,$(PKGS_SQLITE) $(PKGS_PROTO)) -Itests

# Each benchmark program is dropped from the page cache before it runs, so
# that it loads as a program started from disk does: the kernel maps code
# only from cached pages, and what a fresh link or a copy leaves cached
# moves bench_tflite's peak RSS by up to 128 KiB (docs/client.md).
bench: deps
	@$(MAKE) --no-print-directory all $(BENCH_BINS)
	@for b in $(BENCH_BINS); do sync -d $$b && dd if=$$b iflag=nocache count=0 status=none; \
	  ARENAD=$(abspath $(BUILD))/arenad ARENACTL=$(abspath $(BUILD))/arenactl $$b bench/data || exit 1; done

# ---- fuzz ------------------------------------------------------------------
# Every fuzz/fuzz_<name>.c is a libFuzzer target built with clang against
# the planner sources; it starts from the seeds in fuzz/corpus/<name>/
# (kept in the repo, read only) and writes what it learns to
# $(BUILD)/fuzz/corpus/<name>/. Each target runs FUZZ_SECONDS.
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_MAX_LEN ?= 65536
FUZZ_SRC     := $(wildcard fuzz/fuzz_*.c)
FUZZ_BINS    := $(FUZZ_SRC:fuzz/%.c=$(BUILD)/fuzz/%)
FUZZ_FLAGS   := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
                -fno-omit-frame-pointer -O1 -g
$(BUILD)/fuzz/fuzz_%: fuzz/fuzz_%.c $(PLANNER_SRC) $(PLANNER_HDR)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) $(DEFS) $(INC_PLANNER_ALL) $(FUZZ_FLAGS) -o $@ $< $(PLANNER_SRC) -lm

.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_BINS)
fuzz: fuzz-build
	@for b in $(FUZZ_BINS); do \
	  n=$$(basename $$b | sed 's/^fuzz_//'); \
	  mkdir -p $(BUILD)/fuzz/corpus/$$n; \
	  echo "== fuzz $$n for $(FUZZ_SECONDS) s"; \
	  $$b -max_total_time=$(FUZZ_SECONDS) -max_len=$(FUZZ_MAX_LEN) \
	    -print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz/$$n- \
	    $(BUILD)/fuzz/corpus/$$n $$( [ -d fuzz/corpus/$$n ] && echo fuzz/corpus/$$n ) \
	    || exit 1; \
	done

# ---- fuzz: wire targets, smoke run, replay in `make test` -----------------
# fuzz_frame, fuzz_request and fuzz_bundle also need the wire code and the generated
# protobuf-c messages (the static pattern rule below takes precedence over
# the planner-only rule above). `make fuzz-smoke` runs every target for
# FUZZ_SMOKE_SECONDS when clang is installed.
# `make test` does not build the libFuzzer binaries (that alone takes
# minutes on 2 cores): build/tests/check_fuzz_replay links every target's
# entry point, renamed fuzz_one_<name>, with the normal compiler and
# sanitizer flags, and feeds it the seeds plus deterministic mutations.
# (-Wno-unused-result: a target may ignore a result on purpose, and gcc,
# unlike clang, warns about that even through a (void) cast.)
FUZZ_WIRE_BINS := $(BUILD)/fuzz/fuzz_frame $(BUILD)/fuzz/fuzz_request \
                  $(BUILD)/fuzz/fuzz_bundle
FUZZ_SMOKE_SECONDS ?= 20
$(FUZZ_WIRE_BINS): $(BUILD)/fuzz/fuzz_%: fuzz/fuzz_%.c $(WIRE_SRC) $(PLANNER_SRC) \
                   $(wildcard proto/*.h) $(PLANNER_HDR) $(BUILD)/gen/arenad.pb-c.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) $(DEFS) $(INC_PLANNER_ALL) -Iproto -I$(BUILD)/gen \
	  $(call pc_cflags,$(PKGS_PROTO)) $(FUZZ_FLAGS) -o $@ $< $(WIRE_SRC) \
	  $(BUILD)/gen/arenad.pb-c.c $(PLANNER_SRC) $(call pc_libs,$(PKGS_PROTO)) -lm

FUZZ_REPLAY_OBJ := $(FUZZ_SRC:fuzz/%.c=$(BUILD)/tests/fuzzone_%.o)
$(BUILD)/tests/fuzzone_%.o: fuzz/%.c $(BUILD)/.flags | $(BUILD)/gen/arenad.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(INC_PLANNER_ALL) $(EXTRA_CFLAGS_tests) -Wno-unused-result \
	  -DLLVMFuzzerTestOneInput=fuzz_one_$(subst fuzz_,,$*) -c -o $@ $<
$(eval $(call check_prog,fuzz_replay,$(FUZZ_REPLAY_OBJ) $(BUILD)/libarenawire.a $(PLANNER_LIBS),$(call pc_libs,$(PKGS_PROTO))))
build-tests: $(BUILD)/tests/check_fuzz_replay

.PHONY: fuzz-smoke
fuzz-smoke:
	@if command -v $(FUZZ_CC) >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(FUZZ_SMOKE_SECONDS); \
	else echo "fuzz-smoke: $(FUZZ_CC) not installed, skipped"; fi

# ---- reliability -------------------------------------------------------------
# tests/check_reliability*.c run arenad under faults, floods and hostile
# clients (see the header of check_reliability.c). `make test` runs it with small counts;
# `make reliability` runs it with
# ARENA_RELIABILITY=full (50 kills, a 10^6-tensor graph, 204,800 soak
# requests) and ends with the summary table. Tests that need root (tmpfs,
# a second user) report that they were skipped otherwise.
$(eval $(call check_prog,reliability,$(BUILD)/tests/daemon_harness.o $(BUILD)/libarenastorage.a $(BUILD)/libarenad-client.a,$(call pc_libs,$(PKGS_PROTO) $(PKGS_SQLITE))))
$(BUILD)/tests/check_reliability: | $(BUILD)/arenad $(BUILD)/arenactl $(BUILD)/tests/poison_db
build-tests: $(BUILD)/tests/check_reliability
.PHONY: reliability
reliability: deps
	@$(MAKE) --no-print-directory all $(BUILD)/tests/check_reliability
	ARENA_RELIABILITY=full sh tests/run.sh $(BUILD) check_reliability

# ---- browser test -----------------------------------------------------------
# Renders a real model as HTML, loads it in headless Chromium and checks
# that the page loaded cleanly and the screenshot is not blank; then
# measures every label of three SVG pictures (the model, 7 and 10^6
# operators) in Chromium: all inside the picture, at most 1800 px wide. Not part of
# `make test`: it needs Chromium, which it installs with apt-get as root.
BROWSER_MODEL ?= tests/data/models/face_detection_short_range.tflite
.PHONY: test-browser
test-browser: all
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; \
	  else echo "test-browser: install chromium (sudo apt-get install chromium)" >&2; exit 1; fi; }
	@sh tests/browser.sh $(BUILD) $(BROWSER_MODEL)

# ---- deploy: install, uninstall, deb ----------------------------------------
# `make install` copies the built daemon, arenactl, libarenad-client
# (static, shared with its soname links, headers, pkg-config file), the
# systemd units, sysusers.d/tmpfiles.d snippets, man pages and the default
# configuration below DESTDIR/PREFIX (the configuration to SYSCONFDIR);
# deploy/install.sh does the work and documents each path. An existing
# /etc/arenad/arenad.conf that was edited is never overwritten, below a
# DESTDIR too (the new default goes beside it as arenad.conf.new). `make uninstall` removes
# what install put there. `make deb` writes the packages arenad,
# libarenad-client1 and libarenad-client-dev to $(BUILD)/deb/ with dpkg-deb
# (deploy/mkdeb.sh). The deploy tests need systemd-analyze and
# systemd-socket-activate (systemd), groff and man (groff-base, man-db),
# dpkg-shlibdeps (dpkg-dev) and strace.
SYSCONFDIR ?= /etc
UNITDIR    ?= $(PREFIX)/lib/systemd/system
LIBDIR     ?= $(PREFIX)/lib
DEB_DEPS   += systemd groff-base man-db dpkg-dev strace
INSTALL_ENV = DESTDIR='$(DESTDIR)' PREFIX='$(PREFIX)' SYSCONFDIR='$(SYSCONFDIR)' \
              UNITDIR='$(UNITDIR)' LIBDIR='$(LIBDIR)'
.PHONY: install uninstall deb
install: all
	@$(INSTALL_ENV) sh deploy/install.sh install $(BUILD)
uninstall:
	@$(INSTALL_ENV) sh deploy/install.sh uninstall $(BUILD)
deb: all
	@sh deploy/mkdeb.sh $(BUILD) $(BUILD)/deb

# ---- FlatBuffers verifier check ------------------------------------------------
# Checks every model `arenactl embed` writes with the official FlatBuffers
# verifier (tests/flatbuffers.sh). Not part of `make test`: it needs flatc,
# the FlatBuffers headers and a C++ compiler, installed with apt-get as root.
.PHONY: test-flatbuffers
test-flatbuffers: all
	@command -v flatc >/dev/null 2>&1 && echo '#include <flatbuffers/flatbuffers.h>' | \
	  c++ -E -x c++ - >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      flatbuffers-compiler libflatbuffers-dev g++; \
	  else echo "test-flatbuffers: install flatbuffers-compiler libflatbuffers-dev g++" >&2; exit 1; fi; }
	@sh tests/flatbuffers.sh $(BUILD) tests/data/models/schema.fbs

# ---- TensorFlow Lite Micro ---------------------------------------------------
# TFLM runs arenad's plans in `make test` (docs/client.md, "TensorFlow Lite
# Micro"). third_party/tflite-micro-90b983c2.tar.xz (third_party/README.md)
# is unpacked under $(TFLM_DIR)/src, and the rules below compile the TFLM
# sources that the bundled models need into $(TFLM_DIR)/libtflm.a; TFLM's
# own Makefile is not used (it downloads and generates files). Its
# third-party parts come from Debian: the FlatBuffers headers, with the
# TFLite schema header regenerated by Debian's flatc (the bundled one
# insists on FlatBuffers 25.9.23), and gemmlowp's fixed-point header; ruy,
# of which the reference kernels include only the profiler header, is
# replaced by a no-op stand-in (third_party/ruy-noop/). The schema header
# is generated without TFLM's --gen-object-api, which made it about four
# times as slow to parse, most of the time of every TFLM file; the one
# object-API type a compiled TFLM source names is appended from
# third_party/tflite-schema-slim/. The archive is rebuilt only when the
# tarball, that file or these flags change.
# TFLM's sources compile with TFLM's own warning set (its Makefile's
# CC_WARNINGS, without -Werror); arenad's C++ files with $(CXXWARN) and
# -Werror, seeing TFLM's headers as system headers.
TFLM_TARBALL := third_party/tflite-micro-90b983c2.tar.xz
TFLM_DIR     := $(BUILD)/tflm
TFLM_SRC     := $(TFLM_DIR)/src
TFLM_GEN     := $(TFLM_DIR)/gen
TFLM_STAMP   := $(TFLM_DIR)/.unpacked
CXX          ?= g++
CXXSTD       := -std=c++17 -fno-rtti -fno-exceptions -fno-threadsafe-statics
CXXWARN      := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wvla -Wnon-virtual-dtor
TFLM_WARN    := -Wsign-compare -Wdouble-promotion -Wunused-variable \
                -Wunused-function -Wswitch -Wvla -Wall -Wextra \
                -Wmissing-field-initializers -Wstrict-aliasing \
                -Wno-unused-parameter -Wnon-virtual-dtor
TFLM_DEFS    := -DTF_LITE_STATIC_MEMORY -DTF_LITE_DISABLE_X86_NEON -DTF_LITE_USE_CTIME
TFLM_INCS    := $(TFLM_GEN) $(TFLM_SRC) third_party/ruy-noop /usr/include/gemmlowp
TFLM_CXXFLAGS = $(CXXSTD) $(OPT) $(TFLM_DEFS) $(SANFLAGS) $(TFLM_NOSAN) -MMD -MP
# TFLM's reference SVDF kernel sums int32 values that overflow on
# keyword_scrambled's scrambled weights (kernels/svdf_common.cc:174), so
# under UBSan TFLM's own sources are built without the signed-overflow
# check; every other check stays on, and arenad's files keep that one.
TFLM_NOSAN    = $(if $(findstring undefined,$(SANITIZE)),-fno-sanitize=signed-integer-overflow)
DEB_DEPS     += xz-utils libflatbuffers-dev flatbuffers-compiler libgemmlowp-dev
# `make test` compiles TFLM with this many jobs even when run without -j
# (about 80 C++ files: the bulk of a cold build).
TFLM_JOBS    ?= $(shell nproc 2>/dev/null || echo 2)

# Every TFLM source the bundled models need, relative to $(TFLM_SRC).
TFLM_CORE := $(addprefix tensorflow/lite/micro/, \
  debug_log flatbuffer_utils memory_helpers micro_allocation_info \
  micro_allocator micro_context micro_interpreter micro_interpreter_context \
  micro_interpreter_graph micro_log micro_op_resolver micro_profiler \
  micro_resource_variable micro_time micro_utils system_setup \
  arena_allocator/non_persistent_arena_buffer_allocator \
  arena_allocator/persistent_arena_buffer_allocator \
  arena_allocator/single_arena_buffer_allocator \
  memory_planner/greedy_memory_planner memory_planner/linear_memory_planner \
  tflite_bridge/flatbuffer_conversions_bridge tflite_bridge/micro_error_reporter) \
  $(addprefix tensorflow/lite/, kernels/kernel_util \
  kernels/internal/runtime_shape kernels/internal/portable_tensor_utils \
  kernels/internal/tensor_ctypes kernels/internal/reference/portable_tensor_utils \
  kernels/internal/common kernels/internal/quantization_util \
  kernels/internal/tensor_utils core/api/flatbuffer_conversions \
  core/api/tensor_utils core/c/common) \
  tensorflow/compiler/mlir/lite/schema/schema_utils \
  tensorflow/compiler/mlir/lite/core/api/error_reporter
# The kernels MediaPipe's vision models (face, hand and pose landmarks,
# selfie and hair segmentation) use beyond the bundled models' (docs/
# client.md, "Operators"): RELU6 comes with activations; DEQUANTIZE of
# FLOAT16 and the custom Convolution2DTransposeBias are arenad's own
# (client/tflm/ops/).
TFLM_VISION_KERNELS := $(addprefix tensorflow/lite/micro/kernels/, \
  depth_to_space elu expand_dims gather hard_swish hard_swish_common \
  leaky_relu leaky_relu_common mirror_pad pack prelu prelu_common \
  resize_bilinear resize_nearest_neighbor split split_v squeeze sub \
  sub_common tanh transpose_conv unpack)
TFLM_KERNELS := $(addprefix tensorflow/lite/micro/kernels/, \
  activations activations_common add add_common cast concatenation conv \
  conv_common depthwise_conv depthwise_conv_common dequantize \
  dequantize_common div fully_connected fully_connected_common kernel_util \
  logistic logistic_common lstm_eval lstm_eval_common maximum_minimum \
  micro_tensor_utils mul mul_common pad pad_common pooling pooling_common \
  quantize quantize_common reduce reduce_common reshape reshape_common \
  softmax softmax_common strided_slice strided_slice_common svdf \
  svdf_common transpose transpose_common unidirectional_sequence_lstm) \
  $(TFLM_VISION_KERNELS)
TFLM_OBJ := $(patsubst %,$(TFLM_DIR)/obj/%.o,$(TFLM_CORE) $(TFLM_KERNELS))

TFLM_SCHEMA_EXTRA := third_party/tflite-schema-slim/operator_code_t.h
$(TFLM_STAMP): $(TFLM_TARBALL) $(TFLM_SCHEMA_EXTRA)
	rm -rf $(TFLM_SRC) $(TFLM_GEN) && mkdir -p $(TFLM_SRC) $(TFLM_GEN)/tensorflow/lite/schema
	tar -xJf $< -C $(TFLM_SRC)
	sed 's/ (deprecated),/,/' $(TFLM_SRC)/tensorflow/compiler/mlir/lite/schema/schema.fbs \
	  > $(TFLM_GEN)/schema.fbs
	flatc --cpp --no-union-value-namespacing \
	  -o $(TFLM_GEN)/tensorflow/lite/schema $(TFLM_GEN)/schema.fbs
	cat $(TFLM_SCHEMA_EXTRA) >> $(TFLM_GEN)/tensorflow/lite/schema/schema_generated.h
	touch $@

# Rebuild TFLM when its compile flags change.
$(TFLM_DIR)/.flags: FORCE
	@mkdir -p $(TFLM_DIR)
	@echo '$(CXX) $(TFLM_CXXFLAGS) $(TFLM_WARN)' | cmp -s - $@ || \
	  echo '$(CXX) $(TFLM_CXXFLAGS) $(TFLM_WARN)' > $@

$(TFLM_OBJ): $(TFLM_DIR)/obj/%.o: $(TFLM_STAMP) $(TFLM_DIR)/.flags
	@mkdir -p $(dir $@)
	$(CXX) $(TFLM_CXXFLAGS) $(TFLM_WARN) $(addprefix -I,$(TFLM_INCS)) \
	  -c -o $@ $(TFLM_SRC)/$*.cc
$(TFLM_DIR)/libtflm.a: $(TFLM_OBJ)
	rm -f $@ && ar rcs $@ $^

# The arithmetic of the kernels both interpreters' adapters carry
# (client/ops/): plain C++ with no interpreter headers, in both
# libarenad-tflm-ops.a and libarenad-tflite.a.
$(BUILD)/client/ops/conv_transpose_bias.o: client/ops/conv_transpose_bias.cc $(BUILD)/.flags
	@mkdir -p $(dir $@)
	$(CXX) $(CXXSTD) $(OPT) $(CXXWARN) $(SANFLAGS) -MMD -MP $(INC_client_ops) $(CXXFLAGS) -c -o $@ $<

# arenad's C++ on top of TFLM: libarenad-tflm.a (arenad::TflmPlanner,
# client/tflm/), libarenad-tflm-ops.a (the kernels TFLM lacks,
# client/tflm/ops/: DEQUANTIZE of FLOAT16 and MediaPipe's
# Convolution2DTransposeBias; link it before TFLM) and the example
# build/examples/tflm_infer. `make tflm` builds them; `make test` builds
# them with the tests.
TFLM_OWN_FLAGS = $(CXXSTD) $(OPT) $(CXXWARN) $(TFLM_DEFS) $(SANFLAGS) -MMD -MP \
                 -I$(BUILD)/include $(INC_PUBLIC) $(call client_incs,$<) \
                 $(addprefix -isystem ,$(TFLM_INCS)) $(CXXFLAGS)
$(BUILD)/%.o: %.cc $(BUILD)/.flags $(TFLM_DIR)/.flags | $(TFLM_STAMP) $(CLIENT_INC)
	@mkdir -p $(dir $@)
	$(CXX) $(TFLM_OWN_FLAGS) -c -o $@ $<
$(BUILD)/libarenad-tflm.a: $(BUILD)/client/tflm/arenad_tflm.o
	rm -f $@ && ar rcs $@ $^
TFLM_OPS_OBJ := $(patsubst %.cc,$(BUILD)/%.o,$(wildcard client/tflm/ops/*.cc)) \
                $(BUILD)/client/ops/conv_transpose_bias.o
$(BUILD)/libarenad-tflm-ops.a: $(TFLM_OPS_OBJ)
	rm -f $@ && ar rcs $@ $^
TFLM_RUN_OBJ := $(BUILD)/client/examples/tflm_infer_run.o
$(BUILD)/examples/tflm_infer: $(BUILD)/client/examples/tflm_infer.o $(TFLM_RUN_OBJ) \
                              $(BUILD)/libarenad-tflm.a $(BUILD)/libarenad-tflm-ops.a \
                              $(BUILD)/libarenad-client.a $(TFLM_DIR)/libtflm.a
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS_ALL) -o $@ $^ $(call pc_libs,$(PKGS_PROTO)) -lm

.PHONY: tflm
tflm: $(TFLM_DIR)/libtflm.a $(BUILD)/libarenad-tflm.a $(BUILD)/libarenad-tflm-ops.a \
      $(BUILD)/examples/tflm_infer
build-tests: tflm

# build/tests/check_tflm (tests/check_tflm.cc and its parts
# tests/check_tflm_infer.cc and tests/check_tflm_ops.cc, C++): TFLM runs
# arenad's plans, and arenad's TFLM kernels are checked. It links a
# test build of the planner, $(BUILD)/tests/arenad_tflm_testing.o,
# compiled with -DARENAD_TFLM_TESTING (the overlapping plan of the
# negative control and the other hooks that corrupt a plan); the
# production libarenad-tflm.a is compiled without it, and the suite
# checks with nm that neither it nor tflm_infer contains the hooks. It
# runs $(BUILD)/arenad, arenactl and examples/tflm_infer.
TFLM_TEST_FLAGS = -DARENAD_TFLM_TESTING -DTFLM_TEST_BUILD='"$(BUILD)"' -Itests \
                  -Iproto -I$(BUILD)/gen $(call pc_cflags,$(PKGS_CHECK) $(PKGS_PROTO))
TFLM_TEST_OBJ := $(BUILD)/tests/check_tflm.o $(BUILD)/tests/check_tflm_infer.o \
                 $(BUILD)/tests/check_tflm_gen.o $(BUILD)/tests/check_tflm_share.o \
                 $(BUILD)/tests/check_tflm_ops.o $(BUILD)/tests/check_tflm_tenant.o \
                 $(BUILD)/tests/check_tflm_oracle.o \
                 $(BUILD)/tests/gen_models.o $(BUILD)/tests/gen_models_random.o
$(TFLM_TEST_OBJ): TFLM_OWN_FLAGS += $(TFLM_TEST_FLAGS)
$(TFLM_TEST_OBJ): | $(BUILD)/gen/arenad.pb-c.h
$(BUILD)/tests/arenad_tflm_testing.o: client/tflm/arenad_tflm.cc $(BUILD)/.flags \
                                      $(TFLM_DIR)/.flags | $(TFLM_STAMP) $(CLIENT_INC)
	@mkdir -p $(dir $@)
	$(CXX) $(TFLM_OWN_FLAGS) -DARENAD_TFLM_TESTING -c -o $@ $<
$(BUILD)/tests/check_main_tflm.o: tests/check_main.c $(BUILD)/.flags
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(INC_PLANNER_ALL) $(EXTRA_CFLAGS_tests) -DCHECK_SUITE=tflm_suite -c -o $@ $<
$(BUILD)/tests/check_tflm: $(TFLM_TEST_OBJ) $(BUILD)/tests/check_main_tflm.o \
                           $(TESTUTIL_OBJ) $(BUILD)/tests/daemon_harness.o \
                           $(BUILD)/tests/arenad_tflm_testing.o $(TFLM_RUN_OBJ) \
                           $(BUILD)/libarenad-tflm-ops.a $(BUILD)/libarenad-client.a \
                           $(TFLM_DIR)/libtflm.a
	$(CXX) $(LDFLAGS_ALL) -o $@ $^ $(call pc_libs,$(PKGS_PROTO)) $(CHECK_LIBS)
$(BUILD)/tests/check_tflm: | $(BUILD)/arenad $(BUILD)/arenactl $(BUILD)/examples/tflm_infer \
                             $(BUILD)/libarenad-tflm.a $(BUILD)/tests/poison_db
TEST_BINS += $(BUILD)/tests/check_tflm
build-tests: $(BUILD)/tests/check_tflm

# ---- TensorFlow Lite ---------------------------------------------------------
# Full TensorFlow Lite (tflite::Interpreter) runs arenad's plans in `make
# test` and `make tflite` (docs/client.md, "TensorFlow Lite" and
# "Building TFLite"). third_party/tflite-litert-
# f674577.tar.xz (third_party/README.md) is unpacked under $(TFLITE_DIR)
# and configured with its own CMake build for ninja, with the flags below
# and its own compiler flags (arenad's warnings and sanitizers do not
# apply to it). The configure step writes the two files the tarball
# leaves to its builder (an empty CMakeLists.txt for tensorflow/core/
# example and a TSL source with no definitions) and a CMake file that
# finds Debian's protobuf. XNNPACK is off: Debian 12's is too old.
#
# Two archives come out of the one configured tree:
# - $(TFLITE_LIB), what the tests link (`make test`, `make tflite-lib`):
#   only the objects whose sources client/tflite/tflite_objects.txt names
#   (the interpreter and the kernels of arenad::TfliteOpResolver), and
#   ruy and cpuinfo, picked from TFLite's build by client/tflite/
#   tflite_objects.sh. That is about a quarter of TFLite's library
#   target: a cold build takes about 10 CPU-minutes where all of it takes
#   70.
# - $(TFLITE_FULL_LIB), what `make tflite` links (`make tflite-full-lib`):
#   TFLite's whole library target, every builtin kernel, with the archives
#   of the dependencies it links (abseil, ruy, cpuinfo, fft2d,
#   flatbuffers), listed by client/tflite/tflite_libs.sh from CMake's own
#   link line and merged into one; the system libraries that line names
#   are in $(TFLITE_FULL_DIR)/flags.txt. It is built after the small one,
#   so that only one ninja runs in the tree, and compiles only what the
#   small one did not.
# TFLite is configured again only when the tarball or these flags change
# ($(TFLITE_CONFIGURED)); the small archive is rebuilt when the list
# changes ($(TFLITE_STAMP)), the full one when the configure step ran
# again ($(TFLITE_FULL_STAMP)).
TFLITE_TARBALL := third_party/tflite-litert-f674577.tar.xz
TFLITE_DIR     := $(BUILD)/tflite
TFLITE_ROOT    := $(TFLITE_DIR)/tflite-litert-f674577
TFLITE_TFROOT  := $(TFLITE_ROOT)/src/tfroot
TFLITE_BUILD   := $(TFLITE_DIR)/cmake
TFLITE_CONFIGURED := $(TFLITE_DIR)/.configured
TFLITE_STAMP   := $(TFLITE_DIR)/.built
TFLITE_LIB     := $(TFLITE_DIR)/libtflite.a
TFLITE_LIST    := client/tflite/tflite_objects.txt
TFLITE_FULL_DIR   := $(BUILD)/tflite-full
TFLITE_FULL_STAMP := $(TFLITE_FULL_DIR)/.built
TFLITE_FULL_LIB   := $(TFLITE_FULL_DIR)/libtflite.a
TFLITE_JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
DEB_DEPS       += cmake ninja-build libeigen3-dev libfarmhash-dev libprotobuf-dev protobuf-compiler
TFLITE_DEPDIRS := ABSEIL-CPP:abseil-cpp FLATBUFFERS:flatbuffers RUY:ruy \
                  CPUINFO:cpuinfo ML_DTYPES:ml_dtypes NEON2SSE:neon2sse \
                  FFT2D:fft2d GEMMLOWP:gemmlowp
TFLITE_CMAKE_FLAGS = -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DTENSORFLOW_SOURCE_DIR=$(abspath $(TFLITE_TFROOT)) \
  -DFETCHCONTENT_FULLY_DISCONNECTED=ON -DCMAKE_FIND_PACKAGE_PREFER_CONFIG=ON \
  "-DCMAKE_IGNORE_PATH=/usr/lib/x86_64-linux-gnu/cmake/flatbuffers;/lib/x86_64-linux-gnu/cmake/flatbuffers" \
  -DSYSTEM_FARMHASH=ON -DTFLITE_ENABLE_XNNPACK=OFF -DTFLITE_ENABLE_GPU=OFF \
  -DTFLITE_ENABLE_NNAPI=OFF -DTFLITE_ENABLE_EXTERNAL_DELEGATE=OFF \
  -DTFLITE_ENABLE_BENCHMARK_MODEL=OFF -DTFLITE_ENABLE_LABEL_IMAGE=OFF \
  -DCMAKE_PROJECT_INCLUDE=$(abspath $(TFLITE_DIR))/find_protobuf.cmake \
  $(foreach d,$(TFLITE_DEPDIRS),-DFETCHCONTENT_SOURCE_DIR_$(word 1,$(subst :, ,$(d)))=$(abspath $(TFLITE_ROOT))/deps/$(word 2,$(subst :, ,$(d))))

# Rebuild TFLite when its configure flags change.
$(TFLITE_DIR)/.flags: FORCE
	@mkdir -p $(TFLITE_DIR)
	@echo '$(TFLITE_CMAKE_FLAGS)' | cmp -s - $@ || echo '$(TFLITE_CMAKE_FLAGS)' > $@

$(TFLITE_CONFIGURED): $(TFLITE_TARBALL) $(TFLITE_DIR)/.flags
	rm -rf $(TFLITE_ROOT) $(TFLITE_BUILD) $(TFLITE_STAMP) && mkdir -p $(TFLITE_BUILD)
	tar -xJf $< -C $(TFLITE_DIR)
	mkdir -p $(TFLITE_TFROOT)/tensorflow/core/example \
	  $(TFLITE_TFROOT)/third_party/xla/third_party/tsl/tsl/util
	echo '# Empty: TFLite builds nothing from this folder.' \
	  > $(TFLITE_TFROOT)/tensorflow/core/example/CMakeLists.txt
	echo '// Empty: used only by TFLite'"'"'s benchmark tool, which is not built.' \
	  > $(TFLITE_TFROOT)/third_party/xla/third_party/tsl/tsl/util/stats_calculator.cc
	echo 'find_package(Protobuf REQUIRED)' > $(TFLITE_DIR)/find_protobuf.cmake
	cd $(TFLITE_BUILD) && cmake $(TFLITE_CMAKE_FLAGS) $(abspath $(TFLITE_ROOT))/src/litert/tflite
	touch $@

$(TFLITE_STAMP): $(TFLITE_CONFIGURED) $(TFLITE_LIST) client/tflite/tflite_objects.sh
	sh client/tflite/tflite_objects.sh $(TFLITE_BUILD) $(TFLITE_LIST) > $(TFLITE_DIR)/objects.txt
	ninja -C $(TFLITE_BUILD) -j $(TFLITE_JOBS) $$(cat $(TFLITE_DIR)/objects.txt)
	rm -f $(TFLITE_LIB) && cd $(TFLITE_BUILD) && ar rcs $(abspath $(TFLITE_LIB)) $$(cat ../objects.txt)
	touch $@

.PHONY: tflite-lib
tflite-lib: $(TFLITE_STAMP)

# The full archive: ninja builds the library and its dependencies'
# archives, and ar's MRI script merges them (members of one name in two
# archives stay apart, which a plain `ar rcs` of their objects would not
# keep).
$(TFLITE_FULL_STAMP): $(TFLITE_CONFIGURED) $(TFLITE_STAMP) client/tflite/tflite_libs.sh
	@mkdir -p $(TFLITE_FULL_DIR)
	sh client/tflite/tflite_libs.sh $(TFLITE_BUILD) archives > $(TFLITE_FULL_DIR)/archives.txt
	sh client/tflite/tflite_libs.sh $(TFLITE_BUILD) flags > $(TFLITE_FULL_DIR)/flags.txt
	ninja -C $(TFLITE_BUILD) -j $(TFLITE_JOBS) $$(cat $(TFLITE_FULL_DIR)/archives.txt)
	rm -f $(TFLITE_FULL_LIB) && { echo 'create $(abspath $(TFLITE_FULL_LIB))'; \
	  sed 's|^|addlib $(abspath $(TFLITE_BUILD))/|' $(TFLITE_FULL_DIR)/archives.txt; \
	  echo save; echo end; } | ar -M && ranlib $(TFLITE_FULL_LIB)
	touch $@

.PHONY: tflite-full-lib
tflite-full-lib: $(TFLITE_FULL_STAMP)

# arenad's C++ on top of TFLite: libarenad-tflite.a (arenad::TflitePlanner,
# client/tflite/) and the example build/examples/tflite_infer (`make
# tflite`), whose arenad::TfliteOpResolver has every builtin kernel
# (compiled with -DARENAD_TFLITE_ALL_BUILTINS) and which link the full
# archive; the tests' own build/tests/tflite_infer, with the resolver's
# small set, links the small one. They are compiled with C++20 (TFLite's
# headers need it), exceptions and RTTI as TFLite has them, arenad's
# warnings with -Werror, and TFLite's headers as system headers.
#
# TFLITE_INCLUDE (TFLite's include folders) and TFLITE_LIBS (its archives
# and linker flags, in link order) replace the bundled TFLite entirely,
# for the tests too: nothing of third_party's is unpacked or built. The
# adapter includes TFLite's headers as tflite/... (LiteRT's source
# layout), so TFLITE_INCLUDE names the folder above tflite/ and those of
# TFLite's own dependencies (flatbuffers, abseil, Eigen). Use a BUILD of
# its own: objects are not rebuilt when only these change.
ifneq ($(TFLITE_INCLUDE)$(TFLITE_LIBS),)
ifeq ($(TFLITE_INCLUDE),)
$(error TFLITE_LIBS is set but TFLITE_INCLUDE is not: give both, or neither)
endif
ifeq ($(TFLITE_LIBS),)
$(error TFLITE_INCLUDE is set but TFLITE_LIBS is not: give both, or neither)
endif
TFLITE_INCS      := $(TFLITE_INCLUDE)
TFLITE_LINK      := $(TFLITE_LIBS)
TFLITE_FULL_LINK := $(TFLITE_LIBS)
TFLITE_DEP       :=
TFLITE_FULL_DEP  :=
else
TFLITE_INCS := $(TFLITE_ROOT)/src/litert $(TFLITE_TFROOT) \
               $(TFLITE_ROOT)/deps/flatbuffers/include \
               $(TFLITE_ROOT)/deps/abseil-cpp /usr/include/eigen3
TFLITE_LINK = $(TFLITE_LIB) -lpthread -ldl
TFLITE_FULL_LINK = $(TFLITE_FULL_LIB) $$(cat $(TFLITE_FULL_DIR)/flags.txt)
TFLITE_DEP      := $(TFLITE_STAMP)
TFLITE_FULL_DEP := $(TFLITE_FULL_STAMP)
endif
# The adapter (client/tflite/, and its test build) is compiled for size:
# it runs once per Build(), never in an inference, and its code pages
# count in the peak RSS of every process that links it (docs/client.md,
# "Code pages").
TFLITE_ADAPTER_OPT ?= -Os
$(BUILD)/client/tflite/%.o $(BUILD)/tests/arenad_tflite_testing.o: \
  TFLITE_SIZE_OPT = $(TFLITE_ADAPTER_OPT)
TFLITE_OWN_FLAGS = -std=c++20 $(OPT) $(TFLITE_SIZE_OPT) $(CXXWARN) $(SANFLAGS) -MMD -MP \
                   -I$(BUILD)/include $(INC_PUBLIC) $(call client_incs,$<) \
                   $(addprefix -isystem ,$(TFLITE_INCS)) $(CXXFLAGS)
# The adapter's files besides arenad_tflite.cc (the tests compile that
# one again with their hooks; these they share with `make tflite`).
TFLITE_PARTS := $(BUILD)/client/tflite/arenad_tflite_audit.o \
                $(BUILD)/client/tflite/arenad_tflite_pipeline.o \
                $(BUILD)/client/tflite/arenad_tflite_shapes.o \
                $(BUILD)/client/tflite/arenad_tflite_identity.o \
                $(BUILD)/client/tflite/arenad_tflite_memory.o \
                $(BUILD)/client/tflite/arenad_tflite_own.o \
                $(BUILD)/client/tflite/arenad_tflite_fetch.o
TFLITE_OWN_OBJ := $(BUILD)/client/tflite/arenad_tflite.o $(TFLITE_PARTS) \
                  $(BUILD)/client/examples/tflite_infer.o \
                  $(BUILD)/client/examples/tflite_infer_run.o \
                  $(BUILD)/client/examples/tflite_infer_table.o
$(TFLITE_OWN_OBJ): $(BUILD)/%.o: %.cc $(BUILD)/.flags $(TFLITE_DEP) | $(CLIENT_INC)
	@mkdir -p $(dir $@)
	$(CXX) $(TFLITE_OWN_FLAGS) -c -o $@ $<
$(BUILD)/client/tflite/arenad_tflite_ops.o: client/tflite/arenad_tflite_ops.cc $(BUILD)/.flags $(TFLITE_DEP) | $(CLIENT_INC)
	@mkdir -p $(dir $@)
	$(CXX) $(TFLITE_OWN_FLAGS) -DARENAD_TFLITE_ALL_BUILTINS -c -o $@ $<
$(BUILD)/libarenad-tflite.a: $(BUILD)/client/tflite/arenad_tflite.o $(TFLITE_PARTS) \
                             $(BUILD)/client/tflite/arenad_tflite_ops.o \
                             $(BUILD)/client/ops/conv_transpose_bias.o
	rm -f $@ && ar rcs $@ $^
$(BUILD)/examples/tflite_infer: $(BUILD)/client/examples/tflite_infer.o \
                                $(BUILD)/client/examples/tflite_infer_run.o \
                                $(BUILD)/client/examples/tflite_infer_table.o \
                                $(BUILD)/libarenad-tflite.a $(BUILD)/libarenad-client.a \
                                $(TFLITE_FULL_DEP)
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS_ALL) -o $@ $(filter-out $(TFLITE_FULL_DEP),$^) $(TFLITE_FULL_LINK) \
	  $(call pc_libs,$(PKGS_PROTO)) -lm

.PHONY: tflite
tflite: $(BUILD)/libarenad-tflite.a $(BUILD)/examples/tflite_infer

# What the tests' tflite_infer and bench_tflite link of arenad's TFLite
# code: the adapter with the resolver's small set of kernels.
TFLITE_TEST_OBJ := $(BUILD)/client/examples/tflite_infer_run.o \
                   $(BUILD)/client/tflite/arenad_tflite.o $(TFLITE_PARTS) \
                   $(BUILD)/tests/arenad_tflite_ops.o \
                   $(BUILD)/client/ops/conv_transpose_bias.o $(BUILD)/libarenad-client.a

# bench_tflite (bench/bench_tflite.cc, the parent, and bench_tflite_child.cc,
# one measured run; C++): TFLite alone against arenad's
# plans, measured as a process (docs/client.md, "Measured as a process").
# It links what the tests' tflite_infer links (the small set of kernels,
# so that `make bench` never builds the whole of TFLite), the daemon
# harness of the tests (it
# starts its own arenad) and the counting malloc (bench/heapcount.c),
# which replaces glibc's allocation entry points in this program only.
# `make bench` runs it after the others, so `make bench` builds TFLite.
$(BUILD)/bench/bench_tflite.o $(BUILD)/bench/bench_tflite_child.o: $(BUILD)/bench/%.o: bench/%.cc $(BUILD)/.flags $(TFLITE_DEP) | $(CLIENT_INC) $(BUILD)/gen/arenad.pb-c.h
	@mkdir -p $(dir $@)
	$(CXX) $(TFLITE_OWN_FLAGS) -Ibench -Itests -Iproto -I$(BUILD)/gen \
	  $(call pc_cflags,$(PKGS_PROTO)) -c -o $@ $<
$(BUILD)/bench/bench_tflite: $(BUILD)/bench/bench_tflite.o $(BUILD)/bench/bench_tflite_child.o \
                             $(BUILD)/bench/heapcount.o \
                             $(BUILD)/tests/daemon_harness.o $(TESTUTIL_OBJ) \
                             $(TFLITE_TEST_OBJ) | $(BUILD)/arenad
	$(CXX) $(LDFLAGS_ALL) -o $@ $^ $(TFLITE_LINK) $(call pc_libs,$(PKGS_PROTO)) -lm
BENCH_BINS += $(BUILD)/bench/bench_tflite

# build/tests/check_tflite_rt (tests/check_tflite_rt.cc, C++): TFLite's
# interpreter runs arenad's plans on every bundled model (tests/check_
# tflite.c tests the .tflite reader). It links a test build of the
# planner, compiled with -DARENAD_TFLITE_TESTING (the overlapping plan of
# the negative control), and runs $(BUILD)/arenad and tests/tflite_infer.
$(BUILD)/tests/check_tflite_rt.o: tests/check_tflite_rt.cc $(BUILD)/.flags $(TFLITE_DEP) | $(CLIENT_INC)
	@mkdir -p $(dir $@)
	$(CXX) $(TFLITE_OWN_FLAGS) -DARENAD_TFLITE_TESTING -DTFLITE_TEST_BUILD='"$(BUILD)"' \
	  -Itests -Iproto -I$(BUILD)/gen $(call pc_cflags,$(PKGS_CHECK) $(PKGS_PROTO)) -c -o $@ $<
$(BUILD)/tests/gen_models_tflite.o: tests/gen_models.cc $(BUILD)/.flags $(TFLITE_DEP)
	@mkdir -p $(dir $@)
	$(CXX) $(TFLITE_OWN_FLAGS) -DGEN_MODELS_TFLITE -Itests -c -o $@ $<
$(BUILD)/tests/gen_models_random_tflite.o: tests/gen_models_random.cc $(BUILD)/.flags $(TFLITE_DEP)
	@mkdir -p $(dir $@)
	$(CXX) $(TFLITE_OWN_FLAGS) -DGEN_MODELS_TFLITE -Itests -c -o $@ $<
$(BUILD)/tests/arenad_tflite_testing.o: client/tflite/arenad_tflite.cc $(BUILD)/.flags $(TFLITE_DEP) | $(CLIENT_INC)
	@mkdir -p $(dir $@)
	$(CXX) $(TFLITE_OWN_FLAGS) -DARENAD_TFLITE_TESTING -c -o $@ $<
# The resolver with the small set of kernels, for everything `make test`
# links.
$(BUILD)/tests/arenad_tflite_ops.o: client/tflite/arenad_tflite_ops.cc $(BUILD)/.flags $(TFLITE_DEP) | $(CLIENT_INC)
	@mkdir -p $(dir $@)
	$(CXX) $(TFLITE_OWN_FLAGS) -c -o $@ $<
$(BUILD)/tests/check_main_tflite_rt.o: tests/check_main.c $(BUILD)/.flags
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(INC_PLANNER_ALL) $(EXTRA_CFLAGS_tests) -DCHECK_SUITE=tflite_rt_suite -c -o $@ $<
$(BUILD)/tests/check_tflite_rt: $(BUILD)/tests/check_tflite_rt.o $(BUILD)/tests/check_main_tflite_rt.o \
                                $(BUILD)/tests/arenad_tflite_testing.o $(TFLITE_PARTS) \
                                $(BUILD)/tests/arenad_tflite_ops.o \
                                $(BUILD)/client/ops/conv_transpose_bias.o \
                                $(BUILD)/tests/gen_models_tflite.o \
                                $(BUILD)/tests/gen_models_random_tflite.o \
                                $(BUILD)/client/examples/tflite_infer_run.o $(TESTUTIL_OBJ) \
                                $(BUILD)/tests/daemon_harness.o $(BUILD)/libarenad-client.a
	$(CXX) $(LDFLAGS_ALL) -o $@ $^ $(TFLITE_LINK) $(call pc_libs,$(PKGS_PROTO)) $(CHECK_LIBS)
$(BUILD)/tests/check_tflite_rt.o: | $(BUILD)/gen/arenad.pb-c.h
# The tests' tflite_infer: the example on the small set of kernels, so
# that `make test` never builds the whole of TFLite. tflite_infer_testing:
# the same with -DTFLITE_INFER_TESTING, whose --soak leaks
# TFLITE_INFER_TEST_LEAK bytes an invoke when that is set (the soak's
# negative control); the installed tflite_infer has no such hook.
$(BUILD)/tests/tflite_infer: $(BUILD)/client/examples/tflite_infer.o \
                             $(BUILD)/client/examples/tflite_infer_table.o $(TFLITE_TEST_OBJ)
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS_ALL) -o $@ $^ $(TFLITE_LINK) $(call pc_libs,$(PKGS_PROTO)) -lm
$(BUILD)/tests/tflite_infer_testing.o: client/examples/tflite_infer.cc $(BUILD)/.flags $(TFLITE_DEP) | $(CLIENT_INC)
	@mkdir -p $(dir $@)
	$(CXX) $(TFLITE_OWN_FLAGS) -DTFLITE_INFER_TESTING -c -o $@ $<
$(BUILD)/tests/tflite_infer_testing: $(BUILD)/tests/tflite_infer_testing.o \
                                     $(BUILD)/client/examples/tflite_infer_table.o $(TFLITE_TEST_OBJ)
	$(CXX) $(LDFLAGS_ALL) -o $@ $^ $(TFLITE_LINK) $(call pc_libs,$(PKGS_PROTO)) -lm
$(BUILD)/tests/check_tflite_rt: | $(BUILD)/arenad $(BUILD)/tests/tflite_infer \
                                  $(BUILD)/tests/tflite_infer_testing \
                                  $(BUILD)/bench/bench_tflite $(BUILD)/tests/poison_db
# The adapter's objects of `make tflite` too (compiled against TFLite's
# headers, never linked here): tests/layers.sh, in the deploy suite,
# checks the symbols of client/tflite/*.o.
build-tests: $(BUILD)/tests/check_tflite_rt $(BUILD)/client/tflite/arenad_tflite.o \
             $(TFLITE_PARTS) \
             $(BUILD)/client/tflite/arenad_tflite_ops.o
TEST_BINS += $(BUILD)/tests/check_tflite_rt

# tests/data/generated/: models of tests/gen_models.h as files, for the
# programs (tflite_infer, arenactl) and `make tflite-check`. `make
# gen-models` writes them again; check_tflite_rt checks that they are the
# generator's.
$(BUILD)/tests/gen_models_write: tests/gen_models_write.cc $(BUILD)/tests/gen_models_tflite.o \
                                 $(TESTUTIL_OBJ) $(PLANNER_LIBS) $(BUILD)/.flags $(TFLITE_DEP)
	@mkdir -p $(dir $@)
	$(CXX) $(TFLITE_OWN_FLAGS) -Itests -o $@ $< $(BUILD)/tests/gen_models_tflite.o $(TESTUTIL_OBJ) \
	  $(PLANNER_LIBS) -lm
.PHONY: gen-models
gen-models: $(BUILD)/tests/gen_models_write
	$(BUILD)/tests/gen_models_write tests/data/generated

# `make tflite-check`: the tflite_infer of `make tflite`, with every
# builtin kernel, runs the generated and the bundled models on arenad's
# plan with TFLite's own outputs (tests/tflite_check.sh). Not in `make
# test`, which never builds the whole of TFLite.
.PHONY: tflite-check
tflite-check: $(BUILD)/examples/tflite_infer
	sh tests/tflite_check.sh $(BUILD)/examples/tflite_infer

# ---- deps ------------------------------------------------------------------
deps:
	@missing=''; for p in $(DEB_DEPS); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "make deps: installing$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	  else \
	    echo "make deps: missing Debian packages:$$missing (run 'sudo make deps')" >&2; exit 1; \
	  fi; \
	fi

clean:
	rm -rf $(BUILD)

FORCE:

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
