//go:build windows

package hooks

import "os"

// executable reports whether git would run the hook file: Git for Windows
// runs every hook file through its sh (files have no execute bit there), so
// a hook someone switched off is one they renamed or deleted.
func executable(os.FileInfo) bool { return true }

// ownedByMe reports whether this process's user owns the file; on Windows
// the temporary folder is the user's own.
func ownedByMe(os.FileInfo) bool { return true }
