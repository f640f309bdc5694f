//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// benchMySQL is the MariaDB side of the worlds table: N worlds of 200,000
// rows each, as a mariadbd per world (install the data folder, start,
// load, per world) against binky (one shared MariaDB, a golden template
// loaded once, a server-side clone per world, through `git binky up`).
// Both sides run mariadbd with the flags binky's managed server uses.
func benchMySQL(b *bench) error {
	server, install, client := findBin("mariadbd"), findBin("mariadb-install-db"), findBin("mariadb")
	if server == "" || install == "" || client == "" {
		fmt.Println("skipped: MariaDB server binaries not found (apt-get install mariadb-server)")
		return nil
	}
	cred, err := mysqlUser()
	if err != nil {
		return err
	}
	rows := 200000
	if v, err := strconv.Atoi(os.Getenv("BENCH_ROWS")); err == nil && v > 0 {
		rows = v
	}
	sweep := []int{1, 8}
	dir := filepath.Join(b.tmp, "mysql")
	os.MkdirAll(dir, 0o711)
	os.Chmod(b.tmp, 0o711)
	load := fmt.Sprintf("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(64), price DECIMAL(12,2));\n"+
		"INSERT INTO items SELECT seq, CONCAT('item ', seq), seq * 0.01 FROM seq_1_to_%d;\n", rows)
	loadFile := filepath.Join(dir, "load.sql")
	if err := os.WriteFile(loadFile, []byte(load), 0o644); err != nil {
		return err
	}
	flags := []string{"--bind-address=127.0.0.1", "--skip-name-resolve", "--max-connections=500",
		"--character-set-server=utf8mb4", "--collation-server=utf8mb4_unicode_ci", "--innodb-flush-log-at-trx-commit=2"}

	type result struct {
		n                  int
		perRAM, binkyRAM   uint64
		perPSS, binkyPSS   uint64
		perTime, binkyTime time.Duration
		clone              time.Duration
		disk               int64
	}
	var results []result
	for _, n := range sweep {
		r := result{n: n}
		// A server per world. Each side starts on a quiet disk (settle);
		// files are deleted only once both sides are measured.
		settle()
		start := time.Now()
		var datas []string
		for i := 0; i < n; i++ {
			data := filepath.Join(dir, fmt.Sprintf("per-%d-%d", n, i))
			if err := os.MkdirAll(data, 0o700); err != nil {
				return err
			}
			chown(data, cred)
			datas = append(datas, data)
			if err := runAs(cred, install, "--no-defaults", "--datadir="+data, "--auth-root-authentication-method=normal", "--skip-test-db"); err != nil {
				return err
			}
			sock := filepath.Join(data, "mysql.sock")
			args := append([]string{"--no-defaults", "--datadir=" + data, "--socket=" + sock, "--pid-file=" + filepath.Join(data, "mysql.pid"),
				"--port=" + strconv.Itoa(freePort()), "--log-error=" + filepath.Join(data, "error.log")}, flags...)
			cmd := exec.Command(server, args...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: cred}
			if err := cmd.Start(); err != nil {
				return err
			}
			go cmd.Wait()
			if err := waitFile(sock, 60*time.Second); err != nil {
				return fmt.Errorf("mariadbd in %s: %w", data, err)
			}
			// root@localhost has no password on this throwaway server;
			// the socket is the way in.
			if err := sqlFile(client, loadFile, "-S", sock, "-u", "root", "--init-command=CREATE DATABASE IF NOT EXISTS bench; USE bench"); err != nil {
				return err
			}
		}
		r.perTime = time.Since(start)
		for _, d := range datas {
			rss, pss := mysqlMemory(d)
			r.perRAM += rss
			r.perPSS += pss
		}
		for _, d := range datas {
			stopMySQL(d)
		}

		// binky: a fresh machine state, one shared server, golden + clones.
		home := filepath.Join(dir, fmt.Sprintf("binky-%d", n))
		repo := filepath.Join(dir, fmt.Sprintf("repo-%d", n))
		// The schema is the migration (re-runnable: it runs again on every
		// clone) and the rows are the seed (run once, into the template).
		run, err := binkyRepo(home, repo, `[project]
name = "bench"
[services.db]
adapter = "mariadb"
migrate = "MYSQL_PWD=\"$DB_PASSWORD\" mariadb --no-defaults -h \"$DB_HOST\" -P \"$DB_PORT\" -u \"$DB_USER\" \"$DB_NAME\" < schema.sql"
seed = "MYSQL_PWD=\"$DB_PASSWORD\" mariadb --no-defaults -h \"$DB_HOST\" -P \"$DB_PORT\" -u \"$DB_USER\" \"$DB_NAME\" < seed.sql"
clone_from = "golden"
`, map[string]string{
			"schema.sql": strings.Replace(strings.SplitAfter(load, ";\n")[0], "CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1),
			"seed.sql":   strings.SplitAfter(load, ";\n")[1],
		})
		if err != nil {
			return err
		}
		gb := filepath.Join(b.bin, "git-binky")
		settle()
		start = time.Now()
		var upErr error
		for i := 0; i < n && upErr == nil; i++ {
			_, upErr = run(repo, gb, "up", fmt.Sprintf("w%d", i))
		}
		r.binkyTime = time.Since(start)
		data := filepath.Join(home, "servers", "mysql", "data")
		if target, err := os.Readlink(data); err == nil {
			data = target
		}
		r.binkyRAM, r.binkyPSS = mysqlMemory(data)
		r.clone, _ = cloneTimes(filepath.Join(home, "daemon.log"))
		r.disk = mysqlDisk(client, home)
		for i := 0; i < n; i++ {
			run(repo, gb, "remove", fmt.Sprintf("w%d", i), "--force")
		}
		run(repo, gb, "daemon", "stop")
		stopMySQL(data)
		if target, err := os.Readlink(filepath.Join(home, "servers", "mysql", "data")); err == nil {
			removeAll(filepath.Dir(filepath.Dir(target)))
		}
		for _, d := range datas {
			removeAll(d)
		}
		if upErr != nil {
			return upErr
		}
		results = append(results, r)
	}
	mib := func(v uint64) string { return fmt.Sprintf("%.0f MiB", float64(v)/(1<<20)) }
	sec := func(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }
	var rowsOut [][]string
	for _, r := range results {
		rowsOut = append(rowsOut, []string{fmt.Sprint(r.n), mib(r.perRAM), mib(r.binkyRAM), mib(r.perPSS), mib(r.binkyPSS),
			sec(r.perTime), sec(r.binkyTime), fmt.Sprintf("%.0f ms", float64(r.clone)/float64(time.Millisecond)), fmt.Sprintf("%.1f MiB", float64(r.disk)/(1<<20))})
	}
	fmt.Printf("MariaDB, %d rows per world; RSS double-counts shared memory, PSS shares it out\n\n", rows)
	table([]string{"worlds", "RSS: a server each", "RSS: binky", "PSS: a server each", "PSS: binky", "time: a server each", "time: binky", "clone per world", "disk per world"}, rowsOut)
	if len(results) >= 2 {
		last := results[len(results)-1]
		fmt.Printf("\nat %d worlds binky needs %.2f× the RAM (RSS), %.2f× (PSS) and %.2f× the time of a server per world (goal: RAM ≤ 0.25×, time ≤ 0.33×)\n",
			last.n, float64(last.binkyRAM)/float64(last.perRAM), float64(last.binkyPSS)/float64(last.perPSS), last.binkyTime.Seconds()/last.perTime.Seconds())
	}
	return nil
}

func findBin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range []string{"/usr/sbin", "/usr/local/sbin"} {
		if fi, err := os.Stat(filepath.Join(d, name)); err == nil && fi.Mode()&0o111 != 0 {
			return filepath.Join(d, name)
		}
	}
	return ""
}

// mysqlUser is who runs the servers: us, or mysql when we are root.
func mysqlUser() (*syscall.Credential, error) {
	if os.Getuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("mysql")
	if err != nil {
		return nil, fmt.Errorf("running as root needs a mysql user to run MariaDB (the mariadb-server package makes one)")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func waitFile(p string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(p); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s did not appear in %s", p, limit)
}

// sqlFile runs a SQL file through the mariadb client.
func sqlFile(client, file string, args ...string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command(client, append([]string{"--no-defaults"}, args...)...)
	cmd.Stdin = f
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("mariadb %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func mysqlPID(data string) int {
	b, err := os.ReadFile(filepath.Join(data, "mysql.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// mysqlMemory is the RSS and PSS of the mariadbd serving data: one
// process, its connections are threads.
func mysqlMemory(data string) (rss, pss uint64) {
	if pid := mysqlPID(data); pid > 0 {
		return memOf(pid)
	}
	return 0, 0
}

// stopMySQL ends the mariadbd serving data and waits for it to go.
func stopMySQL(data string) {
	pid := mysqlPID(data)
	if pid <= 0 {
		return
	}
	syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 600 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(50 * time.Millisecond)
	}
}

// mysqlDisk is the size of one world's tables on the shared server, as
// InnoDB reports it.
func mysqlDisk(client, home string) int64 {
	pw, _ := os.ReadFile(filepath.Join(home, "servers", "mysql", "admin.password"))
	port, _ := os.ReadFile(filepath.Join(home, "servers", "mysql", "port"))
	args := []string{"--no-defaults", "-h", "127.0.0.1", "-P", strings.TrimSpace(string(port)), "-u", "binky", "-N", "-B", "-e"}
	mysql := func(q string) ([]byte, error) {
		cmd := exec.Command(client, append(args, q)...)
		cmd.Env = append(os.Environ(), "MYSQL_PWD="+strings.TrimSpace(string(pw)))
		return cmd.Output()
	}
	// InnoDB's sizes in information_schema are statistics, updated a while
	// after a load: brought up to date first.
	mysql("ANALYZE TABLE bench_w0.items")
	out, err := mysql("SELECT COALESCE(SUM(DATA_LENGTH + INDEX_LENGTH), 0) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'bench_w0'")
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	return v
}
