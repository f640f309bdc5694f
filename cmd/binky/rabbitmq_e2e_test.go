package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/git-binky/git-binky/adapters"
)

// managedRabbitMQ is what the managed RabbitMQ of a test home keeps: its
// admin password and management port, for checks from outside binky; pid
// and epmd are read once it runs, for stopping it after the test's temp
// folder is gone.
type managedRabbitMQ struct {
	dir  string
	pid  int
	epmd string
	node string // as root the node's files are outside BINKY_HOME
}

func (m managedRabbitMQ) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(m.dir, name))
	return strings.TrimSpace(string(b))
}

// names lists the vhosts or users (what = "vhosts", "users") the admin sees.
func (m managedRabbitMQ) names(t *testing.T, what string) map[string]bool {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+m.read("port.management")+"/api/"+what, nil)
	req.SetBasicAuth("binky", m.read("admin.password"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatalf("%s: %s: %v", what, resp.Status, err)
	}
	out := map[string]bool{}
	for _, x := range list {
		out[x.Name] = true
	}
	return out
}

// stop ends the node (its start script stops it cleanly on SIGTERM) and
// then its epmd, which refuses to die while the node is registered.
func (m *managedRabbitMQ) stop() {
	if m.pid <= 1 {
		return
	}
	signalPID(m.pid, syscall.SIGTERM)
	for i := 0; i < 300 && m.epmd != ""; i++ {
		out, _ := exec.Command("epmd", "-port", m.epmd, "-kill").CombinedOutput()
		if !strings.Contains(string(out), "living nodes") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if m.node != "" {
		os.RemoveAll(m.node)
		// The home's folder under /var/lib/git-binky goes too once no other
		// server's files are there: only its owner file is left.
		folder := filepath.Dir(m.node)
		if entries, err := os.ReadDir(folder); err == nil && len(entries) == 1 && entries[0].Name() == "home" {
			os.RemoveAll(folder)
		}
	}
}

func TestManagedRabbitMQGivesEachWorldItsOwnVhostAndRemoveDropsIt(t *testing.T) {
	if adapters.FindServerBinary("rabbitmq-server") == "" {
		t.Skip("no rabbitmq-server (make test installs it; Debian: apt-get install rabbitmq-server)")
	}
	var mq managedRabbitMQ
	t.Cleanup(func() { mq.stop() }) // registered first: runs after the daemon stopped
	f := newFixture(t, `[project]
name = "mq"
[services.bus]
adapter = "rabbitmq"
[services.api]
cmd = "testsvc"
url = "api"
depends_on = ["bus"]
env = { AMQP_URL = "${bus.url}" }
`)
	mq.dir = filepath.Join(f.home, "servers", "rabbitmq")
	start := time.Now()
	if _, stderr, err := f.binky(f.repo, "up"); err != nil {
		log, _ := os.ReadFile(filepath.Join(mq.dir, "rabbitmq.log"))
		t.Fatalf("up with the managed rabbitmq: %v\n%s\nrabbitmq log:\n%s", err, stderr, log)
	}
	t.Logf("first up, starting the shared rabbitmq: %s", time.Since(start).Round(time.Millisecond))
	mq.pid, _ = strconv.Atoi(mq.read("rabbitmq.pid"))
	mq.epmd = mq.read("port.epmd")
	mq.node, _ = os.Readlink(filepath.Join(mq.dir, "node"))
	f.mustBinky(f.repo, "up", "feat")
	main, feat := f.envOf("acme"), f.envOf("feat")
	for _, env := range []map[string]string{main, feat} {
		if env["BUS_URL"] == "" || env["BUS_VHOST"] == "" || env["BUS_USER"] != env["BUS_VHOST"] {
			t.Fatalf("env %v", env)
		}
		if strings.Contains(env["BUS_URL"], mq.read("admin.password")) {
			t.Fatal("a world's url carries the admin's password")
		}
	}
	if main["BUS_VHOST"] == feat["BUS_VHOST"] {
		t.Fatalf("both worlds have vhost %s", main["BUS_VHOST"])
	}

	// Each world works in its vhost and cannot open the other's.
	conn, err := amqp.Dial(feat["BUS_URL"])
	if err != nil {
		t.Fatalf("feat cannot open its vhost: %v", err)
	}
	ch, _ := conn.Channel()
	if _, err := ch.QueueDeclare("jobs", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	ch.PublishWithContext(context.Background(), "", "jobs", false, false, amqp.Publishing{Body: []byte("feat's")})
	conn.Close()
	stolen := strings.TrimSuffix(main["BUS_URL"], main["BUS_VHOST"]) + feat["BUS_VHOST"]
	if c, err := amqp.Dial(stolen); err == nil {
		c.Close()
		t.Fatal("main's user opened feat's vhost")
	} else if !strings.Contains(err.Error(), "access to vhost") {
		t.Errorf("main's user opening feat's vhost: %v, want access refused", err)
	}
	if vhosts := mq.names(t, "vhosts"); !vhosts[main["BUS_VHOST"]] || !vhosts[feat["BUS_VHOST"]] {
		t.Fatalf("vhosts %v", vhosts)
	}
	if users := mq.names(t, "users"); users["guest"] || !users["binky"] {
		t.Errorf("users %v: want binky's admin and no guest", users)
	}

	// The node outlives the daemon, and the next daemon uses it again.
	f.mustBinky(f.repo, "daemon", "stop")
	if c, err := amqp.Dial(main["BUS_URL"]); err != nil {
		t.Fatalf("the managed rabbitmq stopped with the daemon: %v", err)
	} else {
		c.Close()
	}
	f.mustBinky(f.repo, "up")
	if again := f.envOf("acme"); again["BUS_URL"] != main["BUS_URL"] {
		t.Error("main's address changed across a daemon restart")
	}

	// remove drops feat's vhost (its queue with it) and user, not main's.
	f.mustBinky(f.repo, "remove", "feat", "--force")
	vhosts, users := mq.names(t, "vhosts"), mq.names(t, "users")
	if vhosts[feat["BUS_VHOST"]] || users[feat["BUS_USER"]] {
		t.Errorf("remove left feat's vhost or user: %v %v", vhosts, users)
	}
	if !vhosts[main["BUS_VHOST"]] || !users[main["BUS_USER"]] {
		t.Errorf("remove of feat dropped main's: %v %v", vhosts, users)
	}
	if c, err := amqp.Dial(main["BUS_URL"]); err != nil {
		t.Errorf("main lost its vhost: %v", err)
	} else {
		c.Close()
	}
	if fi, err := os.Stat(filepath.Join(mq.dir, "admin.password")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("admin password file: %v %v", fi, err)
	}

	// Stopped, the node leaves nothing running: its epmd (a daemon of its
	// own, which outlives the node) goes too. (An attack found it left.)
	f.mustBinky(f.repo, "servers", "stop", "rabbitmq")
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+mq.epmd, time.Second); err == nil {
		c.Close()
		t.Errorf("after servers stop rabbitmq, its epmd still listens on %s", mq.epmd)
	}
}
