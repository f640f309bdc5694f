package proxy

import (
	"bufio"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Forty clients on kept connections, answers taking up to 1.5 s, a
// quarter of the clients leaving while they wait (the watcher closes their
// service connections): every other answer reaches the request it is for.
func TestClientsLeavingWhileOthersWaitNeverGetAnotherAnswer(t *testing.T) {
	port := tcpService(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			var d int
			fmt.Sscanf(req.URL.Query().Get("d"), "%d", &d)
			time.Sleep(time.Duration(d) * time.Millisecond)
			echo := req.URL.Path
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(echo), echo)
		}
	})
	p := New()
	p.SetRoutes([]Route{{Host: "svc.w.acme.localhost", World: "w", Service: "svc", Port: port, Up: true}})
	addr := strings.TrimPrefix(serve(t, p).URL, "http://")
	var wg sync.WaitGroup
	for cl := 0; cl < 40; cl++ {
		wg.Add(1)
		go func(cl int) {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			br := bufio.NewReader(c)
			for i := 0; i < 6; i++ {
				d := rand.Intn(1500)
				path := fmt.Sprintf("/c%d-r%d", cl, i)
				fmt.Fprintf(c, "GET %s?d=%d HTTP/1.1\r\nHost: svc.w.acme.localhost\r\n\r\n", path, d)
				if cl%4 == 0 && i == 3 {
					time.Sleep(time.Duration(rand.Intn(1200)) * time.Millisecond)
					return // leaves while waiting
				}
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Errorf("client %d req %d: %v", cl, i, err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				if string(b) != path {
					t.Errorf("client %d: got %q for %q", cl, b, path)
				}
			}
		}(cl)
	}
	wg.Wait()
}
