package managed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/git-binky/git-binky/adapters"
)

// startMySQL runs the shared MariaDB: mariadb-install-db once, an admin
// user "binky"@"127.0.0.1" with a generated password made in bootstrap mode
// before the server ever listens, then mariadbd on 127.0.0.1 with its
// socket in its own folder. As root it runs as the "mysql" user that the
// MariaDB packages create, with its files under /var/lib/git-binky.
func startMySQL(ctx context.Context, m *Servers, dir string) (string, error) {
	server := adapters.FindServerBinary("mariadbd")
	if server == "" {
		server = adapters.FindServerBinary("mysqld")
	}
	install := adapters.FindServerBinary("mariadb-install-db")
	if server == "" || install == "" {
		return "", missing("MariaDB server binaries (mariadbd, mariadb-install-db)", "mariadb-server")
	}
	cred, err := runAsUser("mysql", "MariaDB", "mariadb-server")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	pw, err := secret(dir)
	if err != nil {
		return "", err
	}
	port, err := m.port("mysql", dir)
	if err != nil {
		return "", err
	}
	admin := (&url.URL{Scheme: "mysql", User: url.UserPassword("binky", pw), Host: "127.0.0.1:" + strconv.Itoa(port), Path: "/"}).String()
	ours, err := m.already("mysql", port)
	if err != nil {
		return "", err
	}
	if ours {
		return admin, nil
	}
	// The server's files live where its user can reach them: under
	// BINKY_HOME normally; as root, whose home the mysql user cannot
	// enter, under /var/lib/git-binky (linked from servers/mysql/data).
	mydir := dir
	if cred != nil {
		link := filepath.Join(dir, "data")
		if mydir, err = m.rootDir("mysql", link, "data"); err != nil {
			return "", err
		}
		if err := linkTo(link, filepath.Join(mydir, "data")); err != nil {
			return "", err
		}
	}
	data, logf := filepath.Join(mydir, "data"), filepath.Join(mydir, "mysql.log")
	run := filepath.Join(mydir, "run")
	// A unix socket path is at most 107 bytes; a deep BINKY_HOME (a test's
	// temp dir) gets a short private folder instead.
	if len(filepath.Join(run, "mysql.sock")) > 100 {
		sum := sha256.Sum256([]byte(mydir))
		run = filepath.Join(os.TempDir(), "binky-mysql-"+hex.EncodeToString(sum[:6]))
	}
	if err := os.MkdirAll(run, 0o700); err != nil {
		return "", err
	}
	ready := filepath.Join(data, "binky-ready")
	if _, err := os.Stat(ready); err != nil {
		// Absent, or left half-made by a crash: made again from nothing.
		os.RemoveAll(data)
		if err := os.MkdirAll(data, 0o700); err != nil {
			return "", err
		}
		if err := chownTree(mydir, cred); err != nil {
			return "", err
		}
		if err := runOut(ctx, cred, nil, install, "--no-defaults", "--datadir="+data, "--auth-root-authentication-method=normal",
			"--skip-test-db"); err != nil {
			return "", fmt.Errorf("create the shared mariadb: %w", err)
		}
		host, _ := os.Hostname()
		// Bootstrap mode reads SQL on stdin, with no network: the admin
		// exists before anyone can connect. Root keeps only the socket, for
		// the machine's root (no password, no TCP).
		boot := fmt.Sprintf("FLUSH PRIVILEGES;\n"+
			"CREATE USER IF NOT EXISTS `binky`@`127.0.0.1`;\n"+
			"ALTER USER `binky`@`127.0.0.1` IDENTIFIED BY '%s';\n"+
			"GRANT ALL PRIVILEGES ON *.* TO `binky`@`127.0.0.1` WITH GRANT OPTION;\n"+
			"DROP USER IF EXISTS `root`@`127.0.0.1`, `root`@`::1`, `root`@`%s`, ''@`localhost`, ''@`%s`;\n"+
			"ALTER USER `root`@`localhost` IDENTIFIED VIA unix_socket;\n",
			pw, strings.ReplaceAll(host, "`", "``"), strings.ReplaceAll(host, "`", "``"))
		if !hexOnly(pw) {
			return "", errors.New("the shared mariadb's admin password is not hex: delete " + filepath.Join(dir, "admin.password"))
		}
		if err := runOut(ctx, cred, strings.NewReader(boot), server, "--no-defaults", "--datadir="+data, "--bootstrap",
			"--log-error="+logf); err != nil {
			return "", fmt.Errorf("create the shared mariadb's admin (log: %s): %w", logf, err)
		}
		if err := os.WriteFile(ready, []byte("binky\n"), 0o600); err != nil {
			return "", err
		}
	}
	if f, err := os.OpenFile(logf, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
		f.Close()
	}
	if err := chownTree(mydir, cred); err != nil {
		return "", err
	}
	if err := chownTree(run, cred); err != nil {
		return "", err
	}
	cmd := exec.Command(server, "--no-defaults", "--datadir="+data, "--socket="+filepath.Join(run, "mysql.sock"),
		"--pid-file="+filepath.Join(data, "mysql.pid"), "--port="+strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--skip-name-resolve", "--log-error="+logf, "--max-connections=500",
		"--character-set-server=utf8mb4", "--collation-server=utf8mb4_unicode_ci",
		// A developer's server: a crash may lose the last second of
		// commits, as the shared postgres's synchronous_commit=off does.
		"--innodb-flush-log-at-trx-commit=2",
		// No DATA/INDEX DIRECTORY: CREATE on its own database (every
		// world has it) would otherwise make files anywhere the server's
		// account may write, another home's server's data folder included.
		"--symbolic-links=0")
	cmd.Dir = "/"
	// Its own session: the server outlives the daemon and ignores the
	// terminal's signals.
	cmd.SysProcAttr = detached(cred)
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start the shared mariadb: %w", err)
	}
	if err := awaitStarted(ctx, cmd, "mariadb", logf, 50*time.Millisecond, func() bool { return m.serves("mysql", port) }); err != nil {
		return "", err
	}
	return admin, nil
}

func hexOnly(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return s != ""
}

// runAsUser is the account a server that refuses root runs as: the caller,
// unless it is root; then name, the user the server's package creates.
func runAsUser(name, what, pkg string) (*account, error) {
	if os.Getuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("binky runs as root and %s should not: create a %q user (the %s package does), or run binky as a normal user", what, name, pkg)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return newAccount(uid, gid), nil
}

// runOut runs a setup command to its end, stdin given, as cred.
func runOut(ctx context.Context, cred *account, stdin *strings.Reader, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = "/"
	cmd.SysProcAttr = detached(cred)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", filepath.Base(name), err, lastLines(string(out), 5))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
