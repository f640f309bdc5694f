package managed

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/world"
)

// rabbitmqStartTimeout bounds a cold start: the node boots, then the
// management plugin; a few seconds usually, more on a loaded machine.
const rabbitmqStartTimeout = 120 * time.Second

// startRabbitMQ runs the shared RabbitMQ: one node of its own (its own node
// name, Erlang cookie, data and log folders), every listener on 127.0.0.1 —
// AMQP, the management API, Erlang distribution, and an epmd of its own —
// on ports from binky's range, the management plugin enabled, and an admin
// user "binky" with a generated password as the only user (RabbitMQ makes
// its default user from the config instead of "guest"). As root it runs as
// the "rabbitmq" user that the Debian package creates.
func startRabbitMQ(ctx context.Context, m *Servers, dir string) (string, error) {
	server := rabbitmqServerScript()
	if server == "" {
		return "", missing("rabbitmq-server", "rabbitmq-server")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	pw, err := secret(dir)
	if err != nil {
		return "", err
	}
	ports := map[string]int{}
	for _, role := range []string{"", "management", "dist", "epmd"} {
		p, err := rabbitmqPort(m, dir, role)
		if err != nil {
			return "", err
		}
		ports[role] = p
	}
	admin := (&url.URL{Scheme: "amqp", User: url.UserPassword("binky", pw), Host: "127.0.0.1:" + strconv.Itoa(ports[""]),
		RawQuery: "management=" + strconv.Itoa(ports["management"])}).String()
	mgmt := "http://127.0.0.1:" + strconv.Itoa(ports["management"]) + "/api/overview"
	ours := func() bool { return m.serves("rabbitmq", ports[""]) && m.serves("rabbitmq", ports["management"]) }
	if ours() {
		return admin, waitRabbitMQ(ctx, mgmt, pw, ours, nil, filepath.Join(dir, "rabbitmq.log"))
	}
	for _, role := range []string{"", "management"} {
		if _, err := m.already("rabbitmq", ports[role]); err != nil {
			return "", err
		}
	}
	cred, err := rabbitmqUser()
	if err != nil {
		return "", err
	}
	// The node's files live where its user can reach them: under
	// BINKY_HOME normally; as root, whose home the rabbitmq user cannot
	// enter, under /var/lib/git-binky.
	sum := sha256.Sum256([]byte(m.Home.Dir))
	id := hex.EncodeToString(sum[:6])
	node := dir
	// servers/rabbitmq/node: where the node's data and logs are.
	link := filepath.Join(dir, "node")
	if cred != nil {
		if node, err = m.rootDir("rabbitmq", link, ""); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(node, 0o700); err != nil {
		return "", err
	}
	if node != dir {
		if err := linkTo(link, node); err != nil {
			return "", err
		}
	}
	cookie := filepath.Join(node, ".erlang.cookie")
	if _, err := os.Stat(cookie); err != nil {
		buf := make([]byte, 20)
		if _, err := rand.Read(buf); err != nil {
			return "", err
		}
		if err := world.WriteFileAtomic(cookie, []byte(strings.ToUpper(hex.EncodeToString(buf))), 0o600); err != nil {
			return "", err
		}
	}
	conf := fmt.Sprintf(`# Written by git-binky: the shared RabbitMQ of this machine's worlds.
listeners.tcp.default = 127.0.0.1:%d
management.tcp.ip = 127.0.0.1
management.tcp.port = %d
default_vhost = /
default_user = binky
default_pass = %s
default_user_tags.administrator = true
default_permissions.configure = .*
default_permissions.read = .*
default_permissions.write = .*
log.console = false
`, ports[""], ports["management"], pw)
	files := map[string]string{
		"rabbitmq.conf":     conf,
		"enabled_plugins":   "[rabbitmq_management].\n",
		"rabbitmq-env.conf": "# Written by git-binky: the environment is set by binky, not /etc/rabbitmq.\n",
	}
	for name, body := range files {
		if err := world.WriteFileAtomic(filepath.Join(node, name), []byte(body), 0o600); err != nil {
			return "", err
		}
	}
	logf := filepath.Join(dir, "rabbitmq.log")
	out, err := os.OpenFile(logf, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", err
	}
	defer out.Close()
	if err := chownTree(node, cred); err != nil {
		return "", err
	}
	cmd := exec.Command(server)
	cmd.Dir = node
	cmd.Env = []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG=C.UTF-8", "LC_ALL=C.UTF-8",
		"HOME=" + node, // the Erlang cookie is $HOME/.erlang.cookie
		"RABBITMQ_NODENAME=binky-" + id + "@localhost",
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT=" + strconv.Itoa(ports[""]),
		"RABBITMQ_DIST_PORT=" + strconv.Itoa(ports["dist"]),
		"ERL_EPMD_ADDRESS=127.0.0.1",
		"ERL_EPMD_PORT=" + strconv.Itoa(ports["epmd"]),
		"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-kernel inet_dist_use_interface {127,0,0,1}",
		"RABBITMQ_CONF_ENV_FILE=" + filepath.Join(node, "rabbitmq-env.conf"),
		"RABBITMQ_CONFIG_FILE=" + filepath.Join(node, "rabbitmq.conf"),
		"RABBITMQ_ADVANCED_CONFIG_FILE=" + filepath.Join(node, "advanced.config"),
		"RABBITMQ_ENABLED_PLUGINS_FILE=" + filepath.Join(node, "enabled_plugins"),
		"RABBITMQ_MNESIA_BASE=" + filepath.Join(node, "mnesia"),
		"RABBITMQ_LOG_BASE=" + filepath.Join(node, "log"),
		"RABBITMQ_PID_FILE=" + filepath.Join(node, "rabbitmq.pid"),
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own session: the node outlives the daemon and ignores the
	// terminal's signals.
	cmd.SysProcAttr = detached(cred)
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start the shared rabbitmq (%s): %w", server, err)
	}
	// The script stays as the node's parent and stops it cleanly on
	// SIGTERM: its pid is what to signal.
	if err := world.WriteFileAtomic(filepath.Join(dir, "rabbitmq.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o600); err != nil {
		return "", err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reaps it whenever it stops
	if err := waitRabbitMQ(ctx, mgmt, pw, ours, exited, logf); err != nil {
		return "", err
	}
	return admin, nil
}

// waitRabbitMQ waits until the management API answers the admin, the node
// exits, or the start timeout passes. The admin's password goes only to a
// node ours says is binky's.
func waitRabbitMQ(ctx context.Context, mgmt, pw string, ours func() bool, exited <-chan error, logf string) error {
	ctx, cancel := context.WithTimeout(ctx, rabbitmqStartTimeout)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, mgmt, nil)
		if err != nil {
			return err
		}
		req.SetBasicAuth("binky", pw)
		// Until the node listens (or while what listens is not binky's
		// node), nothing is sent: the next round asks again.
		if ours() {
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
				if resp.StatusCode == http.StatusUnauthorized {
					return fmt.Errorf("the shared rabbitmq refuses binky's admin password (log: %s): its data was made with another; remove the folder of its data to start afresh", logf)
				}
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("the shared rabbitmq exited while starting (%v); see %s and the node's log folder", err, logf)
		case <-ctx.Done():
			return fmt.Errorf("the shared rabbitmq's management API did not answer at %s within %s (log: %s)", strings.TrimSuffix(mgmt, "/api/overview"), rabbitmqStartTimeout, logf)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// rabbitmqServerScript finds the rabbitmq-server script. Debian's
// /usr/sbin/rabbitmq-server is a wrapper that switches to the rabbitmq
// user through su (dropping binky's environment) and writes its logs to
// /var/log/rabbitmq; the real script sits beside the wrapper.
func rabbitmqServerScript() string {
	p := adapters.FindServerBinary("rabbitmq-server")
	if p == "" {
		return ""
	}
	if real, err := filepath.EvalSymlinks(p); err == nil && filepath.Base(real) == "rabbitmq-script-wrapper" {
		if fi, err := os.Stat(filepath.Join(filepath.Dir(real), "rabbitmq-server")); err == nil && fi.Mode()&0o111 != 0 {
			return filepath.Join(filepath.Dir(real), "rabbitmq-server")
		}
	}
	return p
}

// rabbitmqUser is the account the node runs as: the caller, unless it is
// root and the "rabbitmq" user exists (the Debian package makes it).
func rabbitmqUser() (*account, error) {
	if os.Getuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("rabbitmq")
	if err != nil {
		return nil, nil // RabbitMQ itself runs as root; only Debian's wrapper refuses
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return newAccount(uid, gid), nil
}

// rabbitmqPort returns one of the node's ports, allocated once from
// binky's range: role "" is AMQP (the "port" file status reads), the others
// the management API, Erlang distribution and epmd.
func rabbitmqPort(m *Servers, dir, role string) (int, error) {
	if role == "" {
		return m.port("rabbitmq", dir)
	}
	file := filepath.Join(dir, "port."+role)
	if b, err := os.ReadFile(file); err == nil {
		if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return p, nil
		}
	}
	settings, err := m.Home.LoadSettings()
	if err != nil && !world.UsingLastGood(err) {
		return 0, err
	}
	p, err := m.Home.NewAllocator(settings).Server("rabbitmq-" + role)
	if err != nil {
		return 0, err
	}
	return p, world.WriteFileAtomic(file, []byte(strconv.Itoa(p)+"\n"), 0o600)
}
