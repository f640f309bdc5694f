package supervisor

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A health command that leaves a child holding its output (setsid sleep
// &) kept the probe waiting for that child: no probe finished until it
// exited. A probe is done a second after its own process is.
func TestAHealthCommandsLeftoverChildDoesNotHoldTheProbe(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("sh's background job and setsid are POSIX")
	}
	s := &Spec{Name: "api", Health: Health{Cmd: "(setsid sleep 8 || sleep 8) & exit 0", Timeout: 20 * time.Second}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	ok, msg := probe(ctx, s)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the probe took %s: it waited for the child it left", took)
	}
	if !ok {
		t.Errorf("probe = false, %s; want the exit 0 of the command", msg)
	}
}

// A probe's result hides the credentials in its command and output before
// it is cut to its last 200 bytes and quoted: a cut through a secret left
// its tail, and quoting escaped what the hider would match.
func TestAProbesResultHidesCredentialsBeforeItIsCutOrQuoted(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the command is sh's")
	}
	const secret = `pa"ss-0123456789abcdef0123456789`
	s := &Spec{Name: "api", Health: Health{Timeout: 5 * time.Second,
		// The secret, then 190 bytes: a cut at 200 lands inside it.
		Cmd: `printf '%s%0190d' 'pa"ss-0123456789abcdef0123456789' 0; exit 1`},
		Hide: func(v string) string { return strings.ReplaceAll(v, secret, "xxxxx") }}
	ok, msg := probe(context.Background(), s)
	if ok {
		t.Fatal("the probe passed")
	}
	if strings.Contains(msg, "89abcdef") || strings.Contains(msg, `pa\"ss`) {
		t.Errorf("the result shows the secret, or part of it: %s", msg)
	}
}
