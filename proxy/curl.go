package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// CurlRequest is one request through the proxy, as `git binky curl` makes it.
type CurlRequest struct {
	ProxyPort int
	Host      string // the service's proxy host name
	Path      string
	Method    string
	Data      string
	User      string   // "user:password" for basic auth
	Headers   []string // "Name: value"
	Include   bool     // print the status line and headers
	Fail      bool     // exit non-zero on HTTP errors
}

// Do sends r to the proxy on loopback with the Host header filled in. It
// follows no redirect: a 3xx answer is returned as is, Location included.
// The caller closes the response body.
func Do(ctx context.Context, r CurlRequest) (*http.Response, error) {
	path := r.Path
	if path == "" {
		path = "/"
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	method := r.Method
	if method == "" {
		method = http.MethodGet
		if r.Data != "" {
			method = http.MethodPost
		}
	}
	var body io.Reader
	if r.Data != "" {
		body = strings.NewReader(r.Data)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://127.0.0.1:"+strconv.Itoa(r.ProxyPort)+path, body)
	if err != nil {
		return nil, err
	}
	req.Host = r.Host
	if r.Data != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if r.User != "" {
		user, pw, _ := strings.Cut(r.User, ":")
		req.SetBasicAuth(user, pw)
	}
	for _, h := range r.Headers {
		k, v, ok := strings.Cut(h, ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case !ok:
			return nil, fmt.Errorf("header %q: write it as \"Name: value\"", h)
		case !headerName(k):
			return nil, fmt.Errorf("header %q: %q is not a header name", h, k)
		case strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }):
			return nil, fmt.Errorf("header %q: its value holds a control character (a line break?)", h)
		}
		req.Header.Set(k, v)
	}
	// A redirect is returned as it is, with its Location, as plain curl
	// does without -L: following it would send the caller's headers and
	// basic auth to wherever the service points, another port or host.
	client := &http.Client{
		Transport: &http.Transport{Proxy: nil},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	resp, err := client.Do(req)
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return nil, fmt.Errorf("request through the proxy on 127.0.0.1:%d: %w (is the daemon running? 'git binky daemon status')", r.ProxyPort, err)
	}
	if err != nil {
		return nil, fmt.Errorf("request through the proxy on 127.0.0.1:%d: %w", r.ProxyPort, err)
	}
	return resp, nil
}

// headerName reports an HTTP header name: one or more token characters.
func headerName(k string) bool {
	return k != "" && !strings.ContainsFunc(k, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r))
	})
}

// Curl sends r through the proxy (Do) and copies the response to out. It
// returns the HTTP status code.
func Curl(ctx context.Context, r CurlRequest, out io.Writer) (int, error) {
	resp, err := Do(ctx, r)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if r.Include {
		fmt.Fprintf(out, "%s %s\r\n", resp.Proto, resp.Status)
		keys := make([]string, 0, len(resp.Header))
		for k := range resp.Header {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			for _, v := range resp.Header[k] {
				fmt.Fprintf(out, "%s: %s\r\n", k, v)
			}
		}
		fmt.Fprint(out, "\r\n")
	}
	if r.Fail && resp.StatusCode >= 400 {
		return resp.StatusCode, nil
	}
	_, err = io.Copy(out, resp.Body)
	return resp.StatusCode, err
}
