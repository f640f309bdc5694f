package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkFastPathGET is one small GET through the fast path on a kept
// connection, with as many clients as -cpu says, against a service that
// answers at once: the proxy's own cost per request, for comparing
// changes (make bench compares with nginx).
func BenchmarkFastPathGET(b *testing.B) {
	const answer = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello"
	port := tcpService(b, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			io.WriteString(c, answer)
		}
	})
	p := New()
	p.SetRoutes([]Route{{Host: "svc.w.acme.localhost", World: "w", Service: "svc", Port: port, Up: true}})
	ls, err := Listen(0)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Serve(ctx, p, ls)
		close(done)
	}()
	defer func() { cancel(); <-done }()
	addr := ls[0].Addr().String()
	const req = "GET /hello HTTP/1.1\r\nHost: svc.w.acme.localhost\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n"
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		buf := make([]byte, 4096)
		for pb.Next() {
			if _, err := io.WriteString(c, req); err != nil {
				b.Error(err)
				return
			}
			// The proxy passes the answer as it came; read its head and
			// its 5-byte body.
			n := 0
			for !strings.HasSuffix(string(buf[:n]), "hello") {
				m, err := br.Read(buf[n:])
				if err != nil {
					b.Error(err)
					return
				}
				n += m
			}
		}
	})
}
