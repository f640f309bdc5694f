package proxy

import (
	"context"
	"net"
	"strings"
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
