package transport

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// registry holds what protocol files register by name in their init
// functions, as Caddy modules do: a new carrier is one file.
type registry[T interface{ Name() string }] struct {
	what   string
	mu     sync.RWMutex
	byName map[string]T
}

func newRegistry[T interface{ Name() string }](what string) *registry[T] {
	return &registry[T]{what: what, byName: map[string]T{}}
}

func (r *registry[T]) register(v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.byName[v.Name()]; dup {
		panic(fmt.Sprintf("transport: %s %s registered twice", r.what, v.Name()))
	}
	r.byName[v.Name()] = v
}

func (r *registry[T]) lookup(name string) (T, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := r.byName[name]
	return v, ok
}

func (r *registry[T]) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.byName))
	for n := range r.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (r *registry[T]) all() []T {
	names := r.names()
	out := make([]T, 0, len(names))
	for _, n := range names {
		v, _ := r.lookup(n)
		out = append(out, v)
	}
	return out
}

var protocols = newRegistry[Protocol]("protocol")

// RegisterProtocol makes p a protocol callers may speak: the server mounts
// it at p.Path(). Each protocol's file registers itself in an init
// function; a second registration of one name panics.
func RegisterProtocol(p Protocol) { protocols.register(p) }

// Protocols lists the registered protocols, by name.
func Protocols() []Protocol { return protocols.all() }

// LookupProtocol returns the protocol registered as name, or an error that
// lists the registered ones.
func LookupProtocol(name string) (Protocol, error) {
	if p, ok := protocols.lookup(name); ok {
		return p, nil
	}
	return nil, fmt.Errorf("unknown protocol %q (have %s)", name, strings.Join(protocols.names(), ", "))
}
