package sched

import (
	"runtime"
	"sync"
	"testing"
)

// The handoff's cost, against the alternatives RATIONALE.md ("Real time
// between calls") weighs, each around the same stand-in for a frame's
// plugin work (work). Run with
//
//	go test -run '^$' -bench . -benchtime 200000x ./internal/sched
//
// Uncontended: one goroutine, as a call whose slot is free; contended:
// 4×GOMAXPROCS goroutines, as calls that queue.

// work is a stand-in for a frame's plugin work: about a microsecond.
func work() {
	x := 1
	for i := range 300 {
		x = x*31 + i
	}
	sink = x
}

var sink int

func BenchmarkNoScheduler(b *testing.B) {
	for range b.N {
		work()
	}
}

func BenchmarkLeaseUncontended(b *testing.B) {
	l := New(Options{}).NewCall(nil).NewLease()
	b.ReportAllocs()
	for range b.N {
		l.Acquire(Now())
		work()
		l.Release()
	}
}

func BenchmarkChannelSemaphoreUncontended(b *testing.B) {
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	for range b.N {
		sem <- struct{}{}
		work()
		<-sem
	}
}

// BenchmarkWorkerHandoffUncontended hands each frame to a worker goroutine
// locked to its thread and waits for it: the design of a pool of workers
// that run the plugins, which costs two goroutine switches a frame.
func BenchmarkWorkerHandoffUncontended(b *testing.B) {
	jobs, done := make(chan struct{}), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		for range jobs {
			work()
			done <- struct{}{}
		}
	}()
	b.ReportAllocs()
	for range b.N {
		jobs <- struct{}{}
		<-done
	}
	close(jobs)
}

func contended(b *testing.B, frame func(l *Lease)) {
	s := New(Options{})
	goroutines := 4 * runtime.GOMAXPROCS(0)
	per := b.N/goroutines + 1
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for range goroutines {
		l := s.NewCall(nil).NewLease()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				frame(l)
			}
		}()
	}
	wg.Wait()
}

func BenchmarkGoSchedulerContended(b *testing.B) {
	contended(b, func(*Lease) { work() })
}

func BenchmarkLeaseContended(b *testing.B) {
	contended(b, func(l *Lease) {
		l.Acquire(Now())
		work()
		l.Release()
	})
}

func BenchmarkChannelSemaphoreContended(b *testing.B) {
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	contended(b, func(*Lease) {
		sem <- struct{}{}
		work()
		<-sem
	})
}
