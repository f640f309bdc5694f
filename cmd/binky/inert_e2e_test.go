package main

import (
	"strings"
	"testing"

	"github.com/git-binky/git-binky/api"
)

// escapeService prints a terminal's escape sequences (a retitle, a clear
// screen, an OSC 52 clipboard write, a line rewritten to a fake success)
// and exits 3.
const escapeService = `[project]
name = "acme"
[services.api]
cmd = '''printf '\033]0;TITLE\007\033[2J\033]52;c;cm0gLXJmIH4K\007\033[1A\033[2K✓ up: fake\n'; printf '\033]0;ERR\007\n' >&2; exit 3'''
url = "api"
`

// A service's output reached the terminal of `git binky up` as escape
// sequences, which the terminal ran: the failed up's error quoted it raw.
// It is shown as text (\x1b...), and binky's own line breaks stay.
func TestUpShowsAServicesEscapeSequencesAsText(t *testing.T) {
	f := newFixture(t, escapeService)
	_, stderr, err := f.binky(f.repo, "up", "esc")
	t.Cleanup(func() { f.binky(f.repo, "remove", "esc", "--force") })
	if err == nil {
		t.Fatalf("a service that exits 3 did not fail the up:\n%s", stderr)
	}
	if strings.ContainsAny(stderr, "\x1b\x07") {
		t.Errorf("the service's escape sequences reached the terminal: %q", stderr)
	}
	if !strings.Contains(stderr, "git-binky: ") || !strings.Contains(stderr, `\x1b]0;TITLE\x07`) && !strings.Contains(stderr, `\x1b]0;ERR\x07`) {
		t.Errorf("the error does not show the service's output as text: %q", stderr)
	}
	if strings.Contains(stderr, `\x0a`) {
		t.Errorf("the error's own line breaks are shown as text: %q", stderr)
	}
	// status's "why" and the service's line quote the same message.
	out, _, _ := f.binky(f.repo, "status")
	if strings.ContainsAny(out, "\x1b\x07") || strings.Contains(out, `\x0a`) || !strings.Contains(out, "why: ") || !strings.Contains(out, `\x1b]0;`) {
		t.Errorf("status shows the failed up's reason raw, or its line breaks as text: %q", out)
	}
}

// The progress lines of an up on a terminal quote a service's message: its
// escape sequences are shown as text, and binky's own colours stay.
func TestProgressShowsAServicesEscapeSequencesAsText(t *testing.T) {
	var b strings.Builder
	show := progress(&b, style{on: true})
	show(api.Event{Service: "api", State: "crashed", Message: "exit 3: \x1b]0;TITLE\a\x1b[2J"})
	show(api.Event{Message: "\x1b[1A\x1b[2K✓ up: fake"})
	got := b.String()
	for _, raw := range []string{"\x1b]0;", "\x1b[2J", "\x1b[1A", "\x1b[2K", "\a"} {
		if strings.Contains(got, raw) {
			t.Errorf("%q reached the terminal: %q", raw, got)
		}
	}
	if !strings.Contains(got, "\x1b[31mcrashed\x1b[0m") || !strings.Contains(got, `exit 3: \x1b]0;TITLE\x07\x1b[2J`) || !strings.Contains(got, `\x1b[1A\x1b[2K✓ up: fake`) {
		t.Errorf("progress: %q", got)
	}
}
