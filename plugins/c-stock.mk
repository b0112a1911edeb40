# The build of a scalar C stock plugin (gate, agc, tone: src/NAME.c on
# ../c-stock/stock.h), included by its plugins/NAME/Makefile after it sets NAME.
# One 64 KiB page of memory (min = max), laid out as plugins/vad/Makefile
# explains: the stack first (512 bytes, 8 times the deepest frame, agc's
# vox_init's 64, with no recursion; an
# overflow runs below address 0 and traps), then the constants
# and the plugin's state, and the SDK's 16 KiB frame buffer last (../c-stock/src/sdk.c,
# linked after the plugin), so that a frame touches as few 4 KiB pages as
# host/plugin's TestStockPluginsTouchFewPages allows: agc's ring of 1 ms
# levels (2000 of its 8000 bytes at the default window_ms) ends on page 0
# only with a stack of 512 bytes, and its buffer starts on page 2. clang compiles with
# -O2 and links without it (so it does not run wasm-opt itself); wasm-opt
# -O2 runs here, as for the SIMD plugins (c-simd.mk). The float-to-int
# conversions are WebAssembly's non-trapping ones (-mnontrapping-fptoint,
# as AssemblyScript emitted), one instruction each where clang-14's default
# wraps every conversion in a range check; every value these plugins
# convert is in range, where both give the same integer. -msign-ext lets
# a 16-bit lane of stock_load4's word become a sample in one i32.extend16_s
# (wazero: one movsx) rather than a shift left and a shift right.
#
#   make        builds NAME.wasm, byte for byte the committed one
#   make clean  removes it

CLANG ?= clang-14
WASM_OPT ?= wasm-opt
SDK := ../../sdk/c
TARGET := --target=wasm32 -nostdlib
CFLAGS := $(TARGET) -mnontrapping-fptoint -msign-ext -O2 -I $(SDK)
LDFLAGS := $(TARGET) -Wl,--no-entry -Wl,--initial-memory=65536 -Wl,--max-memory=65536 \
	-Wl,--stack-first -Wl,-z,stack-size=512 -Wl,--strip-all

.PHONY: all clean
all: $(NAME).wasm

$(NAME).wasm: src/$(NAME).c ../c-stock/stock.h ../c-stock/src/sdk.c $(SDK)/voxhost.h
	$(CLANG) $(CFLAGS) -c -o $(NAME).o src/$(NAME).c
	$(CLANG) $(CFLAGS) -c -o sdk.o ../c-stock/src/sdk.c
	$(CLANG) $(LDFLAGS) -o $@ $(NAME).o sdk.o
	rm -f $(NAME).o sdk.o
	$(WASM_OPT) --enable-nontrapping-float-to-int --enable-sign-ext -O2 $@ -o $@

clean:
	rm -f $(NAME).wasm $(NAME).o sdk.o
