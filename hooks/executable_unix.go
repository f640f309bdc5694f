//go:build unix

package hooks

import "os"

// executable reports whether git would run the hook file: on unix, only
// when its owner may execute it.
func executable(fi os.FileInfo) bool { return fi.Mode().Perm()&0o100 != 0 }
