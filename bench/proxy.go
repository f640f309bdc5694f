//go:build unix

package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// benchProxy: binky's proxy against nginx (2 workers, a keep-alive
// upstream: its production set-up) and Caddy, in the same run, in front of
// the same backend (examples/hello's api, run by the daemon), on loopback.
// wrk makes the load (-t1, 8 connections for throughput and p99, 1 for
// latency); each target is measured in turn, rounds interleaved so machine
// noise hits all alike, and the median round is kept. CPU per request (the
// proxy's own, from /proc) is printed too: on a busy machine it is steadier
// than throughput.
func benchProxy(b *bench) error {
	ensurePackages("wrk", "nginx", "caddy")
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
	run := func(d, name string, args ...string) (string, error) {
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = d, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out.String())
		}
		return out.String(), nil
	}
	repo := filepath.Join(dir, "bench")
	os.MkdirAll(repo, 0o755)
	os.WriteFile(filepath.Join(repo, "binky.toml"), []byte(fmt.Sprintf("[project]\nname = \"bench\"\n[services.api]\ncmd = \"%s/api\"\nurl = \"api\"\nhealth = { http = \"/healthz\" }\n", bins)), 0o644)
	if _, err := run(repo, "git", "init", "-q"); err != nil {
		return err
	}
	gb := filepath.Join(b.bin, "git-binky")
	defer run(repo, gb, "daemon", "stop")
	defer run(repo, gb, "down")
	if _, err := run(repo, gb, "up"); err != nil {
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
	daemonPID := 0
	if out, err := run(repo, gb, "daemon", "status", "--json"); err == nil {
		var h struct{ PID int }
		if jsonUnmarshal([]byte(out), &h) == nil {
			daemonPID = h.PID
		}
	}
	targets := []*target{
		{name: "straight to the port", port: port, pids: func() []int { return apiPIDs(home) }},
		{name: "binky", port: proxyPort, pids: func() []int { return []int{daemonPID} }},
	}
	if t, stop, err := startNginx(filepath.Join(dir, "nginx"), port); err != nil {
		fmt.Printf("nginx not measured: %v\n", err)
	} else {
		defer stop()
		targets = append(targets, t)
	}
	if t, stop, err := startCaddy(filepath.Join(dir, "caddy"), port); err != nil {
		fmt.Printf("Caddy not measured: %v\n", err)
	} else {
		defer stop()
		targets = append(targets, t)
	}
	host := "api.bench.bench.localhost"
	conns, window, rounds := benchWorkers(), benchWindow(), 3
	wrk, _ := exec.LookPath("wrk")
	if wrk == "" {
		fmt.Println("wrk not found (apt-get install wrk): the load comes from this process instead")
	}
	measure := func(t *target, c int) (loadResult, error) {
		if wrk != "" {
			return wrkLoad(wrk, t, host, c, window)
		}
		return goLoad(t, host, c, window)
	}
	for _, t := range targets { // warm every path: kept connections, caches
		if _, err := measure(t, conns); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
	for r := 0; r < rounds; r++ {
		for _, t := range targets {
			many, err := measure(t, conns)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			one, err := measure(t, 1)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			t.many, t.one = append(t.many, many), append(t.one, one)
		}
	}
	us := func(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }
	var rows [][]string
	for _, t := range targets {
		m, o := median(t.many), median(t.one)
		rows = append(rows, []string{t.name, fmt.Sprintf("%.0f", m.rps), us(m.p50), us(m.p99), fmt.Sprintf("%.1f µs", m.cpu), us(o.p50), us(o.p99), fmt.Sprintf("%.1f µs", o.cpu)})
	}
	fmt.Printf("GET /hello through each, wrk -t1, %s per measurement, median of %d interleaved rounds\n\n", window, rounds)
	// At one connection binky's reads poll their socket briefly before they
	// park (proxy/spin_unix.go): the last column is what that costs.
	table([]string{"target", fmt.Sprintf("req/s (%d conns)", conns), "p50", "p99", "CPU per request", "p50 (1 conn)", "p99 (1 conn)", "CPU per request (1 conn)"}, rows)
	direct, binky := targets[0], targets[1]
	dm, do, bm, bo := median(direct.many), median(direct.one), median(binky.many), median(binky.one)
	fmt.Printf("\nbinky adds %s at p50 with 1 connection and %s at p99 with %d; straight to the port is %.2fx binky's throughput\n",
		us(bo.p50-do.p50), us(bm.p99-dm.p99), conns, dm.rps/bm.rps)
	if len(targets) > 2 {
		fmt.Println()
		var ratios [][]string
		for _, t := range targets[2:] {
			tm, to := median(t.many), median(t.one)
			ratios = append(ratios, []string{t.name, fmt.Sprintf("%.2fx", bm.rps/tm.rps), fmt.Sprintf("%.2fx", bm.cpu/tm.cpu),
				fmt.Sprintf("%.2fx", float64(bo.p50)/float64(to.p50)), fmt.Sprintf("%.2fx", float64(bm.p99)/float64(tm.p99))})
		}
		table([]string{"binky vs", "throughput (8 conns)", "CPU per request", "p50 (1 conn)", "p99 (8 conns)"}, ratios)
	}
	return nil
}

// target is one way to the backend.
type target struct {
	name      string
	port      int
	pids      func() []int // whose CPU a request costs (the proxy's processes)
	many, one []loadResult
}

type loadResult struct {
	rps      float64
	p50, p99 time.Duration
	cpu      float64 // µs of the target's processes per request
}

func median(rs []loadResult) loadResult {
	s := append([]loadResult(nil), rs...)
	sort.Slice(s, func(i, j int) bool { return s[i].rps < s[j].rps })
	m := s[len(s)/2]
	// Latency and CPU are each the median of their own.
	sort.Slice(s, func(i, j int) bool { return s[i].p50 < s[j].p50 })
	m.p50 = s[len(s)/2].p50
	sort.Slice(s, func(i, j int) bool { return s[i].p99 < s[j].p99 })
	m.p99 = s[len(s)/2].p99
	sort.Slice(s, func(i, j int) bool { return s[i].cpu < s[j].cpu })
	m.cpu = s[len(s)/2].cpu
	return m
}

var (
	wrkRPS     = regexp.MustCompile(`Requests/sec:\s+([\d.]+)`)
	wrkCount   = regexp.MustCompile(`(\d+) requests in`)
	wrkPercent = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([\d.]+)(us|ms|s)\b`)
	wrkErrors  = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)|Socket errors: .*`)
)

func wrkLoad(wrk string, t *target, host string, conns int, window time.Duration) (loadResult, error) {
	before := cpuOf(t.pids())
	out, err := exec.Command(wrk, "-t1", "-c"+strconv.Itoa(conns), "-d"+strconv.Itoa(int(window.Seconds()))+"s", "--latency",
		"-H", "Host: "+host, fmt.Sprintf("http://127.0.0.1:%d/hello", t.port)).CombinedOutput()
	after := cpuOf(t.pids())
	if err != nil {
		return loadResult{}, fmt.Errorf("wrk: %v: %s", err, out)
	}
	if m := wrkErrors.Find(out); m != nil {
		return loadResult{}, fmt.Errorf("wrk: %s", m)
	}
	var r loadResult
	if m := wrkRPS.FindSubmatch(out); m != nil {
		r.rps, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	for _, m := range wrkPercent.FindAllSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(string(m[2]), 64)
		d := time.Duration(v * float64(map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[string(m[3])]))
		if string(m[1]) == "50" {
			r.p50 = d
		} else {
			r.p99 = d
		}
	}
	if m := wrkCount.FindSubmatch(out); m != nil {
		if n, _ := strconv.ParseFloat(string(m[1]), 64); n > 0 {
			r.cpu = float64(after-before) * 1e6 / clockTicks / n
		}
	}
	return r, nil
}

// goLoad is the load when wrk is missing: keep-alive clients in this process.
func goLoad(t *target, host string, workers int, window time.Duration) (loadResult, error) {
	var mu sync.Mutex
	var lat []time.Duration
	var failed error
	var wg sync.WaitGroup
	url := fmt.Sprintf("http://127.0.0.1:%d/hello", t.port)
	before := cpuOf(t.pids())
	deadline := time.Now().Add(window)
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1}}
			var mine []time.Duration
			for time.Now().Before(deadline) {
				req, _ := http.NewRequest("GET", url, nil)
				req.Host = host
				t0 := time.Now()
				resp, err := c.Do(req)
				if err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	s := summarise(lat)
	r := loadResult{rps: float64(s.n) / time.Since(start).Seconds(), p50: s.p50, p99: s.p99}
	if s.n > 0 {
		r.cpu = float64(cpuOf(t.pids())-before) * 1e6 / clockTicks / float64(s.n)
	}
	return r, failed
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times (100 on
// every Linux build that matters).
const clockTicks = 100

// cpuOf sums user and system time of pids, in clock ticks.
func cpuOf(pids []int) int64 {
	var total int64
	for _, pid := range pids {
		total += cpuTicks(pid)
	}
	return total
}

// apiPIDs are the backend's processes: the api's in the world record.
func apiPIDs(home string) []int {
	files, _ := filepath.Glob(filepath.Join(home, "worlds", "*.json"))
	var pids []int
	for _, f := range files {
		b, _ := os.ReadFile(f)
		var rec struct {
			Services map[string]struct{ PID int }
		}
		if jsonUnmarshal(b, &rec) == nil {
			for _, s := range rec.Services {
				if s.PID > 0 {
					// The supervisor may run the command under a shell.
					pids = append(pids, childrenOf(s.PID)...)
				}
			}
		}
	}
	return pids
}

// childrenOf returns pid and its children (nginx's workers).
func childrenOf(pid int) []int {
	out := []int{pid}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if p, err := strconv.Atoi(e.Name()); err == nil && parent(p) == pid {
			out = append(out, p)
		}
	}
	return out
}

// startNginx runs nginx as a production reverse proxy would be: 2 workers,
// HTTP/1.1 keep-alive to the upstream, the same X-Forwarded-* as binky.
func startNginx(dir string, backend int) (*target, func(), error) {
	bin := findBinary("nginx")
	if bin == "" {
		return nil, nil, fmt.Errorf("nginx not found (apt-get install nginx)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	port := freePort()
	conf := fmt.Sprintf(`worker_processes 2;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
daemon off;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  upstream backend { server 127.0.0.1:%[2]d; keepalive 32; }
  server {
    listen 127.0.0.1:%[3]d;
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Host $host;
      proxy_set_header X-Forwarded-Proto $scheme;
    }
  }
}
`, dir, backend, port)
	cfg := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(bin, "-c", cfg, "-p", dir)
	return startTarget("nginx (2 workers)", cmd, port, true)
}

// startCaddy runs Caddy's reverse_proxy with its defaults (keep-alive
// upstream, X-Forwarded-* set).
func startCaddy(dir string, backend int) (*target, func(), error) {
	bin := findBinary("caddy")
	if bin == "" {
		return nil, nil, fmt.Errorf("caddy not found (apt-get install caddy)")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	port := freePort()
	cfg := filepath.Join(dir, "Caddyfile")
	conf := fmt.Sprintf("{\n\tadmin off\n\tauto_https off\n}\nhttp://:%d {\n\tbind 127.0.0.1\n\treverse_proxy 127.0.0.1:%d\n}\n", port, backend)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(bin, "run", "--config", cfg, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir, "HOME="+dir)
	return startTarget("Caddy", cmd, port, false)
}

func startTarget(name string, cmd *exec.Cmd, port int, withChildren bool) (*target, func(), error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", name, err)
	}
	stop := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		cmd.Wait()
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("tcp4", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nil, fmt.Errorf("%s did not listen: %s", name, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	pid := cmd.Process.Pid
	pids := func() []int { return []int{pid} }
	if withChildren {
		pids = func() []int { return childrenOf(pid) }
	}
	return &target{name: name, port: port, pids: pids}, stop, nil
}

func findBinary(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range []string{"/usr/sbin", "/usr/local/sbin", "/usr/bin"} {
		if p := filepath.Join(d, name); fileExists(p) {
			return p
		}
	}
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// ensurePackages installs the Debian packages of the comparison when they
// are missing and we may (root with apt-get); otherwise the bench says
// what it could not measure.
func ensurePackages(names ...string) {
	var missing []string
	for _, n := range names {
		if findBinary(n) == "" {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 || os.Getuid() != 0 {
		return
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return
	}
	fmt.Printf("installing %s with apt-get\n", strings.Join(missing, " "))
	args := append([]string{"install", "-y", "-q"}, missing...)
	cmd := exec.Command("apt-get", args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		exec.Command("apt-get", "update", "-q").Run()
		if out2, err := exec.Command("apt-get", args...).CombinedOutput(); err != nil {
			fmt.Printf("apt-get install %s failed: %v\n%s%s", strings.Join(missing, " "), err, out, out2)
		}
	}
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

// benchWindow is the length of one measurement (BENCH_PROXY_SECONDS).
func benchWindow() time.Duration {
	if n, err := strconv.Atoi(os.Getenv("BENCH_PROXY_SECONDS")); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	return 3 * time.Second
}
