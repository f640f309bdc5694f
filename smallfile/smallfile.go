// Package smallfile reads small files whole (Read), or opens a larger one
// to stream (Open): only regular files, and Read only up to a bound, so
// that a pipe, a device or /dev/zero left at a path can neither block a
// reader nor run it out of memory.
//
// On Unix it reads with plain system calls. os.Open registers every file
// with Go's network poller: on Linux that is four fcntl calls and an
// epoll_ctl that fails for a regular file, and the first open creates the
// poller itself. `git binky env` runs on every shell prompt and reads about
// twenty small files (git's HEAD and config, binky.toml, the world's record
// and env snapshot, its port leases); reading them this way took 0.35-0.45
// ms (~4%) off each run (docs/performance.md, round 11).
package smallfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

var (
	// ErrNotRegular is wrapped by Read's error when the path names
	// something other than a regular file (after links are followed).
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge is wrapped by Read's error when the file is over the
	// bound it was read with.
	ErrTooLarge = errors.New("over binky's size limit")
)

// Read returns the contents of the regular file at path (links followed),
// of at most max bytes. A path that does not exist gives an error
// satisfying errors.Is(err, fs.ErrNotExist), as os.ReadFile's does.
func Read(path string, max int64) ([]byte, error) {
	return read(path, max)
}

// Open opens the regular file at path (links followed) for reading, and
// returns what it opened: for a file too large to read whole (it is
// streamed). It opens as Read does, so that a named pipe put at the path
// cannot make it wait, and refuses what Read refuses but the size.
func Open(path string) (*os.File, fs.FileInfo, error) {
	return open(path)
}

// checked returns f and what it is when readable says a file of its mode
// may be read; otherwise it closes f and says what is there.
func checked(f *os.File, path string, readable func(fs.FileMode) bool) (*os.File, fs.FileInfo, error) {
	fi, err := f.Stat()
	if err == nil && !readable(fi.Mode()) {
		err = notRegular(path, fi.Mode())
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

func notRegular(path string, mode fs.FileMode) error {
	return fmt.Errorf("%s is %w (%s)", path, ErrNotRegular, mode.Type())
}

func tooLarge(path string, size, max int64) error {
	return fmt.Errorf("%s is %d bytes, %w of %d", path, size, ErrTooLarge, max)
}

func grew(path string, max int64) error {
	return fmt.Errorf("%s grew while it was read: %w of %d", path, ErrTooLarge, max)
}
