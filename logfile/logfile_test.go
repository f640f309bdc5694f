package logfile

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "svc.log")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTailReturnsTheLinesAskedFor(t *testing.T) {
	p := write(t, "one\ntwo\nthree\nfour\n")
	for _, tc := range []struct {
		n    int
		want []string
	}{
		{2, []string{"three", "four"}},
		{10, []string{"one", "two", "three", "four"}},
		{0, nil},
		{-5, nil},
	} {
		if got := Tail(p, tc.n); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Tail(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := Tail(filepath.Join(t.TempDir(), "none"), 3); got != nil {
		t.Errorf("Tail of a missing file = %q", got)
	}
	if got := Tail(write(t, ""), 3); got != nil {
		t.Errorf("Tail of an empty file = %q", got)
	}
	if got := Tail(write(t, "no newline at the end"), 3); !reflect.DeepEqual(got, []string{"no newline at the end"}) {
		t.Errorf("Tail of an unterminated line = %q", got)
	}
}

func TestTailReadsPastLongLinesAndCutsThem(t *testing.T) {
	long := strings.Repeat("x", 70_000)
	p := write(t, "first\n"+long+"\n"+long+"\nlast\n")
	got := Tail(p, 3)
	want := strings.Repeat("x", MaxLineBytes) + "… [line cut: 70000 bytes]"
	if len(got) != 3 || got[0] != want || got[1] != want || got[2] != "last" {
		t.Fatalf("Tail(3) after 70,000-character lines: %d lines, lengths %v", len(got), lengths(got))
	}
	if got := Tail(p, 4); len(got) != 4 || got[0] != "first" {
		t.Errorf("Tail(4) = lengths %v, want first line too", lengths(got))
	}
}

// A service that prints without line breaks cannot make a reader of its
// log hold it all: an attack printed 200 MB on one line, and the MCP
// server ran out of memory answering logs.
func TestAHugeLineIsReadBoundedAndCut(t *testing.T) {
	p := write(t, "before\n"+strings.Repeat("a", 3*MaxTailBytes)+"\nafter\n")
	start := time.Now()
	got := Tail(p, 3)
	if len(got) != 2 || got[1] != "after" || len(got[0]) > MaxLineBytes+100 || !strings.Contains(got[0], "line cut") {
		t.Errorf("Tail(3) = lengths %v", lengths(got))
	}
	lines, next, err := Page(p, 0, 5)
	if err != nil || len(lines) != 3 || lines[0] != "before" || lines[2] != "after" || next != Size(p) {
		t.Fatalf("Page = lengths %v, next %d of %d, %v", lengths(lines), next, Size(p), err)
	}
	if want := fmt.Sprintf("… [line cut: %d bytes]", 3*MaxTailBytes); !strings.HasSuffix(lines[1], want) || len(lines[1]) > MaxLineBytes+100 {
		t.Errorf("Page's long line ends %q (length %d)", lines[1][max(0, len(lines[1])-40):], len(lines[1]))
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("reading a %d MiB line took %s", 3*MaxTailBytes>>20, took)
	}
	// Unfinished, it waits, without holding more than a line's bound.
	p = write(t, "x\n"+strings.Repeat("b", 2*MaxTailBytes))
	if lines, next, _ := Page(p, 0, 5); len(lines) != 1 || next != 2 {
		t.Errorf("an unfinished huge line: %d lines, next %d", len(lines), next)
	}
}

func lengths(lines []string) []int {
	var out []int
	for _, l := range lines {
		out = append(out, len(l))
	}
	return out
}

func TestPageIsACursor(t *testing.T) {
	p := write(t, "a\nb\nc\npartial")
	lines, next, err := Page(p, 0, 2)
	if err != nil || !reflect.DeepEqual(lines, []string{"a", "b"}) || next != 4 {
		t.Fatalf("first page = %q, %d, %v", lines, next, err)
	}
	lines, next, _ = Page(p, next, 10)
	if !reflect.DeepEqual(lines, []string{"c"}) || next != 6 {
		t.Fatalf("second page = %q, %d (the unfinished line must wait)", lines, next)
	}
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(" done\n")
	f.Close()
	lines, next, _ = Page(p, next, 10)
	if !reflect.DeepEqual(lines, []string{"partial done"}) {
		t.Fatalf("after the line was finished = %q", lines)
	}
	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, []byte("new\n"), 0o600)
	// A poller's log jumped ahead with nothing said: the first line says
	// where the lines after its offset went.
	rotated := fmt.Sprintf(RotatedMark, filepath.Base(p)+".1")
	if lines, _, _ := Page(p, next, 10); !reflect.DeepEqual(lines, []string{rotated, "new"}) {
		t.Errorf("after rotation = %q, want it said, then the file from its top", lines)
	}
	if lines, _, _ := Page(p, 0, 10); !reflect.DeepEqual(lines, []string{"new"}) {
		t.Errorf("from offset 0 = %q: nothing was missed there", lines)
	}
}

// Lines of control bytes take six times their size as JSON: the budget
// counts what an answer will hold, and several services' logs share one
// (a review read 287 MiB from three services' logs of 17 MB each).
func TestTailAndPageWithinABudgetCountTheEncodedSize(t *testing.T) {
	line := strings.Repeat("\x01", 100)
	p := write(t, strings.Repeat(line+"\n", 10))
	if got := Encoded(line); got != 602 {
		t.Fatalf("Encoded = %d, want 602", got)
	}
	if got := TailWithin(p, 10, 2000); len(got) != 3 {
		t.Errorf("TailWithin(2000) = %d lines, want the newest 3", len(got))
	}
	lines, next, err := PageWithin(p, 0, 10, 2000)
	if err != nil || len(lines) != 3 || next != 303 {
		t.Fatalf("PageWithin(2000) = %d lines, next %d, %v; want 3 and the fourth line's offset", len(lines), next, err)
	}
	if lines, next, _ = PageWithin(p, next, 10, 1); len(lines) != 1 || next != 404 {
		t.Errorf("a budget smaller than a line still gives one: %d lines, next %d", len(lines), next)
	}
}

// A service that printed in a loop made its log 8 GB between two checks,
// and rotating it copied the whole of it to <path>.1.tmp, filling the disk:
// a rotation copies the last max bytes only, from a line's start.
func TestRotateCopiesOnlyTheTailFromALineStart(t *testing.T) {
	const max = 1 << 20
	var b bytes.Buffer
	for i := 0; b.Len() < 50<<20; i++ {
		fmt.Fprintf(&b, "line %07d %s\n", i, strings.Repeat("x", i%200))
	}
	content := b.Bytes()
	p := write(t, string(content))
	if err := Rotate(context.Background(), p, max); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(p + ".1")
	if err != nil {
		t.Fatal(err)
	}
	if len(old) > max || len(old) < max-rotateAlign {
		t.Errorf("%s.1 holds %d bytes, want at most %d (and near it)", p, len(old), max)
	}
	if len(old) >= len(content) || !bytes.HasSuffix(content, old) || content[len(content)-len(old)-1] != '\n' || !bytes.HasPrefix(old, []byte("line ")) {
		t.Errorf("%s.1 is not the log's last lines from a line's start: it begins %q", p, old[:min(len(old), 40)])
	}
	if n := Size(p); n != 0 {
		t.Errorf("the log holds %d bytes after rotation, want 0", n)
	}
	if _, err := os.Stat(p + ".1.tmp"); !os.IsNotExist(err) {
		t.Errorf("%s.1.tmp left behind: %v", p, err)
	}

	// Under the bound, nothing moves.
	os.WriteFile(p, []byte("short\n"), 0o600)
	if err := Rotate(context.Background(), p, max); err != nil || Size(p) != 6 {
		t.Errorf("a short log rotated: size %d, %v", Size(p), err)
	}
}

// With no line break near the cut, <path>.1 is the last max bytes.
func TestRotateWithoutLineBreaksKeepsMaxBytes(t *testing.T) {
	p := write(t, strings.Repeat("y", 5<<20))
	if err := Rotate(context.Background(), p, 1<<20); err != nil {
		t.Fatal(err)
	}
	if n := Size(p + ".1"); n != 1<<20 {
		t.Errorf("%s.1 holds %d bytes, want %d", p, n, 1<<20)
	}
	if n := Size(p); n != 0 {
		t.Errorf("the log holds %d bytes after rotation, want 0", n)
	}
}

// A rotation does not outlive the group that runs it: with its context
// done, it leaves the log as it was and no copy behind.
func TestRotateStopsWithItsContext(t *testing.T) {
	p := write(t, strings.Repeat("z\n", 4<<20))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Rotate(ctx, p, 1<<20); err == nil {
		t.Error("Rotate with its context done returned no error")
	}
	if n := Size(p); n != 8<<20 {
		t.Errorf("the log holds %d bytes, want it untouched", n)
	}
	for _, suffix := range []string{".1", ".1.tmp"} {
		if _, err := os.Stat(p + suffix); !os.IsNotExist(err) {
			t.Errorf("%s%s exists after a cancelled rotation: %v", p, suffix, err)
		}
	}
}

// logs -f held a line without a break whole, copying it on every read: a
// service printing 400 MiB on one line grew the follower to 96 MB. Follow
// cuts a long line as Tail and Page do, holding only what it keeps.
func TestFollowCutsALongLine(t *testing.T) {
	const long = 8 << 20
	p := write(t, "before\n"+strings.Repeat("a", long)+"\nafter\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lines := make(chan string, 10)
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, p, 0, func(l string) { lines <- l }) }()
	var got []string
	for len(got) < 3 {
		got = append(got, <-lines)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("a", MaxLineBytes) + fmt.Sprintf("… [line cut: %d bytes]", long)
	if got[0] != "before" || got[1] != want || got[2] != "after" {
		t.Errorf("Follow = lengths %v, want 6, %d, 5", lengths(got), len(want))
	}
	// The same line as Page gives it.
	if page, _, _ := Page(p, 0, 3); len(page) != 3 || page[1] != got[1] {
		t.Errorf("Follow and Page cut the line differently: lengths %v and %v", lengths(got), lengths(page))
	}
}

// A line of exactly MaxLineBytes is whole; one byte more is cut.
func TestFollowCutsAtMaxLineBytes(t *testing.T) {
	exact, over := strings.Repeat("e", MaxLineBytes), strings.Repeat("o", MaxLineBytes+1)
	p := write(t, exact+"\n"+over+"\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lines := make(chan string, 10)
	go Follow(ctx, p, 0, func(l string) { lines <- l })
	if got := <-lines; got != exact {
		t.Errorf("a line of MaxLineBytes came back %d bytes long", len(got))
	}
	if got, want := <-lines, over[:MaxLineBytes]+fmt.Sprintf("… [line cut: %d bytes]", MaxLineBytes+1); got != want {
		t.Errorf("a line of MaxLineBytes+1 came back %q...", got[max(0, len(got)-40):])
	}
}

// A log makes its folder and that folder's parent (binky/logs in a
// worktree's admin folder), never the admin folder itself: a service or a
// migrate that writes after git removed its worktree must not bring the
// worktree's folder back.
func TestOpenNeverMakesTheFolderAboveItsOwnTwo(t *testing.T) {
	admin := filepath.Join(t.TempDir(), "worktrees", "feature")
	if err := os.MkdirAll(admin, 0o700); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(admin, "binky", "logs", "api.log")
	f, err := Open(log)
	if err != nil {
		t.Fatalf("a log under an existing admin folder: %v", err)
	}
	f.Close()
	if err := os.RemoveAll(admin); err != nil {
		t.Fatal(err)
	}
	if f, err := Open(log); err == nil {
		f.Close()
		t.Fatal("a log opened in a removed worktree's folder")
	}
	if _, err := os.Stat(admin); !os.IsNotExist(err) {
		t.Fatalf("the removed worktree's admin folder is back: %v", err)
	}
}
