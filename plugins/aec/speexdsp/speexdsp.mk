# Builds plugins/$(PLUGIN)/$(PLUGIN).wasm from $(SOURCES) (C on the SDK,
# sdk/c) and the files $(SPEEXDSP_FILES) of SpeexDSP's libspeexdsp/, from
# Debian's source package: apt-get source (make toolchains adds the deb-src
# entry), its orig tarball checked against SPEEXDSP_SHA256, so the build
# takes no other bytes than these. Debian carries no patches for 1.2.1.
# speexdsp's configure is replaced by config.h and speex/ in this directory,
# its malloc by the arena of arena.c, libc's maths (exp, log, pow, cos ...)
# by wasi-libc's, linked statically: the plugin imports only voxhost.*.

CLANG ?= clang-14
WASM_OPT ?= wasm-opt
SDK := ../../sdk/c
GLUE := ../aec/speexdsp
SPEEXDSP_DEB := 1.2.1-1
SPEEXDSP_SHA256 := 8c777343e4a6399569c72abc38a95b24db56882c83dbdb6c6424a5f4aeb54d3d
BUILD := build
SPEEXDSP := $(BUILD)/speexdsp-1.2.1
WASI_SYSROOT ?= /usr/include/wasm32-wasi
WASI_LIB ?= /usr/lib/wasm32-wasi

TARGET := --target=wasm32-wasi -nostdlib
CFLAGS := $(TARGET) -O2 -mbulk-memory -msimd128 -ffp-contract=off -DHAVE_CONFIG_H -I $(GLUE) -I $(SPEEXDSP)/include \
	-isystem $(WASI_SYSROOT) -I $(SDK) -Wno-everything -ffile-prefix-map=$(CURDIR)=.
# 4 MiB of memory, fixed: the stack (64 KiB) first, so an overflow traps
# rather than overwriting the state; the arena; the buffers.
LDFLAGS := $(TARGET) -Wl,--no-entry -Wl,--initial-memory=4194304 -Wl,--max-memory=4194304 \
	-Wl,--stack-first -Wl,-z,stack-size=65536 -Wl,--strip-all

.PHONY: all clean
all: $(PLUGIN).wasm

FETCHED := $(BUILD)/fetched
$(FETCHED):
	rm -rf $(BUILD) && mkdir -p $(BUILD)
	cd $(BUILD) && apt-get source --download-only -q speexdsp=$(SPEEXDSP_DEB) 2>&1 | grep -v '^W: Download is performed unsandboxed' || true
	echo "$(SPEEXDSP_SHA256)  $(BUILD)/speexdsp_1.2.1.orig.tar.gz" | sha256sum -c --quiet
	tar -C $(BUILD) -xzf $(BUILD)/speexdsp_1.2.1.orig.tar.gz
	touch $@
# The library's files come with the tarball.
$(addprefix $(SPEEXDSP)/libspeexdsp/,$(SPEEXDSP_FILES)): $(FETCHED) ;

OBJS := $(addprefix $(BUILD)/,$(SPEEXDSP_FILES:.c=.o)) $(BUILD)/arena.o $(BUILD)/blocks.o $(addprefix $(BUILD)/,$(notdir $(SOURCES:.c=.o)))

$(BUILD)/%.o: $(SPEEXDSP)/libspeexdsp/%.c | $(FETCHED)
	$(CLANG) $(CFLAGS) -c -o $@ $<
$(BUILD)/arena.o: $(GLUE)/arena.c $(GLUE)/arena.h | $(FETCHED)
	$(CLANG) $(CFLAGS) -c -o $@ $<
$(BUILD)/blocks.o: $(GLUE)/blocks.c $(GLUE)/blocks.h | $(FETCHED)
	$(CLANG) $(CFLAGS) -c -o $@ $<
$(BUILD)/%.o: src/%.c $(SDK)/voxhost.h $(GLUE)/blocks.h | $(FETCHED)
	$(CLANG) $(CFLAGS) -c -o $@ $<

$(PLUGIN).wasm: $(OBJS)
	$(CLANG) $(LDFLAGS) -o $@ $(OBJS) $(WASI_LIB)/libc.a
	$(WASM_OPT) --enable-bulk-memory --enable-simd -O2 $@ -o $@

clean:
	rm -rf $(BUILD) $(PLUGIN).wasm
