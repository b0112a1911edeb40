# voxhost — `make run` starts the host, `make test` runs every check.
SHELL := /bin/bash
GO ?= go
CLANG ?= clang-14
WAT2WASM ?= wat2wasm
CFLAGS_WASM := --target=wasm32 -nostdlib -O2 -I sdk/c \
	-Wl,--no-entry -Wl,--initial-memory=65536 -Wl,--max-memory=65536 \
	-Wl,-z,stack-size=8192 -Wl,--strip-all
WAT_SOURCES := $(wildcard plugins/*/*.wat host/*/testdata/*.wat)
C_SOURCES := $(wildcard plugins/*/*.c)
WASM := $(WAT_SOURCES:.wat=.wasm) $(C_SOURCES:.c=.wasm)

.PHONY: all build run test toolchains plugins check-plugins vet fmt-check gotest clean

all: build

build: plugins
	$(GO) build -o bin/voxhost ./cmd/voxhost

run: build
	./bin/voxhost serve

## toolchains: installs the guest compilers, idempotently (apt).
toolchains:
	@missing=""; \
	for tool in $(CLANG):clang-14 wasm-ld-14:lld-14 $(WAT2WASM):wabt wasm-opt:binaryen; do \
		command -v $${tool%%:*} >/dev/null || missing="$$missing $${tool##*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $$missing; \
	fi

## plugins: rebuilds every committed .wasm from its source, byte for byte.
plugins: $(WASM)

%.wasm: %.wat
	$(WAT2WASM) $< -o $@

plugins/%.wasm: plugins/%.c sdk/c/voxhost.h
	$(CLANG) $(CFLAGS_WASM) -o $@ $<

## check-plugins: fails if a committed .wasm differs from a fresh build.
check-plugins: toolchains
	rm -f $(WASM)
	$(MAKE) --no-print-directory plugins
	git diff --exit-code --stat -- $(WASM)
	@untracked=$$(git ls-files --others --exclude-standard -- $(WASM)); \
	if [ -n "$$untracked" ]; then echo "built but not committed: $$untracked"; exit 1; fi

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

gotest:
	$(GO) test -race -count=1 ./...

test: check-plugins fmt-check vet gotest

clean:
	rm -rf bin
