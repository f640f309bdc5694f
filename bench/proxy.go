package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// benchProxy: the proxy's overhead against going straight to the port, in one
// run, on loopback. The load comes from this process; the proxy runs in the
// daemon and the backend is examples/hello's api, so three processes share
// the machine as they would in use. Load is bounded in time and count.
func benchProxy(b *bench) error {
	dir := filepath.Join(b.tmp, "proxy")
	home := filepath.Join(dir, "home")
	bins := filepath.Join(dir, "bin")
	if err := buildHello(bins, "api"); err != nil {
		return err
	}
	proxyPort := freePort()
	os.MkdirAll(home, 0o700)
	os.WriteFile(filepath.Join(home, "settings.toml"), []byte(fmt.Sprintf("proxy_port = %d\n", proxyPort)), 0o600)
	env := append(os.Environ(), "BINKY_HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	run := func(d, name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = d, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out.String())
		}
		return nil
	}
	repo := filepath.Join(dir, "bench")
	os.MkdirAll(repo, 0o755)
	os.WriteFile(filepath.Join(repo, "binky.toml"), []byte(fmt.Sprintf("[project]\nname = \"bench\"\n[services.api]\ncmd = \"%s/api\"\nurl = \"api\"\nhealth = { http = \"/healthz\" }\n", bins)), 0o644)
	if err := run(repo, "git", "init", "-q"); err != nil {
		return err
	}
	gb := filepath.Join(b.bin, "git-binky")
	defer run(repo, gb, "daemon", "stop")
	defer run(repo, gb, "down")
	if err := run(repo, gb, "up"); err != nil {
		return err
	}
	port := 0
	for deadline := time.Now().Add(10 * time.Second); port == 0 && time.Now().Before(deadline); {
		if p, ok := healthyPort(home); ok {
			port = p
		}
	}
	if port == 0 {
		return fmt.Errorf("api never became healthy")
	}
	host := "api.bench.bench.localhost"
	workers, window, maxRequests := benchWorkers(), 5*time.Second, 500000
	load := func(url, host string) (float64, stats, error) {
		var mu sync.Mutex
		var lat []time.Duration
		var failed error
		var wg sync.WaitGroup
		deadline := time.Now().Add(window)
		var count int
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1}}
				var mine []time.Duration
				for time.Now().Before(deadline) {
					req, _ := http.NewRequest("GET", url, nil)
					if host != "" {
						req.Host = host
					}
					start := time.Now()
					resp, err := c.Do(req)
					if err != nil {
						mu.Lock()
						failed = err
						mu.Unlock()
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					mine = append(mine, time.Since(start))
					if len(mine) >= maxRequests/workers {
						break
					}
				}
				mu.Lock()
				lat = append(lat, mine...)
				count += len(mine)
				mu.Unlock()
			}()
		}
		start := time.Now()
		wg.Wait()
		return float64(count) / time.Since(start).Seconds(), summarise(lat), failed
	}
	direct := fmt.Sprintf("http://127.0.0.1:%d/hello", port)
	via := fmt.Sprintf("http://127.0.0.1:%d/hello", proxyPort)
	load(direct, "") // warm both paths
	load(via, host)
	dRPS, dS, err := load(direct, "")
	if err != nil {
		return err
	}
	pRPS, pS, err := load(via, host)
	if err != nil {
		return err
	}
	us := func(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }
	table([]string{fmt.Sprintf("%d keep-alive clients, %s each", workers, window), "requests/s", "p50", "p99"}, [][]string{
		{"straight to the port", fmt.Sprintf("%.0f", dRPS), us(dS.p50), us(dS.p99)},
		{"through the proxy", fmt.Sprintf("%.0f", pRPS), us(pS.p50), us(pS.p99)},
		{"proxy vs direct", fmt.Sprintf("%.0f%%", 100*pRPS/dRPS), "+" + us(pS.p50-dS.p50), "+" + us(pS.p99-dS.p99)},
	})
	return nil
}

// healthyPort returns the api port of the only world under home once healthy.
func healthyPort(home string) (int, bool) {
	files, _ := filepath.Glob(filepath.Join(home, "worlds", "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if bytes.Contains(b, []byte(`"state": "healthy"`)) {
			var rec struct{ Ports map[string]int }
			if jsonUnmarshal(b, &rec) == nil {
				return rec.Ports["api"], true
			}
		}
	}
	time.Sleep(10 * time.Millisecond)
	return 0, false
}

func benchWorkers() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_PROXY_CLIENTS")); err == nil && n > 0 {
		return n
	}
	return 8
}
