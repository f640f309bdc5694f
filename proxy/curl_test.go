package proxy

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// A header curl cannot send is said to be the header's fault, before any
// request; only a proxy that cannot be reached is blamed on the daemon.
// (An attack's CRLF header was answered "is the daemon running?".)
func TestCurlSaysWhoseFaultAFailureIs(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // nothing listens there now
	for _, tc := range []struct {
		headers   []string
		want, not string
	}{
		{[]string{"X-A: b\r\nX-Injected: 1"}, "control character", "daemon"},
		{[]string{"Bad Name: x"}, "is not a header name", "daemon"},
		{[]string{": x"}, "is not a header name", "daemon"},
		{[]string{"X-Fine: yes"}, "is the daemon running", ""},
	} {
		_, err := Do(context.Background(), CurlRequest{ProxyPort: port, Host: "api.x.localhost", Path: "/", Headers: tc.headers})
		if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.not != "" && strings.Contains(err.Error(), tc.not)) {
			t.Errorf("headers %q: %v, want it to say %q", tc.headers, err, tc.want)
		}
	}
}

// A redirect is returned as it is, not followed: a service answering 302 to
// another server had curl send the caller's X-Api-Key and basic auth there.
func TestCurlFollowsNoRedirect(t *testing.T) {
	var stolen atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		t.Errorf("the other server got %s %s with X-Api-Key %q, Authorization %q", r.Method, r.URL, r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"))
	}))
	defer other.Close()
	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/steal", http.StatusFound)
	}))
	defer service.Close()
	port := service.Listener.Addr().(*net.TCPAddr).Port
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		resp, err := Do(context.Background(), CurlRequest{ProxyPort: port, Host: "api.x.localhost", Path: "/login", Method: method,
			User: "alice:pw", Headers: []string{"X-Api-Key: secret"}})
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound {
			t.Errorf("%s: status %d, want the 302 as is", method, resp.StatusCode)
		}
		if loc, _ := url.Parse(resp.Header.Get("Location")); loc == nil || loc.Path != "/steal" {
			t.Errorf("%s: Location %q, want the redirect's own", method, resp.Header.Get("Location"))
		}
	}
	var out strings.Builder
	code, err := Curl(context.Background(), CurlRequest{ProxyPort: port, Host: "api.x.localhost", Include: true, Headers: []string{"X-Api-Key: secret"}}, &out)
	if err != nil || code != http.StatusFound || !strings.Contains(out.String(), "Location: "+other.URL+"/steal") {
		t.Errorf("Curl: %d, %v, printed %q; want 302 with its Location", code, err, out.String())
	}
	if n := stolen.Load(); n != 0 {
		t.Errorf("the other server got %d requests, want none", n)
	}
}
