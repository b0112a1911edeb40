// Package plugins embeds the stock plugins, so the voxhost binary runs a
// pipeline with no files beside it. Each plugin's source and its built .wasm
// live in plugins/<name>/; `make plugins` rebuilds them byte for byte.
package plugins

import (
	"embed"
	"io/fs"
	"path"
	"sort"
	"strings"
)

//go:embed */*.wasm
var files embed.FS

// Get returns the module of the stock plugin called name.
func Get(name string) ([]byte, bool) {
	if !fs.ValidPath(name) || strings.Contains(name, "/") {
		return nil, false
	}
	wasm, err := files.ReadFile(path.Join(name, name+".wasm"))
	return wasm, err == nil
}

// Names lists the stock plugins in alphabetical order.
func Names() []string {
	entries, _ := files.ReadDir(".")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if _, ok := Get(e.Name()); ok {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}
