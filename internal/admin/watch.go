package admin

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long the watcher waits after the last change to a
// file before reading it: cp, editors and deploy tools write a file in
// several steps (create, writes, chmod; or write elsewhere and rename into
// place), and only the end result is worth validating.
const DefaultDebounce = 200 * time.Millisecond

// rescanKey is the pending "read the whole directory" job: Kubernetes
// ConfigMap and Secret volumes swap a "..data" symlink, so their NAME.wasm
// links change without an event of their own.
const rescanKey = "\x00rescan"

// Watch watches the catalog's plugin directory and refreshes NAME.wasm
// (see Refresh) debounce after its last change; 0 means DefaultDebounce. It
// first loads every plugin already in the directory, so that a bad one is
// reported at start-up. It stops, and stop returns, when ctx ends or stop
// is called.
func (m *Manager) Watch(ctx context.Context, debounce time.Duration) (stop func(), err error) {
	dir := m.cat.Dir()
	if dir == "" {
		return nil, errors.New("no plugin directory to watch")
	}
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := w.Add(dir); err != nil {
		_ = w.Close()
		return nil, err
	}
	// Added before the first scan, so no change between the two is missed.
	if err := m.Rescan(ctx); err != nil {
		m.log.Warn("cannot read the plugin directory", "dir", dir, "err", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.watch(ctx, w, dir, debounce)
	}()
	m.log.Info("watching the plugin directory", "dir", dir)
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			_ = w.Close()
		})
	}, nil
}

func (m *Manager) watch(ctx context.Context, w *fsnotify.Watcher, dir string, debounce time.Duration) {
	fire := make(chan string)
	timers := map[string]*time.Timer{}
	defer func() {
		for _, t := range timers {
			t.Stop()
		}
	}()
	schedule := func(key string) {
		if t, ok := timers[key]; ok {
			t.Reset(debounce)
			return
		}
		timers[key] = time.AfterFunc(debounce, func() {
			select {
			case fire <- key:
			case <-ctx.Done():
			}
		})
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if ev.Op == fsnotify.Chmod || filepath.Clean(ev.Name) == filepath.Clean(dir) {
				continue
			}
			file := filepath.Base(ev.Name)
			if name, ok := dirPluginName(file); ok {
				schedule(name)
			} else if strings.HasPrefix(file, "..") {
				schedule(rescanKey)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			// An overflow loses events: read everything again.
			m.log.Warn("plugin directory watch error; rescanning", "dir", dir, "err", err)
			schedule(rescanKey)
		case key := <-fire:
			delete(timers, key)
			if key == rescanKey {
				if err := m.Rescan(ctx); err != nil {
					m.log.Warn("cannot read the plugin directory", "dir", dir, "err", err)
				}
				continue
			}
			_ = m.Refresh(ctx, key)
		}
	}
}
