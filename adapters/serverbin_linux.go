//go:build linux

package adapters

import "os"

// exeSuffix is what an executable's file name ends with.
const exeSuffix = ""

// serverBinDirs are the folders FindServerBinary searches after PATH:
// Debian's versioned PostgreSQL folders, a source-built PostgreSQL, and
// where sbin servers live.
func serverBinDirs() []string {
	return []string{"/usr/lib/postgresql/*/bin", "/usr/local/pgsql/bin", "/usr/sbin", "/usr/local/sbin",
		"/opt/homebrew/bin", "/usr/local/bin"}
}

func executable(fi os.FileInfo) bool { return fi.Mode()&0o111 != 0 }
