// Package envsnap keeps what `git binky env` printed for a world, with a
// digest of every input it was made from, and prints it again while the
// inputs are unchanged.
//
// env runs on every shell prompt and direnv cd, and what it prints changes
// only when a file it reads changes: the worktree as git describes it,
// binky.toml, settings.toml, the home's id and secret, the world's record,
// proxy.down, the world's port leases and the build of the binky that
// printed it. When the digest of those inputs now is the stored one, the
// stored bytes are printed without parsing binky.toml, the record or the
// leases, or taking the world lock. Anything else, a missing or damaged
// snapshot included, takes the full path (world.OpenCoordinates), which
// saves a new one.
//
// The package links only gitx, homedir and smallfile, so that the
// git-binky launcher (cmd/git-binky) answers env's everyday forms without
// starting the full command line: a Go program's start is most of what env
// costs, and each package linked in adds to it (docs/performance.md, round
// 13).
//
// The digest is over contents, not timestamps, so an edit within the same
// clock tick is never missed. A snapshot holds the slice passwords env
// prints; it is mode 0600 in the home, beside the secret they derive from,
// and goes with the world's record (world's DeleteRecord).
package envsnap

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/git-binky/git-binky/gitx"
	"github.com/git-binky/git-binky/homedir"
	"github.com/git-binky/git-binky/smallfile"
)

// magic begins every snapshot; a snapshot of another layout (an older
// binky's) is not one.
const magic = "binky env snapshot 2\n"

// maxSize bounds a snapshot read (a world's env in four forms is a few
// KiB), and the read of each other input: one over it, or anything but a
// regular file, sends env down the full path. (binky.toml's own bound is
// smaller: a larger one fails the full path, which then saves nothing.)
const maxSize = 4 << 20

// Options say whose snapshot to open.
type Options struct {
	Home string // the state folder (homedir.Default)
	Dir  string // where env runs
	Name string // the worktree env was asked about; "" for the one around Dir

	// Renderer is the binky executable that prints env's full path: its
	// build is an input, as another build may print otherwise. The launcher
	// names the binky it would run; "" is this process's own executable.
	Renderer string

	// PortsOf lists the ports a record holds, sorted, when the snapshot
	// does not match: the digest Save checks against is taken with them. A
	// nil PortsOf only reads (the launcher, which never saves).
	PortsOf func(record []byte) ([]int, bool)
}

// Snapshot is env's output for one world as last printed, checked against
// the world's inputs as they are now.
type Snapshot struct {
	home      string
	path      string // <home>/worlds/<id>.env; "" when this worktree gets none
	id        string
	cfgPath   string
	head      string            // the worktree's HEAD file: its branch is in the output
	adminCopy string            // the admin folder's copy of the record
	opened    time.Time         // before anything was read (Save's racy check)
	wtKey     []byte            // the worktree as git describes it, and the renderer
	digest    [32]byte          // of the inputs when opened (ports from the record)
	outputs   map[string][]byte // format -> bytes, when the snapshot matched
	leases    map[int][]byte    // read while opening, so a miss reads each once
	proxyDown bool              // proxy.down says why the URL proxy is down
	portsOf   func([]byte) ([]int, bool)
}

// Open finds the worktree as world.Locate does and reads its world's
// snapshot. It never fails: a worktree it cannot place, a world with no
// record yet or a snapshot that does not match its inputs leaves Output
// empty, and the caller takes the full path and Saves after it.
func Open(o Options) *Snapshot {
	s := &Snapshot{home: o.Home, opened: time.Now(), portsOf: o.PortsOf}
	repo, wt, err := gitx.Discover(o.Dir)
	if err != nil && (o.Name == "" || repo == nil) {
		return s // the full path says what is wrong
	}
	if o.Name != "" {
		if wt, err = repo.Find(o.Name); err != nil {
			return s
		}
	}
	if wt.Missing || wt.NoCheckout {
		return s // the full path says what is wrong, or reads HEAD
	}
	build := identity(o.Renderer)
	if build == nil {
		return s // a build that cannot be told from another serves no snapshot
	}
	s.id = homedir.WorldID(repo.CommonDir, wt.AdminDir)
	s.path = homedir.EnvSnapshot(o.Home, s.id)
	var k digestWriter
	k.str(o.Home)
	for _, v := range []string{repo.CommonDir, repo.MainPath, wt.Name, wt.Path, wt.AdminDir, wt.Branch, strconv.FormatBool(wt.Main)} {
		k.str(v)
	}
	k.bytes(build)
	s.wtKey = k.buf.Bytes()
	s.cfgPath = filepath.Join(wt.Path, "binky.toml")
	s.head = filepath.Join(wt.AdminDir, "HEAD")
	// The admin folder's copy of the record: absent once git made the
	// folder again for a new worktree of the name, whose env is not the
	// old world's (world.AdminFolderReplaced).
	s.adminCopy = filepath.Join(wt.AdminDir, "binky", "world.json")
	files, ok := s.readInputs()
	if !ok {
		s.path = "" // no record yet: the full path makes one, a later env saves
		return s
	}
	s.proxyDown = len(bytes.TrimSpace(files[proxyDownInput][1:])) > 0
	s.leases = map[int][]byte{}
	if stored, err := smallfile.Read(s.path, maxSize); err == nil { // not a pipe someone left there
		if want, ports, outputs, ok := parse(stored); ok && s.sum(files, ports) == want {
			s.digest, s.outputs = want, outputs
			return s
		}
	}
	if s.portsOf == nil {
		s.path = ""
		return s
	}
	ports, ok := s.recordPorts(files[len(files)-1])
	if !ok {
		s.path = ""
		return s
	}
	s.digest = s.sum(files, ports)
	return s
}

// ProxyDown reports whether proxy.down, as read for the digest, says the
// URL proxy is down: binky then warns beside its output (the launcher
// leaves such an env to binky).
func (s *Snapshot) ProxyDown() bool { return s.proxyDown }

// Output is the stored output in format, when the snapshot matched.
func (s *Snapshot) Output(format string) ([]byte, bool) {
	b, ok := s.outputs[format]
	return b, ok
}

// Save stores outputs (format -> bytes) made by the full path since Open,
// if every input is still what it was at Open; a snapshot that matched
// gains the formats it lacked. A world the full path changed (new ports, a
// first record), or that changed under it, is saved by a later env. It is
// a cache: a failure only means the next env takes the full path again.
func (s *Snapshot) Save(outputs map[string][]byte) {
	if s.path == "" || s.portsOf == nil {
		return
	}
	if s.outputs != nil {
		// It matched, but lacked a format (JSON is only made when asked):
		// keep what it has, with the new one.
		added := false
		for f, b := range outputs {
			if _, ok := s.outputs[f]; !ok {
				s.outputs[f], added = b, true
			}
		}
		if !added {
			return
		}
		outputs = s.outputs
	}
	s.leases = nil // read them all again
	files, ok := s.readInputs()
	if !ok {
		return
	}
	ports, ok := s.recordPorts(files[len(files)-1])
	if !ok || s.sum(files, ports) != s.digest || s.racy(ports) {
		return
	}
	var b bytes.Buffer
	b.WriteString(magic)
	b.WriteString("digest " + hex.EncodeToString(s.digest[:]) + "\n")
	b.WriteString("ports")
	for _, p := range ports {
		b.WriteString(" " + strconv.Itoa(p))
	}
	b.WriteString("\n")
	for _, f := range slices.Sorted(maps.Keys(outputs)) {
		b.WriteString("out " + f + " " + strconv.Itoa(len(outputs[f])) + "\n")
		b.Write(outputs[f])
		b.WriteString("\n")
	}
	end := sha256.Sum256(b.Bytes())
	b.WriteString("end " + hex.EncodeToString(end[:]) + "\n")
	// No fsync: after a crash the file is whole or absent, and a damaged
	// one fails its own check and is rebuilt.
	_ = smallfile.Replace(s.path, b.Bytes(), 0o600, false)
	if _, err := os.Stat(homedir.Record(s.home, s.id)); err != nil {
		// The world was forgotten (DeleteRecord) while this was written:
		// its passwords go with it.
		os.Remove(s.path)
	}
}

// recordPorts is PortsOf of a record as readInputs framed it.
func (s *Snapshot) recordPorts(record []byte) ([]int, bool) {
	if len(record) == 0 || record[0] != 1 {
		return nil, false
	}
	return s.portsOf(record[1:])
}

// racy reports whether an input, or the folder it is listed in, changed
// since Open began (less a margin for file times, which the kernel takes
// from a coarse clock). Inputs that are the same now as at Open may still
// have changed and changed back while the full path read them (a proxy
// going down and up again), and what it printed is then for the middle
// state; git's index calls such entries racily clean. Such a snapshot is
// left to a later env.
func (s *Snapshot) racy(ports []int) bool {
	since := s.opened.Add(-RacyMargin)
	paths := []string{
		s.cfgPath, filepath.Dir(s.cfgPath), s.head, s.adminCopy,
		s.home, homedir.Settings(s.home), homedir.Worlds(s.home), homedir.Record(s.home, s.id),
		homedir.Ports(s.home),
	}
	for _, p := range ports {
		paths = append(paths, homedir.Port(s.home, p))
	}
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.ModTime().After(since) {
			return true
		}
	}
	return false
}

// RacyMargin is more than the coarse clock's tick (1-10 ms on Linux) that
// file times are taken from: a snapshot is saved only once every input is
// older than it.
const RacyMargin = 50 * time.Millisecond

// proxyDownInput is proxy.down's place among readInputs' files.
const proxyDownInput = 4

// readInputs reads every file env's output depends on but the leases, the
// record last. A file that is absent is an input too (its absence).
func (s *Snapshot) readInputs() ([][]byte, bool) {
	paths := []string{
		s.cfgPath, // committed by a branch: bounded like the rest
		homedir.Settings(s.home),
		filepath.Join(s.home, homedir.IDFile),
		filepath.Join(s.home, homedir.SecretFile),
		homedir.ProxyDown(s.home), // proxyDownInput
		s.adminCopy,
		homedir.Record(s.home, s.id),
	}
	files := make([][]byte, len(paths))
	for i, p := range paths {
		b, err := smallfile.Read(p, maxSize)
		switch {
		case err == nil:
			files[i] = append([]byte{1}, b...)
		case os.IsNotExist(err) && i != len(paths)-1:
			files[i] = []byte{0}
		default:
			return nil, false // no record yet, or a file env cannot read
		}
	}
	return files, true
}

// sum is the digest of the worktree, the input files and the leases of
// ports as they are now.
func (s *Snapshot) sum(files [][]byte, ports []int) [32]byte {
	var d digestWriter
	d.str(magic)
	d.buf.Write(s.wtKey)
	for _, f := range files {
		d.bytes(f)
	}
	for _, p := range ports {
		d.str(strconv.Itoa(p))
		b, ok := s.leases[p]
		if !ok {
			var err error
			if b, err = smallfile.Read(homedir.Port(s.home, p), maxSize); err != nil {
				b = nil // gone: no lease is an input too
			} else {
				b = append([]byte{1}, b...)
			}
			if s.leases != nil {
				s.leases[p] = b
			}
		}
		d.bytes(b)
	}
	return sha256.Sum256(d.buf.Bytes())
}

// digestWriter frames each field with its length, so that no two different
// sequences of fields hash the same bytes.
type digestWriter struct{ buf bytes.Buffer }

func (d *digestWriter) bytes(b []byte) {
	d.buf.Write(binary.AppendUvarint(nil, uint64(len(b))))
	d.buf.Write(b)
}

func (d *digestWriter) str(v string) { d.bytes([]byte(v)) }

// parse reads a snapshot file; anything not exactly as Save writes it (a
// torn write, another layout) is not a snapshot.
func parse(b []byte) (digest [32]byte, ports []int, outputs map[string][]byte, ok bool) {
	i := bytes.LastIndex(b, []byte("end "))
	if i < 0 || !bytes.HasSuffix(b, []byte("\n")) {
		return digest, nil, nil, false
	}
	end := sha256.Sum256(b[:i])
	if strings.TrimSuffix(string(b[i+4:]), "\n") != hex.EncodeToString(end[:]) {
		return digest, nil, nil, false
	}
	rest, ok := bytes.CutPrefix(b[:i], []byte(magic))
	if !ok {
		return digest, nil, nil, false
	}
	line := func() (string, bool) {
		l, r, ok := bytes.Cut(rest, []byte("\n"))
		rest = r
		return string(l), ok
	}
	l, ok := line()
	hexDigest, ok2 := strings.CutPrefix(l, "digest ")
	if !ok || !ok2 || len(hexDigest) != hex.EncodedLen(len(digest)) {
		return digest, nil, nil, false
	}
	if _, err := hex.Decode(digest[:], []byte(hexDigest)); err != nil {
		return digest, nil, nil, false
	}
	l, ok = line()
	fields := strings.Fields(l)
	if !ok || len(fields) == 0 || fields[0] != "ports" {
		return digest, nil, nil, false
	}
	for _, f := range fields[1:] {
		p, err := strconv.Atoi(f)
		if err != nil {
			return digest, nil, nil, false
		}
		ports = append(ports, p)
	}
	outputs = map[string][]byte{}
	for len(rest) > 0 {
		l, ok = line()
		f := strings.Fields(l)
		if !ok || len(f) != 3 || f[0] != "out" {
			return digest, nil, nil, false
		}
		n, err := strconv.Atoi(f[2])
		if err != nil || n < 0 || n >= len(rest) || rest[n] != '\n' {
			return digest, nil, nil, false
		}
		outputs[f[1]] = rest[:n:n]
		rest = rest[n+1:]
	}
	return digest, ports, outputs, true
}

// identity tells one build of the renderer from another that reports the
// same version (a `go install` without -ldflags, a developer's build): its
// size and modification time, and where the system has them its device,
// inode and change time (fileKey), which no copy or install keeps, so
// that two builds of one size whose times were set alike (`cp -p`, a
// package manager that stamps every file) are still told apart. binky
// names itself by the file it runs from (selfExe), which a new install
// replacing it mid-run does not change.
func identity(renderer string) []byte {
	if renderer == "" {
		p, err := selfExe()
		if err != nil {
			return nil
		}
		renderer = p
	}
	fi, err := os.Stat(renderer)
	if err != nil {
		return nil
	}
	return []byte(strconv.FormatInt(fi.Size(), 10) + " " + strconv.FormatInt(fi.ModTime().UnixNano(), 10) + fileKey(fi))
}
