// Package sdk carries the guest SDKs and the project templates into the
// voxhost binary, for `voxhost plugin new` (internal/scaffold): each SDK is
// one copy in the repository, under sdk/<lang>/, and this package embeds the
// files a plugin project needs from it.
//
// The layout Files holds, by directory:
//
//   - voxhost.mk: the make targets every project shares (test, run, clean);
//   - template/: the files every project gets (README.md, gitignore);
//   - <lang>/: the SDK of a language, as in the repository;
//   - <lang>/template/ (and c/template-cpp/): the project of a new plugin in
//     that language, whose files are templates (see internal/scaffold).
//
// The Go SDK (sdk/go) is a package of the voxhost module rather than a module
// of its own so that this package can embed it: Go embeds no file of another
// module. A project gets it as a module of its own, with a go.mod from
// go/template/.
package sdk

import "embed"

// Files are the embedded SDKs and templates, at the paths they have under
// sdk/ in the repository.
//
//go:embed voxhost.mk all:template
//go:embed c/voxhost.h c/README.md all:c/template all:c/template-cpp
//go:embed rust/Cargo.toml rust/README.md rust/src all:rust/template
//go:embed assemblyscript/index.ts assemblyscript/assembly assemblyscript/package.json
//go:embed assemblyscript/asconfig.plugin.json assemblyscript/plugin.mk assemblyscript/README.md
//go:embed all:assemblyscript/template
//go:embed go/*.go go/reference/*.go go/README.md all:go/template
//go:embed wat/template.wat wat/voxhost.wat wat/wat.mk wat/README.md all:wat/template
var Files embed.FS
