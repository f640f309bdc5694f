package compose

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-binky/git-binky/world"
)

func TestMalformedComposeGivesLineAndColumn(t *testing.T) {
	_, err := Convert(context.Background(), filepath.Join("testdata", "malformed", "docker-compose.yml"))
	if err == nil || !strings.Contains(err.Error(), "docker-compose.yml:4:") {
		t.Fatalf("err = %v, want file:line:column", err)
	}
}

// A .env or an env_file that is a link to a device, or a FIFO, is an error
// naming it, not a read that never ends: a repository may commit either
// (init ran out of memory on /dev/zero and hung on a FIFO past Ctrl-C).
func TestAnEnvFileThatIsNoRegularFileIsRefusedNotRead(t *testing.T) {
	for _, tc := range []struct{ name, link string }{{"dotenv", ".env"}, {"env_file", "app.env"}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			compose := "services:\n  web:\n    image: nginx\n    env_file: [app.env]\n"
			if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), []byte(compose), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.link != "app.env" {
				os.WriteFile(filepath.Join(dir, "app.env"), []byte("A=1\n"), 0o644)
			}
			if err := os.Symlink("/dev/zero", filepath.Join(dir, tc.link)); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := Convert(context.Background(), filepath.Join(dir, "compose.yaml"))
				done <- err
			}()
			select {
			case err := <-done:
				if tc.link == ".env" && (err == nil || !strings.Contains(err.Error(), ".env")) {
					t.Errorf("a .env linked to /dev/zero: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("init still reading a .env linked to /dev/zero after 20s")
			}
		})
	}
}

// More ports than a world may have is binky's limit, said plainly, not
// "init wrote a binky.toml that does not load; please report it".
func TestAProjectOverThePortLimitIsSaidPlainly(t *testing.T) {
	var b strings.Builder
	b.WriteString("services:\n")
	for i := 0; i < 130; i++ {
		fmt.Fprintf(&b, "  s%d:\n    image: nginx\n    ports: [\"%d:80\"]\n", i, 10000+i)
	}
	_, err := project(t, map[string]string{"compose.yaml": b.String()})
	if err == nil || !strings.Contains(err.Error(), "130 ports") || strings.Contains(err.Error(), "report") {
		t.Errorf("130 ports: %v", err)
	}
}

// A binky.toml larger than binky reads is binky's limit, said plainly:
// init must never write a file `git binky check` refuses (2,000 services
// gave 345 KB, over world.MaxConfigSize).
func TestAProjectOverTheConfigSizeLimitIsSaidPlainly(t *testing.T) {
	var b strings.Builder
	b.WriteString("services:\n")
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, "  s%d:\n    image: nginx\n", i)
	}
	_, err := project(t, map[string]string{"compose.yaml": b.String()})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("at most %d KiB", world.MaxConfigSize>>10)) || strings.Contains(err.Error(), "report") {
		t.Errorf("2000 services: %v", err)
	}
}
