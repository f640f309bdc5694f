// Package logfile reads and writes the service logs binky keeps: append-only
// files that processes write to directly, rotated by copy-and-truncate, and
// read back by tail and follow.
package logfile

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Open opens a service's log for appending, creating its folder and that
// folder's parent (<admin>/binky/logs) but nothing above them: the
// worktree of a late log may be gone, and git, finding a folder of its
// name among its worktrees' again, would keep it as a stray. The process
// writes to the log directly, with O_APPEND, so truncation by Rotate is
// safe and the process outlives its supervisor.
func Open(path string) (*os.File, error) {
	if path == "" {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	dir := filepath.Dir(path)
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("open the log %s: %w", path, err)
		}
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
}

// Rotate keeps a log near max bytes: past it, the last max bytes of the log
// (from the first line that starts in them, when one starts near their
// beginning) are copied to <path>.1, replacing the previous one, and the log
// is truncated in place. Copy and truncate rather than rename, because the
// running process keeps writing to the descriptor it has; a few lines
// written between the copy and the truncation can be lost, the price of
// never restarting a service for it.
//
// Only the tail is copied, so a rotation costs at most max bytes of disk and
// reading however big the log grew (a service printing in a loop made its
// log 8 GB between two checks, and a copy of the whole of it filled the
// disk). A ctx done stops the copy, leaving the log as it was.
func Rotate(ctx context.Context, path string, max int64) error {
	if path == "" {
		return nil
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() <= max {
		return nil
	}
	src, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("rotate log %s: %w", path, err)
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return fmt.Errorf("rotate log %s: %w", path, err)
	}
	size := fi.Size()
	if size <= max {
		return nil
	}
	start := lineStart(src, size-max, min(max/2, rotateAlign))
	tmp := path + ".1.tmp"
	dst, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("rotate log %s: %w", path, err)
	}
	cerr := copyRange(ctx, dst, src, start, size)
	if err := dst.Close(); cerr == nil {
		cerr = err
	}
	if cerr != nil {
		os.Remove(tmp)
		return fmt.Errorf("rotate log %s: %w", path, cerr)
	}
	if err := os.Rename(tmp, path+".1"); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("rotate log %s: %w", path, err)
	}
	if err := os.Truncate(path, 0); err != nil {
		return fmt.Errorf("rotate log %s: %w", path, err)
	}
	return nil
}

// rotateAlign is how far past the cut Rotate looks for a line break, so
// that <path>.1 begins with a whole line.
const rotateAlign = 64 << 10

// lineStart is the offset of the first line that begins in f within
// [off, off+within], or off if none does.
func lineStart(f *os.File, off, within int64) int64 {
	if off <= 0 || within <= 0 {
		return max(off, 0)
	}
	// From the byte before off: a break there means off begins a line.
	buf := make([]byte, within+1)
	n, _ := f.ReadAt(buf, off-1)
	if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
		return off + int64(i)
	}
	return off
}

// copyRange copies the bytes of src in [from, to) to dst, in chunks,
// stopping when ctx is done. A src that got shorter ends the copy early.
func copyRange(ctx context.Context, dst io.Writer, src io.ReaderAt, from, to int64) error {
	buf := make([]byte, 1<<20)
	for from < to {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := src.ReadAt(buf[:min(int64(len(buf)), to-from)], from)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
			from += int64(n)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// MaxTailBytes bounds how much of a log Tail reads back, and how much
// Page returns at once: enough for any number of lines a person or agent
// asks for, but not the whole of a runaway log.
const MaxTailBytes = 16 << 20

// MaxLineBytes bounds each line Tail and Page return: a longer one is cut,
// saying how long it was. (A service that printed 200 MB without a line
// break made the MCP server run out of memory encoding it.)
const MaxLineBytes = 16 << 10

// CutMark follows the kept part of a line that was cut.
const CutMark = "… [line cut: "

// CutStartMark begins a line whose start is not there: a page read from an
// offset inside a line, or output of which only the tail was kept.
const CutStartMark = "[line cut] …"

// cut shortens a line longer than MaxLineBytes, saying so.
func cut(line []byte, full int64) string {
	if int64(len(line)) < full || len(line) > MaxLineBytes {
		return fmt.Sprintf("%s%s%d bytes]", line[:min(len(line), MaxLineBytes)], CutMark, full)
	}
	return string(line)
}

// Tail returns the last n lines of the file at path (fewer if it is
// shorter; none for n < 1), reading back from its end in chunks until it
// has them or has read MaxTailBytes.
func Tail(path string, n int) []string { return TailWithin(path, n, MaxTailBytes) }

// Encoded is about how many bytes line takes as a JSON string: a control
// byte, <, > or & is written as six (\u001b), a quote or a backslash as
// two. A log of control bytes is six times its size encoded.
func Encoded(line string) int {
	n := len(line) + 2
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += 5
		case c == '"' || c == '\\':
			n++
		}
	}
	return n
}

// TailWithin is Tail keeping only the newest lines whose Encoded sizes fit
// in budget (one line at least): several services' logs in one answer
// share one bound.
func TailWithin(path string, n int, budget int) []string {
	lines := tail(path, n)
	total := 0
	for i := len(lines) - 1; i >= 0; i-- {
		if total += Encoded(lines[i]); total > budget && i < len(lines)-1 {
			return lines[i+1:]
		}
	}
	return lines
}

func tail(path string, n int) []string {
	if n < 1 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	size := fi.Size()
	const chunk = 64 << 10
	var parts [][]byte // from the end backwards
	breaks := 0
	start := size
	// Read back until the chunks hold n line breaks before the last line
	// (n+1 counting the one that ends it), the top of the file, or the
	// bound.
	for start > 0 && breaks <= n && size-start < MaxTailBytes {
		step := min(int64(chunk), start)
		start -= step
		part := make([]byte, step)
		if _, err := f.ReadAt(part, start); err != nil && err != io.EOF {
			return nil
		}
		breaks += bytes.Count(part, []byte{'\n'})
		parts = append(parts, part)
	}
	slices.Reverse(parts)
	buf := bytes.Join(parts, nil)
	var cutOff string
	if start > 0 {
		// The first line is a part: dropped, and said when the bound, not
		// the lines asked for, stopped the reading.
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			i = len(buf)
		}
		if breaks <= n {
			cutOff = fmt.Sprintf("%smore than %d bytes]", CutMark, i)
		}
		buf = buf[min(i+1, len(buf)):]
	}
	var raw [][]byte
	if len(buf) > 0 {
		raw = bytes.Split(bytes.TrimSuffix(buf, []byte{'\n'}), []byte{'\n'})
	}
	if len(raw) > n {
		raw = raw[len(raw)-n:]
	}
	var lines []string
	if cutOff != "" && len(raw) < n {
		lines = append(lines, cutOff)
	}
	for _, l := range raw {
		lines = append(lines, cut(l, int64(len(l))))
	}
	return lines
}

// Page returns up to n complete lines of the file at path from byte offset
// on (each cut to MaxLineBytes, MaxTailBytes in all), and the offset to ask
// for next: a cursor an agent can page or poll with. A file that shrank
// below offset (rotated) is read from the top, after a first line that
// says so (RotatedMark). A last line still being written is left for the
// next call.
func Page(path string, offset int64, n int) (lines []string, next int64, err error) {
	return PageWithin(path, offset, n, MaxTailBytes)
}

// RotatedMark is the line a page begins with when the log was rotated
// since the offset asked for (%s: the rotated file's name).
const RotatedMark = "[binky: this log was rotated since that offset: the lines after it are in %s, or were not kept]"

// PageWithin is Page returning only lines whose Encoded sizes fit in
// budget (one line at least); next is then the first line left out.
func PageWithin(path string, offset int64, n int, budget int) (lines []string, next int64, err error) {
	if n < 1 {
		return nil, offset, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, offset, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, offset, err
	}
	if offset > 0 && fi.Size() < offset {
		// Rotated since the caller's last page: what was written after
		// its offset is partly in <path>.1 and partly lost. Said, as the
		// first line: a poller's log jumped ahead with nothing to show.
		lines = append(lines, fmt.Sprintf(RotatedMark, filepath.Base(path)+".1"))
	}
	if offset < 0 || fi.Size() < offset {
		offset = 0
	}
	// From an offset inside a line, its first line says so.
	midLine := false
	if offset > 0 {
		var before [1]byte
		if _, err := f.ReadAt(before[:], offset-1); err == nil && before[0] != '\n' {
			midLine = true
		}
	}
	r := bufio.NewReader(io.NewSectionReader(f, offset, fi.Size()-offset))
	next = offset
	total := 0
	for len(lines) < n {
		// A line in pieces (ReadSlice's buffer), of which only the first
		// MaxLineBytes are kept.
		var kept []byte
		var length int64
		for {
			piece, err := r.ReadSlice('\n')
			length += int64(len(piece))
			if len(kept) <= MaxLineBytes {
				kept = append(kept, piece[:min(len(piece), MaxLineBytes+1-len(kept))]...)
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil { // EOF: an unfinished line waits for the next call
				return lines, next, nil
			}
			break
		}
		line := cut(bytes.TrimSuffix(kept, []byte{'\n'}), length-1)
		if midLine && len(lines) == 0 {
			line = CutStartMark + line
		}
		if total += Encoded(line); total > budget && len(lines) > 0 {
			break // the next page begins with it
		}
		next += length
		lines = append(lines, line)
	}
	return lines, next, nil
}

// Follow writes each complete line appended to path from offset on to fn,
// until ctx is done. It notices rotation (the file shrinks) and starts again
// from the top, and waits for a file that does not exist yet. A line over
// MaxLineBytes comes cut, as Tail and Page return it: only that much of a
// line still being written is held, however long it grows.
func Follow(ctx context.Context, path string, offset int64, fn func(line string)) error {
	// The line being read: its first MaxLineBytes, and its whole length.
	var kept []byte
	var length int64
	add := func(b []byte) {
		kept = append(kept, b[:min(len(b), MaxLineBytes-len(kept))]...)
		length += int64(len(b))
	}
	buf := make([]byte, 32<<10)
	for {
		f, err := os.Open(path)
		if err == nil {
			fi, serr := f.Stat()
			if serr == nil && fi.Size() < offset {
				offset, kept, length = 0, kept[:0], 0 // rotated under us
			}
			// A service writing faster than this reads keeps it here: ctx
			// is checked on each read, not only between polls.
			for ctx.Err() == nil {
				n, rerr := f.ReadAt(buf, offset)
				if n > 0 {
					offset += int64(n)
					data := buf[:n]
					for {
						i := bytes.IndexByte(data, '\n')
						if i < 0 {
							add(data)
							break
						}
						add(data[:i])
						fn(cut(kept, length))
						kept, length = kept[:0], 0
						data = data[i+1:]
					}
				}
				if rerr != nil || n == 0 {
					break
				}
			}
			f.Close()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Size is the current size of the file at path, 0 if it does not exist.
func Size(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}
