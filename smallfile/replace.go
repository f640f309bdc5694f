package smallfile

import (
	"os"
	"path/filepath"
)

// Replace writes data to path so that a reader sees either the old content
// or the new, never a part: a temporary file beside it, renamed over it.
// With sync the data reaches the disk before the rename, so a crash leaves
// one or the other too; without, a crash may leave the file empty or
// absent, which suits a cache that checks itself on read (env's snapshot).
func Replace(path string, data []byte, perm os.FileMode, sync bool) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	cleanup := func(e error) error {
		f.Close()
		os.Remove(tmp)
		return e
	}
	if _, err := f.Write(data); err != nil {
		return cleanup(err)
	}
	if err := f.Chmod(perm); err != nil {
		return cleanup(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			return cleanup(err)
		}
	}
	if err := f.Close(); err != nil {
		return cleanup(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
