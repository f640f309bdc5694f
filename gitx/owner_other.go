//go:build !unix

package gitx

import "os"

// ownedByOther is false where ownership is not a uid (Windows): binky then
// relies on git's own check whenever it runs git there.
func ownedByOther(os.FileInfo) bool { return false }
