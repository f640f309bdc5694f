//go:build darwin

package adapters

import "os"

// exeSuffix is what an executable's file name ends with.
const exeSuffix = ""

// serverBinDirs are the folders FindServerBinary searches after PATH:
// Homebrew's keg-only formulae (postgresql@16 is not linked into bin) on
// Apple silicon (/opt/homebrew) and Intel (/usr/local), Postgres.app, and
// Homebrew's and MacPorts' bin folders.
func serverBinDirs() []string {
	return []string{"/opt/homebrew/opt/postgresql@*/bin", "/usr/local/opt/postgresql@*/bin",
		"/Applications/Postgres.app/Contents/Versions/*/bin", "/opt/local/lib/postgresql*/bin",
		"/opt/homebrew/bin", "/opt/homebrew/sbin", "/usr/local/bin", "/usr/local/sbin", "/opt/local/bin", "/opt/local/sbin"}
}

func executable(fi os.FileInfo) bool { return fi.Mode()&0o111 != 0 }
