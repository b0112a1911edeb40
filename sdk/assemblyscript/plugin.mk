# Builds one AssemblyScript plugin on this SDK. A plugin's Makefile sets OUT
# (the .wasm its asconfig.json writes) and includes this file:
#
#   make            builds $(OUT) (runs `npm ci`, or `npm install` where there is
#                   no package-lock.json, first if node_modules is missing)
#   make clean      removes $(OUT) (a committed build comes back byte for byte)
#   make distclean  also removes node_modules/ (the next make reinstalls from package-lock.json)
#
# The compiler flags live in the plugin's asconfig.json, which extends
# asconfig.plugin.json here: stub runtime, -O3 --noAssert, 1 page of memory
# (min = max), --use abort= (no env.abort import).

SDK := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
NPM ?= npm
ASC := node_modules/.bin/asc
SOURCES := $(wildcard assembly/*.ts) asconfig.json package.json \
	$(wildcard $(SDK)/assembly/*.ts) $(SDK)/index.ts $(SDK)/asconfig.plugin.json
# npm writes this file last, when an install has succeeded.
INSTALLED := node_modules/.package-lock.json

.PHONY: all clean distclean

all: $(OUT)

$(OUT): $(SOURCES) | $(INSTALLED)
	$(ASC) --target release

# Order-only: an existing install is never redone, so a build works offline.
# npm ci installs what package-lock.json pins; a new project has none yet,
# and npm install writes it.
$(INSTALLED):
	$(NPM) $(if $(wildcard package-lock.json),ci,install) --no-audit --no-fund

# Double-colon: a project's other makefiles (voxhost.mk) add to it.
clean::
	rm -f $(OUT)

distclean: clean
	rm -rf node_modules
