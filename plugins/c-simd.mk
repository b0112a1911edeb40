# The build of a C stock plugin whose code is WebAssembly SIMD, included by
# its plugins/NAME/Makefile after it sets NAME (the module, NAME.wasm, from
# src/NAME.c) and PAGES (its memory, min = max, in 64 KiB pages). It is not
# the top-level rule for plugins/NAME/NAME.c because clang runs wasm-opt on
# what it links, without the SIMD feature once --strip-all has removed the
# target_features section, and wasm-opt then refuses the module (see
# plugins/vad/Makefile). So clang compiles with -O2, links without, and
# wasm-opt runs here with SIMD enabled.
#
#   make        builds NAME.wasm, byte for byte the committed one
#   make clean  removes it

CLANG ?= clang-14
WASM_OPT ?= wasm-opt
SDK := ../../sdk/c
TARGET := --target=wasm32 -nostdlib
CFLAGS := $(TARGET) -msimd128 -O2 -I $(SDK)
LDFLAGS := $(TARGET) -Wl,--no-entry -Wl,--initial-memory=$(shell echo $$(($(PAGES) * 65536))) \
	-Wl,--max-memory=$(shell echo $$(($(PAGES) * 65536))) -Wl,-z,stack-size=8192 -Wl,--strip-all

.PHONY: all clean
all: $(NAME).wasm

$(NAME).wasm: src/$(NAME).c $(SDK)/voxhost.h
	$(CLANG) $(CFLAGS) -c -o $(NAME).o src/$(NAME).c
	$(CLANG) $(LDFLAGS) -o $@ $(NAME).o
	rm -f $(NAME).o
	$(WASM_OPT) --enable-simd -O2 $@ -o $@

clean:
	rm -f $(NAME).wasm $(NAME).o
