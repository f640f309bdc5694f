//go:build unix

package smallfile

import (
	"io/fs"
	"os"
	"syscall"
)

// openFD opens path for reading without waiting on a named pipe's writer.
func openFD(path string) (int, error) {
	// O_NONBLOCK: a named pipe opens without waiting for a writer, and is
	// then refused by the caller's check of what it opened.
	fd, err := retry(func() (int, error) {
		return syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	})
	if err == syscall.EAGAIN || err == syscall.EWOULDBLOCK {
		// Another process holds a lease on the file (Samba's oplocks,
		// nfsd's delegations) and is being asked to give it up: a
		// non-blocking open is refused where a plain one waits. Wait, as
		// os.ReadFile would, for what is a regular file.
		var st syscall.Stat_t
		if syscall.Stat(path, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG {
			fd, err = retry(func() (int, error) {
				return syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
			})
		}
	}
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

func open(path string) (*os.File, fs.FileInfo, error) {
	fd, err := openFD(path)
	if err != nil {
		return nil, nil, err
	}
	// Blocking again: a FUSE file system may honour O_NONBLOCK on a
	// regular file, and the caller reads with the os package.
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return checked(os.NewFile(uintptr(fd), path), path, fs.FileMode.IsRegular)
}

func read(path string, max int64) ([]byte, error) {
	fd, err := openFD(path)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, notRegular(path, modeType(uint32(st.Mode)))
	}
	size := int64(st.Size)
	if size > max {
		return nil, tooLarge(path, size, max)
	}
	// One byte past the size, so that the common case ends with the read
	// that returns 0 rather than a second allocation.
	b := make([]byte, 0, size+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // it grew since the fstat
		}
		n, err := retry(func() (int, error) { return syscall.Read(fd, b[len(b):cap(b)]) })
		if err == syscall.EAGAIN || err == syscall.EWOULDBLOCK {
			// A filesystem (FUSE) that honours O_NONBLOCK on a regular
			// file: read it blocking, as os.ReadFile does.
			if err = syscall.SetNonblock(fd, false); err == nil {
				continue
			}
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
		if int64(len(b)) > max {
			return nil, grew(path, max)
		}
	}
}

// retry runs a system call again when a signal interrupted it, as the os
// package does.
func retry(call func() (int, error)) (int, error) {
	for {
		n, err := call()
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// modeType is the type bits of a stat mode as an fs.FileMode, for errors.
func modeType(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}
