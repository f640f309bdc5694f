package external

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/git-binky/git-binky/adapters/adapterstest"
)

// TestFilestorePassesTheConformanceSuite builds the example external
// adapter and runs the suite every adapter passes against it, through the
// subprocess protocol.
func TestFilestorePassesTheConformanceSuite(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "binky-adapter-filestore")
	build := exec.Command("go", "build", "-o", bin, "../../examples/adapters/filestore")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the filestore example: %v\n%s", err, out)
	}
	root := t.TempDir()
	t.Setenv("BINKY_FILESTORE_ROOT", root)
	e := &External{Name: "filestore", Path: bin}
	if c := e.Capabilities(); !c.List {
		t.Fatalf("capabilities %+v: filestore lists its slices", c)
	}
	adapterstest.RunServer(t, e, adapterstest.Server{
		// A folder someone made by hand under a slice's name.
		Foreign: func(ctx context.Context, slice string) error {
			if err := os.MkdirAll(filepath.Join(root, slice), 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(root, slice, "precious.txt"), []byte("theirs"), 0o644)
		},
		Intact: func(ctx context.Context, slice string) (bool, error) {
			b, err := os.ReadFile(filepath.Join(root, slice, "precious.txt"))
			if err != nil {
				return false, err
			}
			_, markErr := os.Stat(filepath.Join(root, slice, ".binky-world"))
			return string(b) == "theirs" && os.IsNotExist(markErr), nil
		},
	})
}
