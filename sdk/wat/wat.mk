# wat.mk: builds $(WASM) from $(SRC), a plugin in WebAssembly text whose line
#   ;; @include voxhost.wat
# stands for the SDK's functions (voxhost.wat, beside this file): sed puts
# them in its place, in $(WASM:.wasm=.wat) (the text wat2wasm's messages
# point into), and wat2wasm assembles that. A plugin's Makefile sets WASM and
# SRC and includes this file.
WAT2WASM ?= wat2wasm
VOXHOST_WAT := $(dir $(lastword $(MAKEFILE_LIST)))voxhost.wat

$(WASM): $(SRC) $(VOXHOST_WAT)
	@mkdir -p $(dir $@)
	sed -e '/^ *;; @include voxhost.wat *$$/{' -e 'r $(VOXHOST_WAT)' -e 'd' -e '}' $(SRC) > $(WASM:.wasm=.wat)
	$(WAT2WASM) $(WASM:.wasm=.wat) -o $@
