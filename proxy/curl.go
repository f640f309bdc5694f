package proxy

import (
	"context"
	"fmt"
	"io"
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
	Headers   []string // "Name: value"
	Include   bool     // print the status line and headers
	Fail      bool     // exit non-zero on HTTP errors
}

// Curl sends r to the proxy on loopback with the Host header filled in and
// copies the response to out. It returns the HTTP status code.
func Curl(ctx context.Context, r CurlRequest, out io.Writer) (int, error) {
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
		return 0, err
	}
	req.Host = r.Host
	if r.Data != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, h := range r.Headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			return 0, fmt.Errorf("header %q: write it as \"Name: value\"", h)
		}
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("request through the proxy on 127.0.0.1:%d: %w (is the daemon running? 'git binky daemon status')", r.ProxyPort, err)
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
