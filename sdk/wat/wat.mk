# wat.mk: builds build/NAME.wasm from NAME.wat, a plugin in WebAssembly text
# whose line
#   ;; @include voxhost.wat
# stands for the SDK's functions (voxhost.wat, beside this file): sed puts
# them in its place, in build/NAME.wat (the text wat2wasm's messages point
# into), and wat2wasm assembles that. A plugin's Makefile includes this file
# and names the modules it builds, e.g. all: build/NAME.wasm.
WAT2WASM ?= wat2wasm
VOXHOST_WAT := $(dir $(lastword $(MAKEFILE_LIST)))voxhost.wat

build/%.wasm: %.wat $(VOXHOST_WAT)
	@mkdir -p build
	sed -e '/^ *;; @include voxhost.wat *$$/{' -e 'r $(VOXHOST_WAT)' -e 'd' -e '}' $< > build/$*.wat
	$(WAT2WASM) build/$*.wat -o $@
