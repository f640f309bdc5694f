//go:build !unix

package smallfile

import (
	"io"
	"io/fs"
	"os"
)

func open(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	// Windows reports files behind reparse points Go does not know
	// (cloud placeholders) as irregular: those read as files do.
	return checked(f, path, func(m fs.FileMode) bool { return m.Type()&^fs.ModeIrregular == 0 })
}

func read(path string, max int64) ([]byte, error) {
	f, fi, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > max {
		return nil, tooLarge(path, fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		return nil, grew(path, max)
	}
	return b, err
}
