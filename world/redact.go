package world

import (
	"net/url"
	"sort"
	"strings"
)

// Hidden is what a redacted credential reads as.
const Hidden = "xxxxx"

// secretName reports a variable or field whose value is a credential.
func secretName(k string) bool {
	k = strings.ToUpper(k)
	for _, s := range []string{"PASSWORD", "SECRET", "TOKEN"} {
		if strings.HasSuffix(k, s) || strings.HasSuffix(k, "_"+s) {
			return true
		}
	}
	return strings.HasSuffix(k, "SECRET_KEY")
}

// secrets collects the credentials in an environment: the values of
// *_PASSWORD-like variables and the passwords inside URLs.
func secrets(env map[string]string) []string {
	seen := map[string]bool{}
	for k, v := range env {
		if v == "" {
			continue
		}
		if secretName(k) {
			seen[v] = true
		}
		if u, err := url.Parse(v); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok && pw != "" {
				seen[pw] = true
				if esc := url.QueryEscape(pw); esc != pw {
					seen[esc] = true
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	// Longest first, so a secret that contains another is hidden whole.
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

func hide(v string, secrets []string) string {
	for _, s := range secrets {
		if len(s) >= 4 { // a one-letter "password" would blank the text around it
			v = strings.ReplaceAll(v, s, Hidden)
		}
	}
	return v
}

// RedactEnv returns env with every credential hidden wherever it appears:
// in its own variable, in URLs and in DSNs that repeat it.
func RedactEnv(env map[string]string) map[string]string {
	sec := secrets(env)
	out := make(map[string]string, len(env))
	for k, v := range env {
		out[k] = hide(v, sec)
	}
	return out
}

// Redacted returns the coordinates with every credential hidden, in the
// environment and in each service's fields alike.
func (c Coordinates) Redacted() Coordinates {
	all := map[string]string{}
	for k, v := range c.Env {
		all[k] = v
	}
	for svc, a := range c.Services {
		for f, v := range a.Fields {
			all[svc+"."+f] = v
		}
	}
	sec := secrets(all)
	out := c
	out.Env = make(map[string]string, len(c.Env))
	for k, v := range c.Env {
		out.Env[k] = hide(v, sec)
	}
	out.Services = make(map[string]ServiceAddress, len(c.Services))
	for svc, a := range c.Services {
		b := a
		if a.Fields != nil {
			b.Fields = make(map[string]string, len(a.Fields))
			for f, v := range a.Fields {
				b.Fields[f] = hide(v, sec)
			}
		}
		b.URL, b.DirectURL = hide(a.URL, sec), hide(a.DirectURL, sec)
		out.Services[svc] = b
	}
	return out
}
