//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/git-binky/git-binky/adapters"
)

// benchWorlds reproduces the seed README's table on this machine, side by
// side in one run: N worlds of Postgres with 200,000 rows each, as a server
// per world (initdb + start + load, per world) against binky (one shared
// server, a golden template, a clone per world, through `git binky up`).
func benchWorlds(b *bench) error {
	initdb, pgctl, psql := findPG("initdb"), findPG("pg_ctl"), findPG("psql")
	// The per-server side runs the server's own psql, as binky's migrate
	// and seed do on the managed server (its client folder comes first on
	// PATH): on Debian /usr/bin/psql is a Perl wrapper costing ~60 ms a
	// call, which one side alone must not pay.
	if k, ok := adapters.Lookup("postgres"); ok {
		if dir := k.Server.ClientDir(); dir != "" {
			psql = filepath.Join(dir, "psql")
		}
	}
	if initdb == "" || pgctl == "" || psql == "" {
		fmt.Println("skipped: PostgreSQL server binaries not found (apt-get install postgresql)")
		return nil
	}
	cred, err := pgUser()
	if err != nil {
		return err
	}
	rows := 200000
	if v, err := strconv.Atoi(os.Getenv("BENCH_ROWS")); err == nil && v > 0 {
		rows = v
	}
	sweep := []int{1, 2, 4, 8}
	if v := os.Getenv("BENCH_WORLDS"); v != "" { // e.g. "8", or "2,8"
		sweep = nil
		for _, f := range strings.Split(v, ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
				sweep = append(sweep, n)
			}
		}
	}
	dir := filepath.Join(b.tmp, "worlds")
	os.MkdirAll(dir, 0o711)
	os.Chmod(b.tmp, 0o711)
	// The schema is the migration (re-runnable: it runs again on every
	// clone) and the rows are the seed (run once, into the template).
	schema := "CREATE TABLE IF NOT EXISTS items (id int PRIMARY KEY, name text, price numeric);"
	seed := fmt.Sprintf("INSERT INTO items SELECT i, 'item ' || i, i * 0.01 FROM generate_series(1, %d) i;", rows)
	load := schema + " " + seed

	// BENCH_CLONE_MIGRATE=changed measures binky with clone_migrate =
	// "changed" (a clone at its template's commit skips the migrate,
	// whose table the copy carries); by default every clone runs it.
	cloneMigrate := ""
	if v := os.Getenv("BENCH_CLONE_MIGRATE"); v != "" {
		cloneMigrate = fmt.Sprintf("clone_migrate = %q\n", v)
		fmt.Printf("binky's worlds with %s\n", strings.TrimSpace(cloneMigrate))
	}
	// The machine's speed moves by a third from one minute to the next, so
	// the last point is measured in rounds (BENCH_WORLDS_ROUNDS, default 3),
	// each side of a round right after the other, and the medians kept.
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("BENCH_WORLDS_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	measure := func(n, round int) (result, error) {
		r := result{n: n}
		var datas []string
		var ports []int
		// A server per world: initdb, start and load, for each world.
		perSide := func() error {
			settle()
			start := time.Now()
			for i := 0; i < n; i++ {
				began := time.Now()
				data := filepath.Join(dir, fmt.Sprintf("per-%d-%d-r%d", n, i, round))
				port := freePort()
				if err := os.MkdirAll(data, 0o700); err != nil {
					return err
				}
				chown(data, cred)
				if err := runAs(cred, initdb, "-D", data, "-U", "bench", "--auth", "trust", "--no-instructions"); err != nil {
					return err
				}
				if err := runAs(cred, pgctl, "-D", data, "-l", filepath.Join(data, "log"), "-w", "-o",
					fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -c unix_socket_directories=%s", port, data), "start"); err != nil {
					return err
				}
				datas = append(datas, data)
				ports = append(ports, port)
				if err := runAs(cred, psql, "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "bench", "-d", "postgres", "-q", "-v", "ON_ERROR_STOP=1", "-c", load); err != nil {
					return err
				}
				r.perEach = append(r.perEach, time.Since(began))
			}
			r.perTime = time.Since(start)
			// Memory is read at rest, on both sides: 2 s after the last load
			// or up (binky's next spare copy and its pooled admin
			// connections, which close after 1 s idle, are done by then).
			time.Sleep(2 * time.Second)
			memOK := true
			for _, d := range datas {
				rss, pss := clusterMemory(d)
				r.perRAM += rss
				r.perPSS += pss
				m, ok := clusterFootprint(d)
				r.perMem, memOK = r.perMem+m, memOK && ok
			}
			if !memOK {
				r.perMem = 0
			}
			// And once each server has run the checkpoint it would run by
			// itself within checkpoint_timeout (5 minutes): its
			// checkpointer then has touched every buffer it wrote.
			for _, port := range ports {
				runAs(cred, psql, "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "bench", "-d", "postgres", "-q", "-c", "CHECKPOINT")
			}
			time.Sleep(2 * time.Second)
			for _, d := range datas {
				rss, _ := clusterMemory(d)
				r.perRAMCk += rss
			}
			for _, d := range datas {
				runAs(cred, pgctl, "-D", d, "-m", "fast", "stop")
			}
			return nil
		}

		// binky: a fresh machine state, one shared server, golden + clones.
		home := filepath.Join(dir, fmt.Sprintf("binky-%d-r%d", n, round))
		repo := filepath.Join(dir, fmt.Sprintf("repo-%d-r%d", n, round))
		var binkyData string
		binkySide := func() error {
			run, err := binkyRepo(home, repo, fmt.Sprintf(`[project]
name = "bench"
[services.db]
adapter = "postgres"
migrate = "psql \"$DB_URL\" -q -v ON_ERROR_STOP=1 -c \"%s\""
seed = "psql \"$DB_URL\" -q -v ON_ERROR_STOP=1 -c \"%s\""
clone_from = "golden"
%s`, schema, seed, cloneMigrate), nil)
			if err != nil {
				return err
			}
			gb := filepath.Join(b.bin, "git-binky")
			settle()
			start := time.Now()
			for i := 0; i < n; i++ {
				began := time.Now()
				if _, err := run(repo, gb, "up", fmt.Sprintf("w%d", i)); err != nil {
					return err
				}
				r.binkyEach = append(r.binkyEach, time.Since(began))
			}
			r.binkyTime = time.Since(start)
			binkyData = filepath.Join(home, "servers", "postgres", "data")
			if target, err := os.Readlink(binkyData); err == nil {
				binkyData = target
			}
			time.Sleep(2 * time.Second)
			r.binkyRAM, r.binkyPSS = clusterMemory(binkyData)
			if m, ok := clusterFootprint(binkyData); ok {
				r.binkyMem = m
			}
			adminPSQL(psql, home, "CHECKPOINT")
			time.Sleep(2 * time.Second)
			r.binkyRAMCk, _ = clusterMemory(binkyData)
			r.clone, r.cloneMig = cloneTimes(filepath.Join(home, "daemon.log"))
			r.disk = worldDisk(psql, home)
			// Stopped, not removed: removing the worlds deletes files (their
			// worktrees, their databases), which would slow a side after it.
			run(repo, gb, "daemon", "stop")
			runAs(cred, pgctl, "-D", binkyData, "-m", "fast", "stop")
			return nil
		}
		// Odd rounds measure binky first: neither side always runs second.
		sides := []func() error{perSide, binkySide}
		if round%2 == 1 {
			sides[0], sides[1] = sides[1], sides[0]
		}
		var err error
		for _, side := range sides {
			if err = side(); err != nil {
				break
			}
		}
		for _, d := range datas {
			runAs(cred, pgctl, "-D", d, "-m", "immediate", "stop")
			removeAll(d)
		}
		if binkyData != "" {
			runAs(cred, pgctl, "-D", binkyData, "-m", "immediate", "stop")
			if filepath.Dir(filepath.Dir(binkyData)) != filepath.Join(home, "servers") {
				removeAll(filepath.Dir(filepath.Dir(binkyData))) // root's /var/lib/git-binky/<home>
			}
		}
		for i := 0; i < n; i++ {
			removeAll(filepath.Join(dir, fmt.Sprintf("w%d", i))) // the worktrees, beside the repository
		}
		removeAll(repo)
		removeAll(home)
		return r, err
	}
	var results []result
	for i, n := range sweep {
		times := 1
		if i == len(sweep)-1 {
			times = rounds
		}
		var rs []result
		for round := 0; round < times; round++ {
			r, err := measure(n, round)
			if err != nil {
				return err
			}
			rs = append(rs, r)
		}
		if len(rs) > 1 {
			var line []string
			for i, r := range rs {
				line = append(line, fmt.Sprintf("round %d: time %.1f vs %.1fs (%.2fx; %s), RSS %s vs %s (%.3fx), after a checkpoint %s vs %s (%.3fx)", i+1,
					r.binkyTime.Seconds(), r.perTime.Seconds(), r.binkyTime.Seconds()/r.perTime.Seconds(), r.split(),
					mibOf(r.binkyRAM), mibOf(r.perRAM), float64(r.binkyRAM)/float64(r.perRAM),
					mibOf(r.binkyRAMCk), mibOf(r.perRAMCk), float64(r.binkyRAMCk)/float64(r.perRAMCk)))
			}
			fmt.Printf("%d worlds, %d rounds (the table and the ratios below are their medians):\n  %s\n\n", n, len(rs), strings.Join(line, "\n  "))
		}
		results = append(results, medianResult(rs))
	}
	mib := mibOf
	sec := func(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }
	var rowsOut [][]string
	for _, r := range results {
		memory := func(v uint64) string {
			if v == 0 {
				return "n/a (needs root)"
			}
			return mib(v)
		}
		rowsOut = append(rowsOut, []string{fmt.Sprint(r.n), mib(r.perRAM), mib(r.binkyRAM), mib(r.perRAMCk), mib(r.binkyRAMCk), mib(r.perPSS), mib(r.binkyPSS),
			memory(r.perMem), memory(r.binkyMem), sec(r.perTime), sec(r.binkyTime), fmt.Sprintf("%.0f ms", float64(r.clone)/float64(time.Millisecond)),
			fmt.Sprintf("%.0f ms", float64(r.cloneMig)/float64(time.Millisecond)), fmt.Sprintf("%.1f MiB", float64(r.disk)/(1<<20))})
	}
	fmt.Printf("PostgreSQL, %d rows per world; RSS double-counts shared memory, PSS shares it out, and both miss\n"+
		"shared memory that only exited connections touched; memory counts each page once, resident shared memory included\n\n", rows)
	table([]string{"worlds", "RSS: a server each", "RSS: binky", "RSS after a checkpoint: a server each", "RSS after a checkpoint: binky", "PSS: a server each", "PSS: binky", "memory: a server each", "memory: binky", "time: a server each", "time: binky", "clone per world", "clone + its migrate", "disk per world"}, rowsOut)
	if len(results) == 0 {
		return nil
	}
	last := results[len(results)-1]
	once := "memory counted once: n/a"
	if last.perMem > 0 && last.binkyMem > 0 {
		once = fmt.Sprintf("%.0f%% counted once (memory)", 100*float64(last.binkyMem)/float64(last.perMem))
	}
	fmt.Printf("\nat %d worlds binky needs %.1f%% of the RAM (RSS; %.1f%% once each server has checkpointed), %s and %.1f%% of the time of a server per world\n",
		last.n, 100*last.ramRatio, 100*last.ramCkRatio, once, 100*last.timeRatio)
	if len(results) >= 2 {
		prev := results[len(results)-2]
		// Signed: binky's RSS at more worlds can be a page below its RSS
		// at fewer (the shared server's, measured in another round).
		perWorld := func(a, b uint64, na, nb int) float64 {
			return (float64(a) - float64(b)) / float64(na-nb) / (1 << 20)
		}
		fmt.Printf("each world past %d adds %.1f MiB and %.2fs under binky, %.1f MiB and %.2fs as its own server\n",
			prev.n, perWorld(last.binkyRAM, prev.binkyRAM, last.n, prev.n), (last.binkyTime-prev.binkyTime).Seconds()/float64(last.n-prev.n),
			perWorld(last.perRAM, prev.perRAM, last.n, prev.n), (last.perTime-prev.perTime).Seconds()/float64(last.n-prev.n))
	}
	return benchPlainWorlds(b, dir, schema, pgctl)
}

// result is one point of the worlds sweep: both sides, measured together.
type result struct {
	n                    int
	perRAM, binkyRAM     uint64
	perRAMCk, binkyRAMCk uint64 // RSS again, after a CHECKPOINT on every server
	perPSS, binkyPSS     uint64
	perMem, binkyMem     uint64 // footprint; 0 when it cannot be read
	perTime, binkyTime   time.Duration
	clone, cloneMig      time.Duration
	binkyEach, perEach   []time.Duration // each world's up, in order
	disk                 int64
	timeRatio, ramRatio  float64 // binky's over a server each's
	ramCkRatio           float64
}

// split says where a round's time went on each side: the first world
// (binky's starts the shared server and builds the template) and the
// median of the later ones, binky first.
func (r result) split() string {
	part := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "-"
		}
		if len(ds) == 1 {
			return fmt.Sprintf("%.2fs", ds[0].Seconds())
		}
		later := append([]time.Duration(nil), ds[1:]...)
		sort.Slice(later, func(i, j int) bool { return later[i] < later[j] })
		return fmt.Sprintf("%.2fs first, then %.0f ms each", ds[0].Seconds(), float64(later[len(later)/2])/float64(time.Millisecond))
	}
	return "binky " + part(r.binkyEach) + "; a server each " + part(r.perEach)
}

// medianResult is the median of each figure over rounds of one point (the
// ratios are the medians of each round's, not ratios of medians).
func medianResult(rs []result) result {
	if len(rs) == 1 {
		r := rs[0]
		r.timeRatio, r.ramRatio = r.binkyTime.Seconds()/r.perTime.Seconds(), float64(r.binkyRAM)/float64(r.perRAM)
		r.ramCkRatio = float64(r.binkyRAMCk) / float64(r.perRAMCk)
		return r
	}
	mid := func(f func(r result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		if len(v)%2 == 0 {
			return (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		return v[len(v)/2]
	}
	u := func(f func(r result) uint64) uint64 {
		return uint64(mid(func(r result) float64 { return float64(f(r)) }))
	}
	d := func(f func(r result) time.Duration) time.Duration {
		return time.Duration(mid(func(r result) float64 { return float64(f(r)) }))
	}
	return result{n: rs[0].n,
		perRAM: u(func(r result) uint64 { return r.perRAM }), binkyRAM: u(func(r result) uint64 { return r.binkyRAM }),
		perRAMCk: u(func(r result) uint64 { return r.perRAMCk }), binkyRAMCk: u(func(r result) uint64 { return r.binkyRAMCk }),
		perPSS: u(func(r result) uint64 { return r.perPSS }), binkyPSS: u(func(r result) uint64 { return r.binkyPSS }),
		perMem: u(func(r result) uint64 { return r.perMem }), binkyMem: u(func(r result) uint64 { return r.binkyMem }),
		perTime: d(func(r result) time.Duration { return r.perTime }), binkyTime: d(func(r result) time.Duration { return r.binkyTime }),
		clone: d(func(r result) time.Duration { return r.clone }), cloneMig: d(func(r result) time.Duration { return r.cloneMig }),
		disk:       int64(mid(func(r result) float64 { return float64(r.disk) })),
		timeRatio:  mid(func(r result) float64 { return r.binkyTime.Seconds() / r.perTime.Seconds() }),
		ramRatio:   mid(func(r result) float64 { return float64(r.binkyRAM) / float64(r.perRAM) }),
		ramCkRatio: mid(func(r result) float64 { return float64(r.binkyRAMCk) / float64(r.perRAMCk) }),
	}
}

func mibOf(v uint64) string { return fmt.Sprintf("%.0f MiB", float64(v)/(1<<20)) }

// lastDelete is when the bench last deleted files (removeAll).
var lastDelete time.Time

// removeAll deletes path and notes when.
func removeAll(path string) {
	os.RemoveAll(path)
	lastDelete = time.Now()
}

// settle returns once the disk is quiet for a timed side: 36 s after the
// bench last deleted files, everything written back (sync), then no task
// stalled on I/O for half a second, as the kernel's pressure stall counter
// tells (up to 20 s; 2 s where there is none). The wait after deleting:
// ext4 without a journal (this VM's disk) skips inodes freed in the last
// 30 s (35 while their table block is dirty) when it makes a file, reading
// each one's table block, so a side that creates thousands of files (an
// initdb, a CREATE DATABASE) right after the other side's clusters were
// deleted spent a tenth of its CPU in that scan (perf: recently_deleted).
func settle() {
	if wait := time.Until(lastDelete.Add(36 * time.Second)); wait > 0 {
		time.Sleep(wait)
	}
	syscall.Sync()
	stalled := func() (uint64, bool) {
		b, err := os.ReadFile("/proc/pressure/io")
		if err != nil {
			return 0, false
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "some ") {
				if i := strings.Index(line, "total="); i >= 0 {
					v, err := strconv.ParseUint(strings.TrimSpace(line[i+len("total="):]), 10, 64)
					return v, err == nil
				}
			}
		}
		return 0, false
	}
	last, ok := stalled()
	if !ok {
		time.Sleep(2 * time.Second)
		return
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		now, _ := stalled()
		if now-last < 5000 { // under 1% of the half second (µs)
			return
		}
		last = now
	}
}

func findPG(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(m) > 0 {
		return m[len(m)-1]
	}
	return ""
}

// pgUser is who runs the servers: us, or postgres when we are root.
func pgUser() (*syscall.Credential, error) {
	if os.Getuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs a postgres user to run PostgreSQL")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func chown(p string, cred *syscall.Credential) {
	if cred != nil {
		os.Chown(p, int(cred.Uid), int(cred.Gid))
	}
}

func runAs(cred *syscall.Credential, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: cred}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return nil
}

// clusterMemory sums RSS and PSS of a cluster's postmaster and children.
func clusterMemory(data string) (rss, pss uint64) {
	for _, pid := range clusterPIDs(data) {
		r, p := memOf(pid)
		rss += r
		pss += p
	}
	return rss, pss
}

// clusterFootprint is the cluster's memory counted once (footprint).
func clusterFootprint(data string) (uint64, bool) {
	return footprint(clusterPIDs(data))
}

// clusterPIDs are a cluster's postmaster, first, and its children.
func clusterPIDs(data string) []int {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return nil
	}
	master, _ := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	pids := []int{master}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != master && parent(pid) == master {
			pids = append(pids, pid)
		}
	}
	return pids
}

func parent(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

func memOf(pid int) (rss, pss uint64) {
	m := smapsRollup(pid)
	return m["Rss:"], m["Pss:"]
}

// smapsRollup is /proc/<pid>/smaps_rollup's fields, in bytes (empty when
// the process is gone).
func smapsRollup(pid int) map[string]uint64 {
	m := map[string]uint64{}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return m
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 {
			v, _ := strconv.ParseUint(f[1], 10, 64)
			m[f[0]] = v * 1024
		}
	}
	return m
}

var tookRE = regexp.MustCompile(`"msg":"slice cloned".*"took_ms":(\d+),"clone_ms":(\d+)`)

// cloneTimes are the median clone times the daemon logged: the copy, and
// the copy with the migrate that follows it (none with BENCH_CLONE_MIGRATE=changed).
func cloneTimes(log string) (copied, withMigrate time.Duration) {
	b, _ := os.ReadFile(log)
	var cs, ts []time.Duration
	for _, m := range tookRE.FindAllStringSubmatch(string(b), -1) {
		took, _ := strconv.Atoi(m[1])
		clone, _ := strconv.Atoi(m[2])
		ts = append(ts, time.Duration(took)*time.Millisecond)
		cs = append(cs, time.Duration(clone)*time.Millisecond)
	}
	return summarise(cs).p50, summarise(ts).p50
}

// worldDisk is the size of one world's database on the shared server.
func worldDisk(psql, home string) int64 {
	out, err := adminPSQL(psql, home, "SELECT pg_database_size('bench_w0')")
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseInt(out, 10, 64)
	return v
}

// adminPSQL runs sql as the admin of the home's shared server and returns
// its unaligned output.
func adminPSQL(psql, home, sql string) (string, error) {
	pw, _ := os.ReadFile(filepath.Join(home, "servers", "postgres", "admin.password"))
	port, _ := os.ReadFile(filepath.Join(home, "servers", "postgres", "port"))
	cmd := exec.Command(psql, "-h", "127.0.0.1", "-p", strings.TrimSpace(string(port)), "-U", "binky", "-d", "postgres", "-At", "-c", sql)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+strings.TrimSpace(string(pw)))
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// benchPlainWorlds times 8 ups of plain worlds (no clone_from: each
// world's own migrate and seed, 1,000 rows) on binky's own server, in a
// fresh home: the first makes its database from template1, and the blank
// template is built once it is up; later ones take the blank's spare
// (daemon/blank.go). binky alone: the point is what an up of the default
// config waits for, not a ratio.
func benchPlainWorlds(b *bench, dir, schema, pgctl string) error {
	home, repo := filepath.Join(dir, "binky-plain"), filepath.Join(dir, "repo-plain")
	seed := "INSERT INTO items SELECT i, 'item ' || i, i * 0.01 FROM generate_series(1, 1000) i;"
	run, err := binkyRepo(home, repo, fmt.Sprintf(`[project]
name = "plain"
[services.db]
adapter = "postgres"
migrate = "psql \"$DB_URL\" -q -v ON_ERROR_STOP=1 -c \"%s\""
seed = "psql \"$DB_URL\" -q -v ON_ERROR_STOP=1 -c \"%s\""
`, schema, seed), nil)
	if err != nil {
		removeAll(repo)
		removeAll(home)
		return err
	}
	gb := filepath.Join(b.bin, "git-binky")
	defer func() {
		run(repo, gb, "daemon", "stop")
		stopBinkyServers(home, pgctl)
		for i := 0; i < 8; i++ {
			removeAll(filepath.Join(dir, fmt.Sprintf("p%d", i)))
		}
		removeAll(repo)
		removeAll(home)
	}()
	settle()
	var each []time.Duration
	for i := 0; i < 8; i++ {
		began := time.Now()
		if _, err := run(repo, gb, "up", fmt.Sprintf("p%d", i)); err != nil {
			return err
		}
		each = append(each, time.Since(began))
		if i == 0 {
			// As a person's next up would: the blank's build (begun
			// once the first was up) done.
			time.Sleep(2 * time.Second)
		}
	}
	later := append([]time.Duration(nil), each[1:]...)
	sort.Slice(later, func(i, j int) bool { return later[i] < later[j] })
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
	fmt.Printf("\nplain worlds (no clone_from, 1,000 rows each seeded by its own up), binky's own server: first up %s, "+
		"each later one %s median (%s–%s), its database the blank template's spare\n", ms(each[0]), ms(later[len(later)/2]), ms(later[0]), ms(later[len(later)-1]))
	return nil
}
