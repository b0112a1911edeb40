package catalog

import "github.com/voxhost/voxhost/plugins"

// StockNames are the stock plugins, built into voxhost, that a reference
// resolves to when the plugin directory has no module of that name; in
// order.
func (c *Catalog) StockNames() []string { return plugins.Names() }

// Stock returns the module of the stock plugin name, unloaded, for a
// listing of what a reference could resolve to.
func (c *Catalog) Stock(name string) (wasm []byte, ok bool) { return plugins.Get(name) }
