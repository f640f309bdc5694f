//go:build !unix

package smallfile

import (
	"io"
	"io/fs"
	"os"
)

func read(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// Windows reports files behind reparse points Go does not know
	// (cloud placeholders) as irregular: those read as files do.
	if t := fi.Mode().Type(); t&^fs.ModeIrregular != 0 {
		return nil, notRegular(path, fi.Mode())
	}
	if fi.Size() > max {
		return nil, tooLarge(path, fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		return nil, grew(path, max)
	}
	return b, err
}
