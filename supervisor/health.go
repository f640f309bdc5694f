package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"time"

	"github.com/git-binky/git-binky/procgroup"
)

// probeClient never follows redirects (a 3xx is an answer) and never
// reuses connections, so a probe sees the service as a new client would.
var probeClient = &http.Client{
	Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// probe runs the spec's health check once and describes the outcome.
func probe(ctx context.Context, s *Spec) (ok bool, result string) {
	h := s.Health
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	switch {
	case h.HTTP != "":
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.HTTP, nil)
		if err != nil {
			return false, err.Error()
		}
		resp, err := probeClient.Do(req)
		if err != nil {
			return false, fmt.Sprintf("GET %s: %s", s.hide(h.HTTP), shortNetErr(err))
		}
		resp.Body.Close()
		if resp.StatusCode >= 200 && resp.StatusCode < 400 {
			return true, fmt.Sprintf("GET %s: %s", s.hide(h.HTTP), resp.Status)
		}
		return false, fmt.Sprintf("GET %s: %s", s.hide(h.HTTP), resp.Status)
	case h.TCP != "":
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", h.TCP)
		if err != nil {
			return false, fmt.Sprintf("connect %s: %s", h.TCP, shortNetErr(err))
		}
		c.Close()
		return true, "connect " + h.TCP + ": ok"
	case h.Cmd != "":
		cmd := procgroup.Command(ctx, h.Cmd)
		cmd.Dir = s.Dir
		// What a probe leaves running (setsid ... &) goes with the service.
		marked := procgroup.Mark(cmd, s.Env, s.Mark)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		// A child the probe left holding its output (setsid sleep 120 &)
		// kept Run waiting, and no probe finished: once the probe exits,
		// its output is read for a second more, then the probe is done.
		cmd.WaitDelay = time.Second
		err := cmd.Start()
		marked() // the daemon's copy of the mark goes at once
		if err == nil {
			err = cmd.Wait()
		}
		if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success() {
			err = nil // it passed; what it left running is not the probe
		}
		// Credentials hidden before a cut (which could leave a secret's
		// tail) and before quoting (which escapes what it would match).
		shown := s.hide(h.Cmd)
		if err != nil {
			msg := s.hide(strings.TrimSpace(out.String()))
			if len(msg) > 200 {
				msg = "…" + msg[len(msg)-200:]
			}
			if ctx.Err() != nil {
				return false, fmt.Sprintf("%q timed out after %s", shown, h.Timeout)
			}
			return false, fmt.Sprintf("%q: %v %s", shown, err, msg)
		}
		return true, fmt.Sprintf("%q: exit 0", shown)
	}
	return true, "no health check"
}

// shortNetErr drops Go's "dial tcp 127.0.0.1:4000: connect:" prefixes so a
// message reads "connection refused".
func shortNetErr(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}

// sleepCtx waits d or until ctx is done, reporting whether d elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
