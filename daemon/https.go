package daemon

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/git-binky/git-binky/world"
)

// caddyfile fronts the proxy with TLS from Caddy's own local CA. Certificates
// are issued on demand, and only for hosts the proxy routes (it answers
// Caddy's "ask"), so no name binky does not serve gets one.
func caddyfile(s world.Settings) string {
	return fmt.Sprintf(`{
	admin off
	auto_https disable_redirects
	local_certs
	skip_install_trust
	on_demand_tls {
		ask http://127.0.0.1:%[1]d/.binky/ask
	}
}

https://:%[2]d {
	bind 127.0.0.1 [::1]
	tls internal {
		on_demand
	}
	reverse_proxy 127.0.0.1:%[1]d
}
`, s.ProxyPort, s.HTTPSPort)
}

// CaddyDir holds Caddy's config and data (its local CA) for binky.
func CaddyDir(h world.Home) string { return filepath.Join(h.Dir, "caddy") }

// startHTTPS runs Caddy in front of the proxy when settings ask for https.
// It is the daemon's child, not a world's service: it lives and dies with
// the daemon (Pdeathsig), and its CA stays in $BINKY_HOME/caddy.
func (d *Daemon) setHTTPSErr(err error) {
	d.listenMu.Lock()
	d.httpsErr = err
	d.listenMu.Unlock()
}

func (d *Daemon) startHTTPS(ctx context.Context, s world.Settings) {
	if !s.HTTPS {
		return
	}
	bin, err := exec.LookPath("caddy")
	if err != nil {
		err = fmt.Errorf("https = true in %s, but caddy is not on PATH: install Caddy (Debian: apt-get install caddy) or set https = false", d.home.SettingsPath())
		d.setHTTPSErr(err)
		d.log.Error("https not started", "err", err)
		return
	}
	dir := CaddyDir(d.home)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		d.setHTTPSErr(err)
		return
	}
	cfg := filepath.Join(dir, "Caddyfile")
	if err := world.WriteFileAtomic(cfg, []byte(caddyfile(s)), 0o600); err != nil {
		d.setHTTPSErr(err)
		return
	}
	go func() {
		for ctx.Err() == nil {
			logf, _ := os.OpenFile(filepath.Join(dir, "caddy.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			cmd := exec.CommandContext(ctx, bin, "run", "--adapter", "caddyfile", "--config", cfg)
			cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
			cmd.Stdout, cmd.Stderr = logf, logf
			cmd.SysProcAttr = caddyProcAttr()
			d.log.Info("starting caddy for https", "port", s.HTTPSPort)
			err := cmd.Run()
			if logf != nil {
				logf.Close()
			}
			if ctx.Err() != nil {
				return
			}
			d.log.Error("caddy exited; restarting in 5s", "err", err, "log", filepath.Join(dir, "caddy.log"))
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Second):
			}
		}
	}()
}
