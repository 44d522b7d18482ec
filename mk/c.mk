# The C library (crates/h5turbo-c, docs/c.md):
#   make c                    build/c/{lib,include,bin}: libh5turbo.{so,a}, h5turbo.pc,
#                             h5turbo.h, the example programs fast5_dump and h5sum
#   make install-c PREFIX=/usr/local   (after make c; LIBDIR=$(PREFIX)/lib64 for a
#                             lib64 system; INCLUDEDIR, BINDIR and DESTDIR as usual)
#   make c-header             regenerate the committed header with cbindgen
#   make c-test               header check, C tests (also under ASan + UBSan)

APT_PACKAGES += libhdf5-dev pkg-config cbindgen gcc g++
TEST_TARGETS += c-test

C_CRATE   := crates/h5turbo-c
C_HEADER  := $(C_CRATE)/include/h5turbo.h
C_BUILD   := build/c
CARGO_TARGET_DIR ?= target
C_RUST_LIB := $(CARGO_TARGET_DIR)/release/libh5turbo
C_EXAMPLES := fast5_dump h5sum
CC ?= cc
C_WARN    := -std=c11 -O2 -Wall -Wextra -Werror
PREFIX    ?= /usr/local
LIBDIR    ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR    ?= $(PREFIX)/bin
C_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
# The ABI version in the SONAME (crates/h5turbo-c/build.rs): MAJOR, or 0.MINOR before 1.0
C_SOVERSION := $(shell echo $(C_VERSION) | awk -F. '{ print ($$1 == "0") ? "0." $$2 : $$1 }')
C_SO      := libh5turbo.so.$(C_VERSION)

# so_links DIR: libh5turbo.so.SOVERSION -> the versioned file, libh5turbo.so -> that
so_links = ln -sfn $(C_SO) "$(1)/libh5turbo.so.$(C_SOVERSION)" && ln -sfn libh5turbo.so.$(C_SOVERSION) "$(1)/libh5turbo.so"

.PHONY: c c-lib c-header c-header-check c-test install-c

c: c-lib $(addprefix $(C_BUILD)/bin/,$(C_EXAMPLES))

# `install` replaces the files (a new inode): cp would rewrite the library in place,
# under any program running from it (SIGBUS). The shared library goes in under its full
# version, with the links a linker (libh5turbo.so) and a loader (the SONAME) look for.
c-lib:
	cargo build --release -p h5turbo-c
	mkdir -p $(C_BUILD)/lib $(C_BUILD)/include $(C_BUILD)/bin
	install -m 755 $(C_RUST_LIB).so $(C_BUILD)/lib/$(C_SO)
	$(call so_links,$(C_BUILD)/lib)
	install -m 644 $(C_RUST_LIB).a $(C_BUILD)/lib/
	install -m 644 $(C_HEADER) $(C_BUILD)/include/h5turbo.h
	sh $(C_CRATE)/h5turbo.pc.sh "$(abspath $(C_BUILD))" "$(C_VERSION)" "$(abspath $(C_BUILD))/lib" "$(abspath $(C_BUILD))/include" > $(C_BUILD)/lib/h5turbo.pc

# The examples find the library beside them ($ORIGIN/../lib, or ../lib64 where
# LIBDIR is that), here and installed.
$(C_BUILD)/bin/%: $(C_CRATE)/examples/%.c $(C_HEADER) c-lib
	$(CC) $(C_WARN) -I$(C_BUILD)/include -o $@ $< -L$(C_BUILD)/lib -lh5turbo -lm -Wl,-rpath,'$$ORIGIN/../lib:$$ORIGIN/../lib64'

c-header:
	cbindgen --config $(C_CRATE)/cbindgen.toml --crate h5turbo-c --output $(C_HEADER) $(C_CRATE)

# The committed header must be what cbindgen makes of the code now.
c-header-check:
	cbindgen --config $(C_CRATE)/cbindgen.toml --crate h5turbo-c --output $(C_BUILD)/h5turbo.generated.h $(C_CRATE)
	@cmp -s $(C_BUILD)/h5turbo.generated.h $(C_HEADER) || \
	  { diff -u $(C_HEADER) $(C_BUILD)/h5turbo.generated.h | head -40; \
	    echo "$(C_HEADER) is out of date: run make c-header and commit it"; exit 1; }

# The C tests build against an installed copy (pkg-config), as a user's program would.
# (The crate's Rust unit tests run in rust-test.)
c-test: c
	$(MAKE) --no-print-directory c-header-check
	$(MAKE) --no-print-directory install-c PREFIX=$(abspath $(C_BUILD)/test-prefix)
	rm -rf "$(abspath $(C_BUILD))/stage dir"
	$(MAKE) --no-print-directory install-c PREFIX=/opt/h5t LIBDIR=/opt/h5t/lib64 DESTDIR="$(abspath $(C_BUILD))/stage dir" > /dev/null
	sh $(C_CRATE)/tests/c/staged_install_check.sh "$(abspath $(C_BUILD))/stage dir" /opt/h5t /opt/h5t/lib64
	H5TURBO_PREFIX=$(abspath $(C_BUILD)/test-prefix) PYTHON=$(abspath $(PYTHON)) sh $(C_CRATE)/tests/c/run.sh

# Installs what `make c` built, without building (`make c && sudo make install-c`,
# where root may have no cargo).
C_BUILT := $(C_BUILD)/lib/$(C_SO) $(C_BUILD)/lib/libh5turbo.a $(addprefix $(C_BUILD)/bin/,$(C_EXAMPLES))
install-c:
	@for f in $(C_BUILT); do test -e $$f || { echo "$$f is missing: run make c first" >&2; exit 1; }; done
	install -d "$(DESTDIR)$(LIBDIR)/pkgconfig" "$(DESTDIR)$(INCLUDEDIR)" "$(DESTDIR)$(BINDIR)"
	install -m 644 $(C_BUILD)/lib/libh5turbo.a "$(DESTDIR)$(LIBDIR)/"
	install -m 755 $(C_BUILD)/lib/$(C_SO) "$(DESTDIR)$(LIBDIR)/"
	$(call so_links,$(DESTDIR)$(LIBDIR))
	install -m 644 $(C_HEADER) "$(DESTDIR)$(INCLUDEDIR)/h5turbo.h"
	sh $(C_CRATE)/h5turbo.pc.sh "$(PREFIX)" "$(C_VERSION)" "$(LIBDIR)" "$(INCLUDEDIR)" > "$(DESTDIR)$(LIBDIR)/pkgconfig/h5turbo.pc"
	install -m 755 $(addprefix $(C_BUILD)/bin/,$(C_EXAMPLES)) "$(DESTDIR)$(BINDIR)/"
