# voxhost.mk: the targets every voxhost plugin project shares. The project's
# Makefile sets NAME and WASM (the module it builds), defines `all`, and
# includes this file last:
#
#   make test    voxhost plugin test $(WASM): the ABI lifecycle, every check
#   make run     voxhost run: in.wav (3 s of generated speech) -> out.wav,
#                with CONFIG as the plugin's key=value config and DTMF as
#                its key presses, e.g. make run CONFIG="gain_db=-12" DTMF=500:5
#   make clean   removes build/, in.wav, out.wav (and $(CLEAN))
#
# VOXHOST is the voxhost command: `voxhost` on PATH by default, or e.g.
# make test VOXHOST="go run github.com/voxhost/voxhost/cmd/voxhost@latest".
VOXHOST ?= voxhost
CONFIG ?=
DTMF ?= 500:5

.PHONY: all test run clean

test: $(WASM)
	$(VOXHOST) plugin test $(WASM)

in.wav:
	$(VOXHOST) generate speech $@

run: $(WASM) in.wav
	$(VOXHOST) run --dtmf "$(DTMF)" --pipeline "$(WASM) $(CONFIG)" in.wav out.wav

clean::
	rm -rf build in.wav out.wav $(CLEAN)
