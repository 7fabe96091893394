# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# make            build everything into $(OUT)
# make demo       install missing packages, build, run the demo: ring vs Rina
#                 on 1 Gbit/s and unlimited links (about a minute)
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
$(OUT)/user/quant/quant.o: CFLAGS += -O3
# the speed baseline in test_quant is the old conversion code, built as it was
$(OUT)/selftests/test_quant: CFLAGS += -O3

LIBS		:= -lxdp -lbpf -lelf -lz -lm -lpthread

UAPI_H		:= $(wildcard uapi/*.h)
BPF_H		:= $(wildcard bpf/*.h)
# the checks and the hop that the slow path compiles too
KU_H		:= $(wildcard bpf/*_kern_user.h)
USER_H		:= $(wildcard user/*.h user/*/*.h)
BPF_SRC		:= $(wildcard bpf/*.bpf.c)
BPF_OBJ		:= $(patsubst bpf/%.bpf.c,$(OUT)/bpf/%.bpf.o,$(BPF_SRC))
SKELS		:= $(patsubst bpf/%.bpf.c,$(OUT)/%.skel.h,$(BPF_SRC))
# librinx: the library's base (user/log.c) and its rooms, one folder each;
# the bindings (user/python, user/mpi) are built on top of it.
LIB_ROOMS	:= comm node plan quant
LIB_SRC		:= $(wildcard user/*.c $(patsubst %,user/%/*.c,$(LIB_ROOMS)))
LIB_OBJ		:= $(patsubst user/%.c,$(OUT)/user/%.o,$(LIB_SRC))
# The emulated cluster is rinxctl's and the tests', never a trainer's: it
# stays out of librinx in an archive of its own, linked by rinxctl and by
# the tests that include its header.
TB_SRC		:= $(wildcard tools/testbed/*.c)
TB_OBJ		:= $(patsubst tools/%.c,$(OUT)/tools/%.o,$(TB_SRC))
TB_A		:= $(OUT)/libtestbed.a
TB_TESTS	:= $(patsubst selftests/%.c,$(OUT)/selftests/%,\
		   $(shell grep -l '^\#include "tools/testbed/testbed.h"' selftests/*.c))
TOOL_SRC	:= $(wildcard tools/*.c)
TOOL_OBJ	:= $(patsubst tools/%.c,$(OUT)/tools/%.o,$(TOOL_SRC))
TOOL_H		:= $(wildcard tools/*.h tools/testbed/*.h)
TEST_SRC	:= $(wildcard selftests/*.c)
TEST_BIN	:= $(patsubst selftests/%.c,$(OUT)/selftests/%,$(TEST_SRC))
# the tests' library (selftests/lib/testlib.h), built once for all of them
TEST_H		:= $(wildcard selftests/*.h selftests/lib/*.h)
TEST_LIB_SRC	:= $(wildcard selftests/lib/*.c)
TEST_LIB_OBJ	:= $(patsubst selftests/lib/%.c,$(OUT)/selftests/lib/%.o,$(TEST_LIB_SRC))
TEST_LIB	:= $(OUT)/selftests/libtest.a

PY_SRC		:= $(wildcard user/python/rinx/*.py)
PY_PKG		:= $(patsubst user/python/%,$(OUT)/python/%,$(PY_SRC)) \
		   $(OUT)/python/rinx/librinx.so

LIB_A		:= $(OUT)/librinx.a
LIB_SO		:= $(OUT)/librinx.so
RINXCTL		:= $(OUT)/rinxctl

# librinx's release and soname (docs/install.md): the soname's number
# changes only when a symbol of user/librinx.map changes or goes away;
# symbols are added in a new version node of the map and a new minor.
VERSION		:= 1.5.0
SOVERSION	:= 1
SONAME		:= librinx.so.$(SOVERSION)

.PHONY: all deps demo check clean abi-check soak install uninstall mpi
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

$(OUT)/user/%.o: user/%.c $(UAPI_H) $(USER_H) $(KU_H) $(SKELS) Makefile
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -fvisibility=hidden -c $< -o $@

$(LIB_A): $(LIB_OBJ)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(LIB_SO): $(LIB_OBJ) user/librinx.map
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -Wl,--version-script=user/librinx.map \
		-Wl,-soname,$(SONAME) -o $@ $(LIB_OBJ) $(LIBS)

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

$(OUT)/tools/%.o: tools/%.c $(UAPI_H) $(USER_H) $(TOOL_H) $(SKELS) Makefile
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(TB_A): $(TB_OBJ)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(RINXCTL): $(TOOL_OBJ) $(TB_A) $(LIB_A)
	$(call msg,LD,$@)
	$(Q)$(CC) -o $@ $(TOOL_OBJ) $(TB_A) $(LIB_A) $(LIBS)

$(TB_TESTS): $(TB_A)
$(TB_TESTS): TEST_LINK := $(TB_A)
$(OUT)/selftests/lib/%.o: selftests/lib/%.c $(TEST_H) $(UAPI_H) $(USER_H) $(SKELS) Makefile
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(TEST_LIB): $(TEST_LIB_OBJ)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(OUT)/selftests/%: selftests/%.c $(TEST_H) $(UAPI_H) $(USER_H) $(TOOL_H) $(SKELS) $(TEST_LIB) $(LIB_A) Makefile
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(TEST_LIB) $(TEST_LINK) $(LIB_A) $(LIBS)

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

# ---- install (docs/install.md) ----
# make install [PREFIX=/usr/local] [DESTDIR=] [LIBDIR= ...]; make uninstall
# with the same variables removes exactly what install put there.
PREFIX		?= /usr/local
BINDIR		?= $(PREFIX)/bin
LIBDIR		?= $(PREFIX)/lib
INCLUDEDIR	?= $(PREFIX)/include
MANDIR		?= $(PREFIX)/share/man
DOCDIR		?= $(PREFIX)/share/doc/rinx
PKGCONFIGDIR	?= $(LIBDIR)/pkgconfig
# Debian's /usr/bin/python3 looks in /usr/lib/python3/dist-packages
# (packages of the distribution) and in /usr/local/lib/python3.X/dist-packages
# (the local administrator's); any other prefix needs PYTHONPATH. PYTHON
# names the interpreter whose version X is.
PYTHON		?= /usr/bin/python3
PY_VERSION	= $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
PY_SITE_LOCAL	= $(PREFIX)/lib/python$(PY_VERSION)/dist-packages
PYTHONDIR	?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PY_SITE_LOCAL))
# Objects loaded with LD_PRELOAD, installed into LIBDIR as they are (no
# soname links): the MPI interposer (build/librinx-mpi.so) belongs here.
INSTALL_PRELOAD	= $(if $(shell command -v $(MPICC)),$(MPI_SO))
INSTALL_MAN8	:= $(OUT)/rinxctl.8
PY_MODS		:= $(notdir $(PY_SRC))

# rinx.pc: libdir and includedir relative to ${prefix} when under it.
$(OUT)/rinx.pc: user/rinx.pc.in Makefile FORCE
	$(Q)mkdir -p $(@D)
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' \
		-e 's|@LIBDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))|' \
		-e 's|@INCLUDEDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))|' \
		-e 's|@VERSION@|$(VERSION)|' $< > $@.tmp
	$(Q)if cmp -s $@.tmp $@; then rm -f $@.tmp; else \
		mv -f $@.tmp $@ && printf '  %-8s %s\n' GEN $@; fi

.PHONY: FORCE
FORCE:

# The Python package loads librinx from beside its modules: there it gets a
# relative link to the installed library, which holds under DESTDIR too.
# ldconfig (root, no DESTDIR) so that the loader finds the new soname.
install: $(RINXCTL) $(LIB_SO) $(LIB_A) $(INSTALL_MAN8) $(PY_PKG) \
	 $(OUT)/rinx.pc $(INSTALL_PRELOAD)
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) \
		$(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(DOCDIR) \
		$(DESTDIR)$(PYTHONDIR)/rinx
	$(Q)install -m 0755 $(RINXCTL) $(DESTDIR)$(BINDIR)/rinxctl
	$(Q)install -m 0755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/librinx.so.$(VERSION)
	$(Q)ln -sf librinx.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	$(Q)ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/librinx.so
	$(Q)install -m 0644 $(LIB_A) $(DESTDIR)$(LIBDIR)/librinx.a
	$(Q)for f in $(INSTALL_PRELOAD); do \
		install -m 0755 $$f $(DESTDIR)$(LIBDIR)/ || exit; done
	$(Q)install -m 0644 user/librinx.h $(DESTDIR)$(INCLUDEDIR)/librinx.h
	$(Q)install -m 0644 $(OUT)/rinx.pc $(DESTDIR)$(PKGCONFIGDIR)/rinx.pc
	$(Q)install -m 0644 $(INSTALL_MAN8) $(DESTDIR)$(MANDIR)/man8/
	$(Q)install -m 0644 LICENSE $(DESTDIR)$(DOCDIR)/LICENSE
	$(Q)install -m 0644 $(addprefix $(OUT)/python/rinx/,$(PY_MODS)) \
		$(DESTDIR)$(PYTHONDIR)/rinx/
	$(Q)ln -sf "$$(realpath -ms --relative-to=$(DESTDIR)$(PYTHONDIR)/rinx \
		$(DESTDIR)$(LIBDIR)/$(SONAME))" $(DESTDIR)$(PYTHONDIR)/rinx/librinx.so
	$(Q)$(if $(DESTDIR),:,[ "$$(id -u)" -ne 0 ] || ldconfig)

# __pycache__: byte code python3 wrote when the package was imported.
uninstall:
	$(call msg,REMOVE,$(DESTDIR)$(PREFIX))
	$(Q)rm -f $(DESTDIR)$(BINDIR)/rinxctl \
		$(DESTDIR)$(LIBDIR)/librinx.so.$(VERSION) \
		$(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/librinx.so \
		$(DESTDIR)$(LIBDIR)/librinx.a \
		$(addprefix $(DESTDIR)$(LIBDIR)/,$(notdir $(INSTALL_PRELOAD))) \
		$(DESTDIR)$(INCLUDEDIR)/librinx.h \
		$(DESTDIR)$(PKGCONFIGDIR)/rinx.pc \
		$(addprefix $(DESTDIR)$(MANDIR)/man8/,$(notdir $(INSTALL_MAN8))) \
		$(DESTDIR)$(DOCDIR)/LICENSE \
		$(addprefix $(DESTDIR)$(PYTHONDIR)/rinx/,$(PY_MODS) librinx.so)
	$(Q)rm -rf $(DESTDIR)$(PYTHONDIR)/rinx/__pycache__
	$(Q)rmdir $(DESTDIR)$(PYTHONDIR)/rinx $(DESTDIR)$(DOCDIR) 2>/dev/null || :
	$(Q)$(if $(DESTDIR),:,[ "$$(id -u)" -ne 0 ] || ldconfig)

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
