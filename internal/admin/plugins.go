package admin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/voxhost/voxhost/host/catalog"
)

// Refresh rereads NAME.wasm from the plugin directory (or, if it is gone,
// the stock plugin of that name) and, if its SHA-256 changed, validates
// it, rebuilds the pipelines that use it and makes it current for new
// calls. The plugin directory watcher calls it; so may anyone. A module
// that fails is logged and counted as rejected, and the old version stays.
// A file that disappears takes its plugin with it unless pipelines use the
// plugin: they keep the loaded version, with a warning.
func (m *Manager) Refresh(ctx context.Context, name string) error {
	// Reading and compiling the module is the slow part, and it holds no
	// lock of the manager's: uploads, reloads and the watcher go on.
	v, changed, err := m.cat.Reread(ctx, name)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refreshed(ctx, name, v, changed, err, "plugins_dir")
}

// refreshed acts on what Reread found. Called with m.mu held.
func (m *Manager) refreshed(ctx context.Context, name string, v *catalog.Version, changed bool, err error, via string) error {
	cur, _ := m.cat.Current(name)
	if errors.Is(err, catalog.ErrNotFound) {
		delete(m.rejected, name)
		if cur == nil {
			return nil
		}
		if used := m.usedBy(name); len(used) > 0 {
			m.log.Warn("plugin file removed; the pipelines that use it keep the loaded version until they are changed",
				"name", name, "sha256", cur.SHA256, "pipelines", strings.Join(used, ","))
			return nil
		}
		m.cat.Remove(name)
		m.log.Info("plugin removed", "name", name, "sha256", cur.SHA256, "via", via)
		return nil
	}
	if err != nil {
		return m.reject(name, fileHash(m.cat.DirPath(name)), cur, err, via)
	}
	if !changed {
		return nil
	}
	if cur != nil && cur.SHA256 == v.SHA256 {
		// Another change made the same module current while it compiled.
		m.cat.Discard(ctx, v)
		return nil
	}
	return m.offer(ctx, v, cur, via)
}

// offer makes a loaded, validated version current, rebuilding the
// pipelines that use it; or rejects it. Called with m.mu held.
func (m *Manager) offer(ctx context.Context, v, cur *catalog.Version, via string) error {
	used := m.usedBy(v.Ref)
	if len(used) == 0 {
		m.cat.Install(v)
	} else if _, err := m.apply(ctx, map[string]*catalog.Version{v.Ref: v}, m.specs, m.defaultName); err != nil {
		m.cat.Discard(ctx, v)
		return m.reject(v.Ref, v.SHA256, cur, err, via)
	}
	delete(m.rejected, v.Ref)
	m.pluginReloads.WithLabelValues("ok").Inc()
	msg := "plugin reloaded"
	if cur == nil {
		msg = "plugin loaded"
	}
	m.log.Info(msg, "name", v.Ref, "sha256", v.SHA256, "pipelines", strings.Join(used, ","), "source", v.Source, "via", via)
	return nil
}

// reject logs, counts and remembers a refused module. Called with m.mu
// held.
func (m *Manager) reject(name, sha string, kept *catalog.Version, err error, via string) error {
	m.pluginReloads.WithLabelValues("rejected").Inc()
	re := rejected(name, err)
	m.rejected[name] = Rejection{Name: name, SHA256: sha, Reason: re.Reason, At: time.Now()}
	attrs := []any{"name", name, "reason", re.Reason, "via", via}
	if sha != "" {
		attrs = append(attrs, "sha256", sha)
	}
	if kept != nil {
		attrs = append(attrs, "kept_sha256", kept.SHA256)
	}
	m.log.Warn("plugin rejected", attrs...)
	return re
}

// Rescan refreshes every NAME.wasm in the plugin directory, and every
// plugin that came from it whose file is gone.
func (m *Manager) Rescan(ctx context.Context) error {
	dir := m.cat.Dir()
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, e := range entries {
		if name, ok := dirPluginName(e.Name()); ok && !e.IsDir() {
			names[name] = true
		}
	}
	for _, v := range m.cat.Versions() {
		if v.Source == catalog.SourcePluginsDir {
			names[v.Ref] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		_ = m.Refresh(ctx, name)
	}
	return nil
}

// dirPluginName is the plugin a file in the plugin directory holds, if it
// holds one: NAME.wasm, not hidden (editors' and uploads' temporary files
// are).
func dirPluginName(file string) (string, bool) {
	name, ok := strings.CutSuffix(file, ".wasm")
	return name, ok && name != "" && !strings.HasPrefix(file, ".")
}

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)

func checkName(name string) error {
	switch {
	case strings.HasSuffix(name, ".wasm"):
		return &BadRequestError{fmt.Sprintf("plugin name %q ends in .wasm: name the plugin as pipelines reference it, e.g. PUT /plugins/%s", name, strings.TrimSuffix(name, ".wasm"))}
	case !validName.MatchString(name):
		return &BadRequestError{fmt.Sprintf("plugin name %q is not valid: use 1 to 100 letters, digits, '_', '-' or '.', starting with a letter or digit", name)}
	}
	return nil
}

// UploadResult says what an upload changed.
type UploadResult struct {
	PluginInfo
	// Created is true when no version of the name was loaded before.
	Created bool `json:"created"`
	// Unchanged is true when the module was the current version already.
	Unchanged bool `json:"unchanged"`
	// Previous is the SHA-256 of the version replaced.
	Previous string `json:"previous_sha256,omitempty"`
	// Pipelines are the pipelines rebuilt with the new version.
	Pipelines []string `json:"pipelines_reloaded"`
}

// Upload validates wasm as the new version of plugin NAME and, if valid and
// every pipeline that uses NAME accepts it, makes it current: new calls get
// it, calls in flight keep theirs. With a plugin directory the module is
// written to NAME.wasm (atomically: a temporary file renamed into place),
// so it survives a restart; without one it is kept in memory. A version
// uploaded under the name of a stock plugin overrides it, as NAME.wasm in
// the plugin directory does.
func (m *Manager) Upload(ctx context.Context, name string, wasm []byte) (UploadResult, error) {
	if err := checkName(name); err != nil {
		return UploadResult{}, err
	}
	source := catalog.SourceUpload
	if m.cat.Dir() != "" {
		source = catalog.SourcePluginsDir
	}
	unchanged := func(cur *catalog.Version) bool {
		return cur != nil && cur.SHA256 == hashOf(wasm) && cur.Source == source
	}
	// Compiling is the slow part, and it holds no lock of the manager's:
	// other uploads, reloads and the watcher go on meanwhile.
	var v *catalog.Version
	var err error
	if cur, _ := m.cat.Current(name); !unchanged(cur) {
		v, err = m.cat.Load(ctx, name, wasm, source)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, _ := m.cat.Current(name)
	if unchanged(cur) {
		if v != nil {
			m.cat.Discard(ctx, v)
		}
		if source == catalog.SourcePluginsDir {
			if err := writeAtomic(m.cat.DirPath(name), wasm, nil); err != nil {
				return UploadResult{}, err
			}
		}
		return UploadResult{PluginInfo: m.info(cur), Unchanged: true, Previous: cur.SHA256, Pipelines: []string{}}, nil
	}
	if v == nil && err == nil {
		// The module was current when the upload began and no longer is.
		v, err = m.cat.Load(ctx, name, wasm, source)
	}
	if err != nil {
		return UploadResult{}, m.reject(name, hashOf(wasm), cur, err, "upload")
	}
	install := func() ([]string, error) {
		used := m.usedBy(name)
		if len(used) == 0 {
			m.cat.Install(v)
			return []string{}, nil
		}
		if _, err := m.apply(ctx, map[string]*catalog.Version{name: v}, m.specs, m.defaultName); err != nil {
			return nil, m.reject(name, v.SHA256, cur, err, "upload")
		}
		return used, nil
	}
	var rebuilt []string
	if source == catalog.SourcePluginsDir {
		// The file is renamed into place only once the pipelines took the
		// new version, so a refused module never reaches the disk, and the
		// watcher, which waits for m.mu, finds the file already current.
		err = writeAtomic(m.cat.DirPath(name), wasm, func() error {
			var err error
			rebuilt, err = install()
			return err
		})
		if err != nil && rebuilt != nil {
			// The rename failed after the swap: put the old version back.
			m.restore(ctx, name, cur)
		}
	} else {
		rebuilt, err = install()
	}
	if err != nil {
		m.cat.Discard(ctx, v)
		return UploadResult{}, err
	}
	delete(m.rejected, name)
	m.pluginReloads.WithLabelValues("ok").Inc()
	msg, res := "plugin reloaded", UploadResult{PluginInfo: m.info(v), Created: cur == nil, Pipelines: rebuilt}
	if cur == nil {
		msg = "plugin loaded"
	} else {
		res.Previous = cur.SHA256
	}
	m.log.Info(msg, "name", name, "sha256", v.SHA256, "pipelines", strings.Join(rebuilt, ","), "source", v.Source, "via", "upload")
	return res, nil
}

// restore makes cur current again after a failed upload. Called with m.mu
// held.
func (m *Manager) restore(ctx context.Context, name string, cur *catalog.Version) {
	if cur == nil {
		m.cat.Remove(name)
		return
	}
	if len(m.usedBy(name)) == 0 {
		m.cat.Install(cur)
		return
	}
	if _, err := m.apply(ctx, map[string]*catalog.Version{name: cur}, m.specs, m.defaultName); err != nil {
		m.log.Error("could not restore the previous plugin version", "name", name, "sha256", cur.SHA256, "err", err)
	}
}

// writeAtomic writes data to a temporary file beside path, syncs it, runs
// commit (if not nil) and, if commit succeeds, renames the file to path.
func writeAtomic(path string, data []byte, commit func() error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".voxhost-upload-*.tmp")
	if err != nil {
		return fmt.Errorf("cannot write to the plugin directory: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if commit != nil {
		if err = commit(); err != nil {
			return err
		}
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("cannot move the upload into place as %s: %w", path, err)
	}
	return nil
}

// Delete removes plugin NAME: its file in the plugin directory, or the
// version uploaded into memory. A plugin that pipelines use is refused with
// an *InUseError; a stock plugin cannot be deleted. Where NAME.wasm
// overrode a stock plugin, the stock plugin serves the name again.
func (m *Manager) Delete(ctx context.Context, name string) (PluginInfo, error) {
	if err := checkName(name); err != nil {
		return PluginInfo{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if used := m.usedBy(name); len(used) > 0 {
		return PluginInfo{}, &InUseError{Plugin: name, Pipelines: used}
	}
	cur, loaded := m.cat.Current(name)
	removedFile := false
	if path := m.cat.DirPath(name); path != "" {
		switch err := os.Remove(path); {
		case err == nil:
			removedFile = true
		case !errors.Is(err, fs.ErrNotExist):
			return PluginInfo{}, fmt.Errorf("cannot delete %s: %w", path, err)
		}
	}
	_, stock := m.cat.Stock(name)
	if !removedFile && (!loaded || cur.Source == catalog.SourceStock || cur.Source == catalog.SourcePath) {
		if stock {
			return PluginInfo{}, &BadRequestError{fmt.Sprintf("plugin %s is a stock plugin, built into voxhost: it cannot be deleted", name)}
		}
		if _, wasRejected := m.rejected[name]; !wasRejected {
			where := "no such plugin was uploaded"
			if m.cat.Dir() != "" {
				where = fmt.Sprintf("there is no %s", m.cat.DirPath(name))
			}
			return PluginInfo{}, &NotFoundError{Plugin: name, Reason: fmt.Sprintf("no plugin %s: %s", name, where)}
		}
	}
	delete(m.rejected, name)
	info := PluginInfo{Name: name, UsedBy: []string{}}
	if loaded {
		info = m.info(cur)
		m.cat.Remove(name)
	}
	m.log.Info("plugin removed", "name", name, "sha256", info.SHA256, "via", "admin")
	return info, nil
}
