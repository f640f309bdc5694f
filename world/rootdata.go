package world

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// RootDataDir is where a root-run binky keeps the files of the shared
// servers it runs as their own users (postgres, mysql, rabbitmq), whom
// root's home does not let in: a folder per home, named from the home's
// path and ID. Deleting a home leaves its folder there, and any server
// still running from it; RootOrphans finds them.
const RootDataDir = "/var/lib/git-binky"

// rootOwnerFile, in a home's folder under RootDataDir, names that home:
// its path, then its ID, a line each.
const rootOwnerFile = "home"

// WriteRootOwner records in folder (a home's folder under RootDataDir)
// which home it belongs to, unless it already says so.
func (h Home) WriteRootOwner(folder string) error {
	id, err := h.ID()
	if err != nil {
		return err
	}
	want := []byte(h.Dir + "\n" + id + "\n")
	path := filepath.Join(folder, rootOwnerFile)
	if b, err := os.ReadFile(path); err == nil && bytes.Equal(b, want) {
		return nil
	}
	return WriteFileAtomic(path, want, 0o600)
}

// RootOrphan is a home's folder under RootDataDir whose home is gone: its
// path no longer exists, or holds another home (deleted and made again).
type RootOrphan struct {
	Folder string
	// Home is the path of the home that made it.
	Home string
	// Kinds are the servers whose files it holds (postgres, mysql, ...).
	Kinds []string
	// Running are the processes still running from it (pid: command).
	Running []string
}

// RootOrphans lists the folders under root (RootDataDir) whose home is
// gone. A folder that does not say whose it is (an older binky made it)
// is not listed: nothing tells it from a live home's.
func RootOrphans(root string) ([]RootOrphan, error) {
	entries, err := os.ReadDir(root)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []RootOrphan
	for _, e := range entries {
		folder := filepath.Join(root, e.Name())
		b, err := os.ReadFile(filepath.Join(folder, rootOwnerFile))
		if err != nil || !e.IsDir() {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 2 {
			continue
		}
		home, id := lines[0], lines[1]
		if got, err := os.ReadFile(filepath.Join(home, "home-id")); err == nil && string(got) == id {
			continue // the home is alive
		} else if err != nil && !os.IsNotExist(err) {
			continue // unreadable: not known to be gone
		}
		o := RootOrphan{Folder: folder, Home: home, Running: runningFrom(folder)}
		kinds, _ := os.ReadDir(folder)
		for _, k := range kinds {
			if k.IsDir() {
				o.Kinds = append(o.Kinds, k.Name())
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// runningFrom lists the processes whose command line names a path inside
// folder (a postgres -D, a mariadbd --datadir), from /proc where there is
// one.
func runningFrom(folder string) []string {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []string
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte(folder+"/")) {
			continue
		}
		args := strings.Fields(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
		if len(args) == 0 {
			continue
		}
		out = append(out, filepath.Base(filepath.Dir(p))+": "+filepath.Base(args[0]))
	}
	sort.Strings(out)
	return out
}
