package adapters

import (
	"context"
	"sync"
)

// Background runs an adapter's work that no caller waits for (a
// template's next spare, made after a clone), at most one job per key at a
// time, and lets a caller that needs what a job makes wait for it: the
// next clone waits for the spare being made rather than copy the template
// beside it. The zero value is ready to use; it orders jobs within one
// process only (across processes, adapters take a lock on their server).
type Background struct {
	mu      sync.Mutex
	running map[string]chan struct{}
}

// Go runs job in a goroutine under key, unless one is running under it.
func (b *Background) Go(key string, job func()) {
	b.mu.Lock()
	if b.running[key] != nil {
		b.mu.Unlock()
		return
	}
	if b.running == nil {
		b.running = map[string]chan struct{}{}
	}
	done := make(chan struct{})
	b.running[key] = done
	b.mu.Unlock()
	go func() {
		defer func() {
			b.mu.Lock()
			delete(b.running, key)
			b.mu.Unlock()
			close(done)
		}()
		job()
	}()
}

// Running reports whether a job runs under key now.
func (b *Background) Running(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.running[key] != nil
}

// Wait returns once no job runs under key, or ctx's error when it ends
// first.
func (b *Background) Wait(ctx context.Context, key string) error {
	b.mu.Lock()
	done := b.running[key]
	b.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
