# SPDX-License-Identifier: BSD-3-Clause
# libfuzzer.mk: builds the harnesses of tests/fuzz with clang's libFuzzer,
# AddressSanitizer and UndefinedBehaviorSanitizer, for make check-long
# (tests/fuzz/Makefile.include runs it with GNU make and passes what the
# top Makefile knows: the compiler and every part's source list). The
# sources are compiled here, not through libtool: the core once into an
# archive each harness takes what it needs from, the transports' files
# into the harnesses that drive them (each plugin defines the same export,
# so no two share a program). Objects follow the source tree under OUT
# and are rebuilt when a source or a header it includes changes.
#
# Given on the command line: FUZZ_CC, SRC (the source tree), BUILD (the
# build tree, for config.h and version.h), OUT, CORE_SOURCES,
# COMMON_SOURCES, SOCKETS_SOURCES, SHM_SOURCES (empty: no shm harness),
# ENV_PLUGIN_SOURCES (the parsers of ib-verbs and cuda-ipc where those
# transports are built), EXTRA_CPPFLAGS and LIBS (hwloc, PMIx, and what the
# transports link).

SAN = -fsanitize=address,undefined -fno-sanitize-recover=undefined
CFLAGS_FUZZ = -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link $(SAN)
CPPFLAGS_FUZZ = -I$(BUILD)/include -I$(SRC)/include -I$(BUILD) -I$(SRC) \
	-DWEFT_PLUGIN_DIR='"/nonexistent"' -DWEFT_TEST_SRCDIR='"$(SRC)"' $(EXTRA_CPPFLAGS)
LDFLAGS_FUZZ = -fsanitize=fuzzer $(SAN)

objs = $(patsubst %.c,$(OUT)/%.o,$(filter %.c,$(1)))

CORE_A = $(OUT)/libweft_core_fuzz.a
COMMON_O = $(call objs,$(COMMON_SOURCES))
SOCKETS_O = $(call objs,$(SOCKETS_SOURCES))
# The shm transport without CUDA: its rings carry host memory either way,
# and the device paths need a GPU to mean anything.
SHM_O = $(call objs,$(filter-out plugins/shm/shm_cuda.c plugins/shm/shm_cuda_none.c,\
	$(SHM_SOURCES)) $(if $(SHM_SOURCES),plugins/shm/shm_cuda_none.c))
QUIET_O = $(OUT)/tests/fuzz/fuzz_quiet.o
TP_O = $(OUT)/tests/fuzz/fuzz_tp.o

HARNESSES = frame store_server sockets_handshake addr_record topo_file tune_file env \
	$(if $(SHM_SOURCES),shm_records)
PROGRAMS = $(HARNESSES:%=$(OUT)/fuzz_%)

all: $(PROGRAMS)

$(OUT)/%.o: $(SRC)/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS_FUZZ) $(CFLAGS_FUZZ) -MMD -MP -c $< -o $@

$(CORE_A): $(call objs,$(CORE_SOURCES))
	rm -f $@
	ar rcs $@ $^

$(OUT)/fuzz_frame: $(OUT)/tests/fuzz/fuzz_frame.o $(CORE_A)
$(OUT)/fuzz_store_server: $(OUT)/tests/fuzz/fuzz_store_server.o $(QUIET_O) $(CORE_A)
$(OUT)/fuzz_addr_record: $(OUT)/tests/fuzz/fuzz_addr_record.o \
	$(OUT)/plugins/sockets/sockets_addr.o $(CORE_A)
$(OUT)/fuzz_topo_file: $(OUT)/tests/fuzz/fuzz_topo_file.o $(QUIET_O) $(CORE_A)
$(OUT)/fuzz_tune_file: $(OUT)/tests/fuzz/fuzz_tune_file.o $(CORE_A)
$(OUT)/fuzz_env: $(OUT)/tests/fuzz/fuzz_env.o $(QUIET_O) $(COMMON_O) \
	$(OUT)/plugins/sockets/sockets_iface.o $(OUT)/plugins/sockets/sockets_addr.o \
	$(call objs,$(ENV_PLUGIN_SOURCES)) $(CORE_A)
$(OUT)/fuzz_sockets_handshake: $(OUT)/tests/fuzz/fuzz_sockets_handshake.o $(TP_O) $(SOCKETS_O) \
	$(COMMON_O)
$(OUT)/fuzz_shm_records: $(OUT)/tests/fuzz/fuzz_shm_records.o $(TP_O) $(SHM_O) $(COMMON_O)

$(PROGRAMS):
	$(FUZZ_CC) $(LDFLAGS_FUZZ) $^ $(LIBS) -lpthread -ldl -lm -o $@

-include $(shell find $(OUT) -name '*.d' 2>/dev/null)

.PHONY: all
