package world

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// RootDataDir is where a root-run binky keeps the files of the shared
// servers it runs as their own users (postgres, mysql, rabbitmq), whom
// root's home does not let in: a folder per home, named from the home's
// path and ID (from the path alone, for an older binky's). Deleting a home
// leaves its folder there, and any server still running from it;
// RootOrphans finds them.
const RootDataDir = "/var/lib/git-binky"

// rootOwnerFile, in a home's folder under RootDataDir, names that home:
// its path, then its ID, a line each.
const rootOwnerFile = "home"

// WriteRootOwner records in folder (a home's folder under RootDataDir)
// which home it belongs to, unless it already says so. A home given by a
// relative path is not recorded: read from elsewhere, it would name
// another folder.
func (h Home) WriteRootOwner(folder string) error {
	if !filepath.IsAbs(h.Dir) {
		return nil
	}
	id, err := h.ID()
	if err != nil {
		return err
	}
	want := []byte(h.Dir + "\n" + strings.TrimSpace(id) + "\n")
	path := filepath.Join(folder, rootOwnerFile)
	if b, err := os.ReadFile(path); err == nil && bytes.Equal(b, want) {
		return nil
	}
	return WriteFileAtomic(path, want, 0o600)
}

// RootOrphan is a home's folder under RootDataDir whose home is not where
// it was: no home ID at its path (deleted, moved, or on a disk that is not
// mounted now), or another home's (deleted and made again).
type RootOrphan struct {
	Folder string
	// Home is the path of the home that made it.
	Home string
	// Kinds are the servers whose files it holds (postgres, mysql, ...).
	Kinds []string
	// Running are the processes still running from it (their command
	// line, working folder or environment names a path inside it), less
	// those whose parent is listed.
	Running []Process
}

// Process is a running process: its pid and program name.
type Process struct {
	PID  int
	Name string
}

// RootOrphans lists the folders under root (RootDataDir) whose home is not
// where it was. A folder that does not say whose it is (an older binky
// made it) is not listed: nothing tells it from a live home's.
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
		if !e.IsDir() || !isRootFolderName(e.Name()) {
			continue
		}
		folder := filepath.Join(root, e.Name())
		b, err := os.ReadFile(filepath.Join(folder, rootOwnerFile))
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 2 || !filepath.IsAbs(lines[0]) {
			continue
		}
		home, id := lines[0], lines[1]
		if got, err := readHomeID(home); err == nil && got == id {
			continue // the home is alive
		} else if err != nil && !os.IsNotExist(err) {
			continue // unreadable: not known to be gone
		}
		o := RootOrphan{Folder: folder, Home: home}
		kinds, _ := os.ReadDir(folder)
		for _, k := range kinds {
			if k.IsDir() {
				o.Kinds = append(o.Kinds, k.Name())
			}
		}
		out = append(out, o)
	}
	if len(out) > 0 {
		running := runningFrom(out)
		for i := range out {
			out[i].Running = running[out[i].Folder]
		}
	}
	return out, nil
}

// isRootFolderName reports whether name is one binky gives a home's
// folder: 12 hex digits.
func isRootFolderName(name string) bool {
	if len(name) != 12 {
		return false
	}
	for _, r := range name {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// readHomeID reads the ID of the home at dir without making one, and
// without trusting what is there now: as root, the path of a deleted home
// may be anyone's, so only a regular file is read, and only its start.
func readHomeID(dir string) (string, error) {
	path := filepath.Join(dir, homeIDFile)
	if fi, err := os.Lstat(path); err != nil {
		return "", err
	} else if !fi.Mode().IsRegular() {
		return "", os.ErrInvalid
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", os.ErrInvalid
	}
	b, err := io.ReadAll(io.LimitReader(f, 64))
	return strings.TrimSpace(string(b)), err
}

// runningFrom maps each orphan's folder to the processes that name a path
// inside it: an argument (or an --option=value's value), the working
// folder, or an environment variable's value. It reads /proc where there
// is one (Linux), and finds nothing elsewhere.
func runningFrom(orphans []RootOrphan) map[string][]Process {
	out := map[string][]Process{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		args := bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0})
		values := append([][]byte{}, args...)
		if cwd, err := os.Readlink(filepath.Join(p, "cwd")); err == nil {
			values = append(values, []byte(cwd))
		}
		if env, err := os.ReadFile(filepath.Join(p, "environ")); err == nil {
			values = append(values, bytes.Split(env, []byte{0})...)
		}
		for _, o := range orphans {
			if namesPathIn(values, o.Folder) {
				name := filepath.Base(string(args[0]))
				if comm, err := os.ReadFile(filepath.Join(p, "comm")); err == nil {
					name = strings.TrimSpace(string(comm))
				}
				out[o.Folder] = append(out[o.Folder], Process{PID: pid, Name: name})
			}
		}
	}
	// A server's own children (postgres's checkpointer, ...) go with it:
	// only the processes whose parent is not listed too are named.
	for folder, ps := range out {
		pids := map[int]bool{}
		for _, pr := range ps {
			pids[pr.PID] = true
		}
		var roots []Process
		for _, pr := range ps {
			if !pids[parentPID(pr.PID)] {
				roots = append(roots, pr)
			}
		}
		sort.Slice(roots, func(i, j int) bool { return roots[i].PID < roots[j].PID })
		out[folder] = roots
	}
	return out
}

// parentPID reads pid's parent from /proc/<pid>/stat, or 0.
func parentPID(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// namesPathIn reports whether any value, or the part of it after an "=",
// is folder or a path inside it.
func namesPathIn(values [][]byte, folder string) bool {
	for _, v := range values {
		s := string(v)
		for {
			if s == folder || strings.HasPrefix(s, folder+"/") {
				return true
			}
			_, after, ok := strings.Cut(s, "=")
			if !ok {
				break
			}
			s = after
		}
	}
	return false
}
