# voxhost — `make run` starts the host, `make test` runs every check.
SHELL := /bin/bash
GO ?= go
CLANG ?= clang-14
WAT2WASM ?= wat2wasm
CFLAGS_WASM := --target=wasm32 -nostdlib -O2 -I sdk/c \
	-Wl,--no-entry -Wl,--initial-memory=65536 -Wl,--max-memory=65536 \
	-Wl,-z,stack-size=8192 -Wl,--strip-all
WAT_SOURCES := $(wildcard plugins/*/*.wat host/*/testdata/*.wat internal/*/testdata/*.wat)
C_SOURCES := $(wildcard plugins/*/*.c)
WASM := $(WAT_SOURCES:.wat=.wasm) $(C_SOURCES:.c=.wasm)
# Plugins in other languages build through their own Makefile, which writes
# plugins/NAME/NAME.wasm; so do test fixtures in them, {host,internal}/PKG/testdata/NAME/NAME.wasm
# (an AssemblyScript plugin that runs out of memory, for plugin test's soak).
SUBMAKE_PLUGINS := $(patsubst %/Makefile,%,$(wildcard plugins/*/Makefile host/*/testdata/*/Makefile internal/*/testdata/*/Makefile))
ALL_WASM := $(WASM) $(foreach d,$(SUBMAKE_PLUGINS),$(d)/$(notdir $(d)).wasm)

.PHONY: all build run bench test fuzz toolchains plugins examples check-plugins vet fmt-check gotest clean

all: build

build:
	$(GO) build -o bin/voxhost ./cmd/voxhost

run: build
	./bin/voxhost serve

## bench: the benchmark suite (about 5 minutes on 2 cores); writes BENCHMARKS.md.
bench: build
	./bin/voxhost --cache-dir - bench report --out BENCHMARKS.md

## toolchains: installs the guest compilers, idempotently (apt, npm), and
## Debian's Chromium for the browser console's end-to-end tests.
APT_TOOLS := $(CLANG):clang-14 wasm-ld-14:lld-14 $(WAT2WASM):wabt wasm-opt:binaryen \
	/usr/bin/rustc:rustc /usr/bin/cargo:cargo \
	/usr/lib/rustlib/wasm32-unknown-unknown:libstd-rust-dev-wasm32 \
	/usr/include/wasm32-wasi:wasi-libc node:nodejs npm:npm /usr/bin/chromium:chromium
# The field's resamplers, which plugins/resample's fidelity test measures the
# stock one beside (through cgo, internal/refresample).
APT_TOOLS += /usr/include/soxr.h:libsoxr-dev /usr/include/speex/speex_resampler.h:libspeexdsp-dev

# SIPp (Debian's sip-tester) places the SIP trunk tests' calls.
APT_TOOLS += sipp:sip-tester
# baresip calls in as a phone would (hold, BYE, CANCEL, a bot's keys); its
# core package has the headless aufile and aubridge modules the tests use.
APT_TOOLS += baresip:baresip-core
toolchains:
	@missing=""; \
	for tool in $(APT_TOOLS); do \
		path=$${tool%%:*}; \
		if [ "$${path#/}" != "$$path" ]; then [ -e "$$path" ] || missing="$$missing $${tool##*:}"; \
		else command -v $$path >/dev/null || missing="$$missing $${tool##*:}"; fi; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $$missing; \
	fi

## deb-src: Debian's source index, for the plugins built from a Debian source
## package with apt-get source (aec, denoise: speexdsp). Part of toolchains.
DEB_SRC_LIST := /etc/apt/sources.list.d/debian-src.sources
toolchains: deb-src
.PHONY: deb-src
deb-src:
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	if ! grep -rqs '^Types: deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src ' /etc/apt/sources.list; then \
		echo "adding $(DEB_SRC_LIST)"; \
		printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' | $$SUDO tee $(DEB_SRC_LIST) >/dev/null; \
	fi; \
	if ! apt-cache showsrc speexdsp >/dev/null 2>&1 || [ -z "$$(apt-cache showsrc speexdsp 2>/dev/null)" ]; then $$SUDO apt-get update -q; fi

## plugins: rebuilds every committed .wasm from its source, byte for byte.
plugins: $(WASM)
	@for d in $(SUBMAKE_PLUGINS); do $(MAKE) --no-print-directory -C $$d || exit 1; done

%.wasm: %.wat
	$(WAT2WASM) $< -o $@

plugins/%.wasm: plugins/%.c sdk/c/voxhost.h
	$(CLANG) $(CFLAGS_WASM) -o $@ $<

## examples: builds the example plugin in every SDK language (examples/*/Makefile).
examples: toolchains
	@for d in examples/*/; do \
		if [ -f "$$d/Makefile" ]; then $(MAKE) --no-print-directory -C "$$d" || exit 1; fi; \
	done

## check-plugins: fails if a committed .wasm differs from a fresh build.
check-plugins: toolchains
	rm -f $(ALL_WASM)
	$(MAKE) --no-print-directory plugins
	git diff --exit-code --stat -- $(ALL_WASM)
	@untracked=$$(git ls-files --others --exclude-standard -- $(ALL_WASM)); \
	if [ -n "$$untracked" ]; then echo "built but not committed: $$untracked"; exit 1; fi

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# make toolchains installed SIPp: under make test its absence fails the SIP tests.
gotest: export VOXHOST_SIP_TOOLS_REQUIRED := 1
# The example conformance test needs every example built, and the console's
# tests Chromium; under make test a missing build or browser is a failure,
# not a skip. go test's timeout is a hang detector, not a speed limit: its
# default of 10 minutes a package fired on internal/preempt and plugins/aec
# (160 s and 100 s beside stress-ng --cpu 2) on a box at a load average of 25.
gotest: examples
	VOXHOST_EXAMPLES_REQUIRED=1 VOXHOST_BROWSER_REQUIRED=1 $(GO) test -race -count=1 -timeout 30m ./...

## fuzz: explores, on purpose and at length: each fuzz target for FUZZTIME
## on top of its committed corpus. Not part of make test: random exploration
## can fail a fresh clone on an input nobody has seen, so CI only replays the
## committed corpora (testdata/fuzz/), which plain go test already does. Add
## what this finds to the target's corpus together with its fix.
FUZZTIME ?= 60s
FUZZ_TARGETS := FuzzInspect:./host/plugin FuzzParseSpec:./host/pipeline \
	FuzzInstrument:./internal/preempt FuzzInstrumentDifferential:./internal/preempt \
	FuzzTwilioDecode:./host/transport FuzzParse:./host/config FuzzTwilioBotDecode:./host/transport FuzzRawBotDecode:./host/transport FuzzOpenAIBotDecode:./host/transport FuzzAudioSocketDecode:./host/transport FuzzAudioSocketBotDecode:./host/transport FuzzAudioSocketReadMessage:./host/transport FuzzAsteriskDecode:./host/transport FuzzAsteriskBotDecode:./host/transport FuzzForkDecode:./host/transport FuzzForkBotDecode:./host/transport FuzzTelnyxDecode:./host/transport FuzzTelnyxBotDecode:./host/transport FuzzPlivoDecode:./host/transport FuzzPlivoBotDecode:./host/transport FuzzExotelDecode:./host/transport FuzzExotelBotDecode:./host/transport FuzzAutoDecode:./host/transport FuzzVonageDecode:./host/transport FuzzVonageBotDecode:./host/transport FuzzGenesysDecode:./host/transport FuzzGenesysBotDecode:./host/transport FuzzExpandURL:./host/transport
FUZZ_TARGETS += FuzzFileStem:./host/recording
FUZZ_TARGETS += FuzzParseOffer:./host/sip FuzzParseRequest:./host/sip

FUZZ_TARGETS += FuzzGeminiBotDecode:./host/transport FuzzDeepgramBotDecode:./host/transport FuzzElevenLabsBotDecode:./host/transport
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t%%:*} for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$${t%%:*}$$" -fuzztime $(FUZZTIME) $${t##*:} || exit 1; \
	done

## test: every check, one step of TEST_STEPS after another, each announced
## on a line of its own with the time so far, and each step's time at the
## end. On a fresh 2-core machine it takes about 12 minutes, 8 of them
## installing the toolchains and building the plugins and examples.
## Add a step with a new line TEST_STEPS += RULE.
TEST_STEPS := toolchains check-plugins fmt-check vet examples gotest
test:
	@steps=($(TEST_STEPS)); total=$${#steps[@]}; n=0; took=""; \
	clock() { printf '%d:%02d' $$(($$1 / 60)) $$(($$1 % 60)); }; \
	for step in "$${steps[@]}"; do \
		n=$$((n + 1)); began=$$SECONDS; \
		echo "==> make test: step $$n of $$total, $$step (at $$(clock $$SECONDS))"; \
		if ! $(MAKE) --no-print-directory $$step; then \
			echo "==> make test: FAILED in $$step, step $$n of $$total (at $$(clock $$SECONDS))"; exit 1; \
		fi; \
		took="$$took$${took:+, }$$step $$(clock $$((SECONDS - began)))"; \
	done; \
	echo "==> make test: passed in $$(clock $$SECONDS) ($$took)"

clean:
	rm -rf bin

## bench-detectors: the stock vad and dtmf against their references (make bench
## runs it): the vad beside WebRTC's VAD (Debian's libwebrtc-audio-processing,
## cgo, build tag webrtcvad) in noise and babble, and dtmf's talk-off on an
## hour of synthetic speech. Needs espeak-ng, sox and the library, which it
## installs (with gcc and pkg-config for cgo); make test needs none of them.
BENCH_DETECTOR_TOOLS := /usr/bin/espeak-ng:espeak-ng /usr/bin/sox:sox /usr/bin/gcc:gcc /usr/bin/pkg-config:pkg-config \
	/usr/include/webrtc_audio_processing:libwebrtc-audio-processing-dev
.PHONY: bench-detectors
bench-detectors:
	@$(MAKE) --no-print-directory toolchains APT_TOOLS="$(BENCH_DETECTOR_TOOLS)"
	$(GO) test -tags webrtcvad -run '^$$' -bench WebRTC -benchtime 1x -v ./plugins/vad/
	$(GO) test -run '^$$' -bench TalkOff -benchtime 1x -v ./plugins/dtmf/
bench: bench-detectors

## native-rust: the stock Rust plugin, dtmf, compiled for the host from its own
## source (internal/nativeplugin/dtmf/, Debian's cargo as plugins/dtmf uses):
## the static library that voxhost links when built with -tags nativerust, so
## that bench hop puts dtmf beside its native build too
## (go run -tags nativerust ./cmd/voxhost bench hop --plugin dtmf).
## native-rust-test runs the native builds' tests with it (a make test step).
NATIVE_RUST_CARGO ?= /usr/bin/cargo
NATIVE_RUST_RUSTC ?= /usr/bin/rustc
.PHONY: native-rust native-rust-test
native-rust: toolchains
	RUSTC=$(NATIVE_RUST_RUSTC) CARGO_TARGET_DIR=$(CURDIR)/internal/nativeplugin/dtmf/target $(NATIVE_RUST_CARGO) build \
		--offline --locked --release --manifest-path internal/nativeplugin/dtmf/Cargo.toml
native-rust-test: native-rust
	$(GO) test -race -count=1 -tags nativerust ./internal/nativeplugin/ ./internal/bench/
TEST_STEPS += native-rust-test
