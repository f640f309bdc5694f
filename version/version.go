// Package version says which git-binky this is. The CLI and the daemon
// compare it: a CLI talking to a daemon of another build replaces it.
package version

import (
	"runtime/debug"
	"sync"
)

// Release is the version of this source tree.
const Release = "0.1.0"

// build is a stamp the Makefile sets (-ldflags -X) to the same value for
// the CLI and the daemon built together, so that a rebuilt daemon replaces
// a running one even when the commit has not changed.
var build string

// String is Release plus, for builds from git, the commit (with "-dirty"
// for uncommitted changes), plus the build stamp when there is one.
var String = sync.OnceValue(func() string {
	v := Release
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev string
		dirty := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			v += "+" + rev
			if dirty {
				v += "-dirty"
			}
		}
	}
	if build != "" {
		v += "." + build
	}
	return v
})
