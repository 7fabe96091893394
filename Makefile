# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# make            build everything into $(OUT)
# make demo       install missing packages, build, run the demo allreduce
# make check      install missing packages (with the Python and MPI groups),
#                 build, run every test
# make mpi        the MPI interposer build/librinx-mpi.so (needs mpicc)
# make V=1        show the commands

OUT	?= build
V	?= 0
ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
.SUFFIXES:
.SECONDARY:

ARCH		:= $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
MULTIARCH	:= $(shell gcc -print-multiarch 2>/dev/null)
CLANG		?= clang
BPFTOOL		?= bpftool
CC		?= gcc

CFLAGS_COMMON	:= -g -O2 -Wall -Wextra -Werror -I. -I$(OUT)
CFLAGS		?= $(CFLAGS_COMMON) -D_GNU_SOURCE -fPIC -std=gnu11 \
		   -Wno-unused-parameter -Wno-format-truncation -fno-math-errno -fno-trapping-math
BPF_CFLAGS	:= -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Wall -Wextra \
		   -Werror -Wno-unused-parameter -I. -I/usr/include/$(MULTIARCH)
# the conversion loops want the vectorizer at full strength
$(OUT)/user/quant.o: CFLAGS += -O3
# the speed baseline in test_quant is the old conversion code, built as it was
$(OUT)/selftests/test_quant: CFLAGS += -O3

LIBS		:= -lxdp -lbpf -lelf -lz -lm -lpthread

UAPI_H		:= $(wildcard uapi/*.h)
BPF_H		:= $(wildcard bpf/*.bpf.h)
USER_H		:= $(wildcard user/*.h)
BPF_SRC		:= $(wildcard bpf/*.bpf.c)
BPF_OBJ		:= $(patsubst bpf/%.bpf.c,$(OUT)/bpf/%.bpf.o,$(BPF_SRC))
SKELS		:= $(patsubst bpf/%.bpf.c,$(OUT)/%.skel.h,$(BPF_SRC))
LIB_SRC		:= $(wildcard user/*.c)
LIB_OBJ		:= $(patsubst user/%.c,$(OUT)/user/%.o,$(LIB_SRC))
TOOL_SRC	:= $(wildcard tools/*.c)
TOOL_OBJ	:= $(patsubst tools/%.c,$(OUT)/tools/%.o,$(TOOL_SRC))
TEST_SRC	:= $(wildcard selftests/*.c)
TEST_BIN	:= $(patsubst selftests/%.c,$(OUT)/selftests/%,$(TEST_SRC))

PY_SRC		:= $(wildcard user/python/rinx/*.py)
PY_PKG		:= $(patsubst user/python/%,$(OUT)/python/%,$(PY_SRC)) \
		   $(OUT)/python/rinx/librinx.so

LIB_A		:= $(OUT)/librinx.a
LIB_SO		:= $(OUT)/librinx.so
RINXCTL		:= $(OUT)/rinxctl

.PHONY: all deps demo check clean abi-check soak mpi
all: $(RINXCTL) $(LIB_SO) $(TEST_BIN) $(OUT)/rinxctl.8 $(PY_PKG)

deps:
	$(Q)tools/deps.sh build

$(OUT)/bpf/%.bpf.o: bpf/%.bpf.c $(UAPI_H) $(BPF_H) Makefile
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/%.skel.h: $(OUT)/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@

$(OUT)/user/%.o: user/%.c $(UAPI_H) $(USER_H) $(SKELS) Makefile
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -fvisibility=hidden -c $< -o $@

$(LIB_A): $(LIB_OBJ)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(LIB_SO): $(LIB_OBJ) user/librinx.map
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -Wl,--version-script=user/librinx.map -o $@ $(LIB_OBJ) $(LIBS)

# The Python package: its modules and the library beside them, so that
# PYTHONPATH=$(OUT)/python is all a trainer needs (docs/python.md).
$(OUT)/python/rinx/%.py: user/python/rinx/%.py
	$(call msg,PY,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cp $< $@

$(OUT)/python/rinx/librinx.so: $(LIB_SO)
	$(call msg,CP,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cp $< $@

$(OUT)/tools/%.o: tools/%.c $(UAPI_H) $(USER_H) $(wildcard tools/*.h) $(SKELS) Makefile
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(RINXCTL): $(TOOL_OBJ) $(LIB_A)
	$(call msg,LD,$@)
	$(Q)$(CC) -o $@ $(TOOL_OBJ) $(LIB_A) $(LIBS)

$(OUT)/selftests/%: selftests/%.c $(wildcard selftests/*.h) $(UAPI_H) $(USER_H) $(SKELS) $(LIB_A) Makefile
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(LIB_A) $(LIBS)

$(OUT)/rinxctl.8: $(RINXCTL) tools/mkman.sh
	$(call msg,MAN,$@)
	$(Q)tools/mkman.sh $(RINXCTL) > $@

# Exported symbols of the shared library must be exactly those listed.
abi-check: $(LIB_SO)
	$(Q)tools/abi-check.sh $(LIB_SO) user/librinx.map

# The Open MPI peer of `rinxctl bench`, for `rinxctl peer mpi` (which runs
# this target). Needs mpicc, so it is not part of all or check.
MPICC		?= mpicc
.PHONY: peers
peers: $(OUT)/peers/mpi_bench

$(OUT)/peers/mpi_bench: tools/peers/mpi_bench.c tools/gen.h Makefile
	$(call msg,MPICC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(MPICC) -g -O2 -Wall -Wextra -Werror -std=gnu11 -I. -o $@ $< -lm

# The MPI interposer (docs/mpi.md) and the plain MPI program that its test
# and tools/mpi-bench.sh run. They need mpicc (tools/deps.sh peers), so they
# are not part of all; check installs Open MPI and builds them. librinx is
# linked in statically and kept private by the version script: one file to
# preload.
MPI_SO		:= $(OUT)/librinx-mpi.so
MPI_CHECK	:= $(OUT)/mpi/allreduce_check
mpi: $(MPI_SO) $(MPI_CHECK)

$(OUT)/mpi/rinx_mpi.o: user/mpi/rinx_mpi.c $(UAPI_H) $(USER_H) $(SKELS) Makefile
	$(call msg,MPICC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(MPICC) $(CFLAGS) -c $< -o $@

$(MPI_SO): $(OUT)/mpi/rinx_mpi.o $(LIB_A) user/mpi/librinx-mpi.map
	$(call msg,LD,$@)
	$(Q)$(MPICC) -shared -Wl,--version-script=user/mpi/librinx-mpi.map \
		-o $@ $< $(LIB_A) $(LIBS)

# no rinx header on purpose: an unmodified MPI program
$(MPI_CHECK): selftests/mpi/allreduce_check.c Makefile
	$(call msg,MPICC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(MPICC) -g -O2 -Wall -Wextra -Werror -std=gnu11 -o $@ $< -lm

demo:
	$(Q)tools/deps.sh build
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(RINXCTL) demo

check:
	$(Q)tools/deps.sh build
	$(Q)tools/deps.sh python
	$(Q)tools/deps.sh peers
	$(Q)$(MAKE) --no-print-directory all mpi
	$(Q)$(MAKE) --no-print-directory abi-check
	$(Q)selftests/run.sh $(OUT)

# Long fault runs: 1000 lossy allreduces, a killed trainer (not in check).
soak:
	$(Q)tools/deps.sh build
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tools/soak.sh $(OUT) $(or $(RUNS),1000)

clean:
	$(Q)rm -rf $(OUT)
