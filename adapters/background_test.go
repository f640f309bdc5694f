package adapters

import (
	"context"
	"errors"
	"testing"
)

func TestBackgroundRunsOneJobPerKeyAndWaitsForIt(t *testing.T) {
	var b Background
	release := make(chan struct{})
	started := make(chan string, 3)
	job := func(name string) func() {
		return func() {
			started <- name
			<-release
		}
	}
	b.Go("tmpl", job("first"))
	if got := <-started; got != "first" {
		t.Fatalf("started %q", got)
	}
	b.Go("tmpl", job("second")) // one is running under tmpl: not run
	b.Go("other", job("other")) // another key runs beside it
	if got := <-started; got != "other" {
		t.Fatalf("started %q, want the other key's job", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Wait(ctx, "tmpl"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on a running job with an ended context: %v", err)
	}
	close(release)
	if err := b.Wait(context.Background(), "tmpl"); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(context.Background(), "other"); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-started:
		t.Fatalf("%q ran while a job of its key was running", got)
	default:
	}
	if err := b.Wait(ctx, "never"); err != nil {
		t.Fatalf("Wait on a key with no job: %v", err)
	}
}
