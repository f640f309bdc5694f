package world

import (
	"os"
	"strings"

	"github.com/git-binky/git-binky/homedir"
)

// ProxyDownPath is where the daemon says its URL proxy could not start
// (the port held by another program), so that commands that do not ask the
// daemon — env on every shell prompt — are honest about URLs too.
func (h Home) ProxyDownPath() string { return homedir.ProxyDown(h.Dir) }

// ProxyDown is why the daemon's proxy is not listening, or "" when it is
// (or no daemon said otherwise). While it is down, worlds' URLs are their
// direct ones: a URL on the proxy's port would reach whatever holds it.
func (h Home) ProxyDown() string {
	b, err := os.ReadFile(h.ProxyDownPath())
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// SetProxyDown records why the proxy is down; "" clears it.
func (h Home) SetProxyDown(why string) error {
	if why == "" {
		err := os.Remove(h.ProxyDownPath())
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	return WriteFileAtomic(h.ProxyDownPath(), []byte(why+"\n"), 0o600)
}
