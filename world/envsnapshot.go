package world

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/git-binky/git-binky/version"
)

// env runs on every shell prompt and direnv cd, and what it prints changes
// only when a file it reads changes. So env keeps what it printed, beside
// the world's record, with a digest of every input it was made from: the
// worktree as git describes it, binky.toml, settings.toml, the home's id
// and secret, the record, proxy.down, the world's port leases and
// git-binky's build. When the digest of those inputs now is the stored
// one, env prints the stored bytes without parsing binky.toml, the record
// or the leases, or taking the world lock (docs/performance.md, round 9).
// Anything else, a missing or damaged snapshot included, takes the full
// path, which writes a new one.
//
// The digest is over contents, not timestamps, so an edit within the same
// clock tick is never missed. A snapshot holds the slice passwords env
// prints; it is mode 0600 in the home, beside the secret they derive from,
// and goes with the world's record (DeleteRecord).

const envSnapshotMagic = "binky env snapshot 1\n"

// maxSnapshotSize bounds a snapshot read (a world's env in four forms is a
// few KiB), and the read of each other input: one over it, or anything
// but a regular file, sends env down the full path.
const maxSnapshotSize = 4 << 20

// EnvSnapshot is env's output for one world as last printed, checked
// against the world's inputs as they are now.
type EnvSnapshot struct {
	home    Home
	path    string // <home>/worlds/<id>.env; "" when this worktree gets none
	id      string
	cfgPath string
	head    string            // the worktree's HEAD file: its branch is in the output
	opened  time.Time         // before anything was read (Save's racy check)
	wtKey   []byte            // the worktree as git describes it, in the digest
	digest  [32]byte          // of the inputs when opened (ports from the record)
	outputs map[string][]byte // format -> bytes, when the snapshot matched
	leases  map[int][]byte    // read while opening, so a miss reads each once
}

// OpenEnvSnapshot finds the worktree as Locate does and reads its world's
// snapshot. It never fails: a worktree it cannot place, a world with no
// record yet or a snapshot that does not match its inputs leaves Output
// empty, and the caller takes the full path and Saves after it.
func OpenEnvSnapshot(home Home, dir, name string) *EnvSnapshot {
	s := &EnvSnapshot{home: home, opened: time.Now()}
	repo, wt, err := Locate(dir, name)
	if err != nil || wt.Missing || wt.NoCheckout {
		return s // the full path says what is wrong, or reads HEAD
	}
	s.id = WorldID(repo.CommonDir, wt.AdminDir)
	s.path = filepath.Join(home.WorldsDir(), s.id+".env")
	var k digestWriter
	k.str(home.Dir)
	for _, v := range []string{repo.CommonDir, repo.MainPath, wt.Name, wt.Path, wt.AdminDir, wt.Branch, strconv.FormatBool(wt.Main)} {
		k.str(v)
	}
	k.bytes(exeIdentity())
	s.wtKey = k.buf.Bytes()
	s.cfgPath = filepath.Join(wt.Path, ConfigFile)
	s.head = filepath.Join(wt.AdminDir, "HEAD")
	files, ok := s.readInputs(s.cfgPath)
	if !ok {
		s.path = "" // no record yet: the full path makes one, a later env saves
		return s
	}
	s.leases = map[int][]byte{}
	if stored, err := readRegular(s.path, maxSnapshotSize); err == nil { // not a pipe someone left there
		if want, ports, outputs, ok := parseEnvSnapshot(stored); ok && s.sum(files, ports) == want {
			s.digest, s.outputs = want, outputs
			return s
		}
	}
	ports, ok := recordPorts(files[len(files)-1])
	if !ok {
		s.path = ""
		return s
	}
	s.digest = s.sum(files, ports)
	return s
}

// Output is the stored output in format, when the snapshot matched.
func (s *EnvSnapshot) Output(format string) ([]byte, bool) {
	b, ok := s.outputs[format]
	return b, ok
}

// Save stores outputs (format -> bytes) made by the full path since Open,
// if every input is still what it was at Open; a snapshot that matched
// gains the formats it lacked. A world the full path changed (new ports, a
// first record), or that changed under it, is saved by a later env. It is
// a cache: a failure only means the next env takes the full path again.
func (s *EnvSnapshot) Save(outputs map[string][]byte) {
	if s.path == "" {
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
	files, ok := s.readInputs(s.cfgPath)
	if !ok {
		return
	}
	ports, ok := recordPorts(files[len(files)-1])
	if !ok || s.sum(files, ports) != s.digest || s.racy(ports) {
		return
	}
	var b bytes.Buffer
	b.WriteString(envSnapshotMagic)
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
	_ = replaceFile(s.path, b.Bytes(), 0o600, false)
	if _, err := os.Stat(s.home.recordPath(s.id)); err != nil {
		// The world was forgotten (DeleteRecord) while this was written:
		// its passwords go with it.
		os.Remove(s.path)
	}
}

// racy reports whether an input, or the folder it is listed in, changed
// since Open began (less a margin for file times, which the kernel takes
// from a coarse clock). Inputs that are the same now as at Open may still
// have changed and changed back while the full path read them (a proxy
// going down and up again), and what it printed is then for the middle
// state; git's index calls such entries racily clean. Such a snapshot is
// left to a later env.
func (s *EnvSnapshot) racy(ports []int) bool {
	since := s.opened.Add(-racyMargin)
	paths := []string{
		s.cfgPath, filepath.Dir(s.cfgPath), s.head,
		s.home.Dir, s.home.SettingsPath(), s.home.WorldsDir(), s.home.recordPath(s.id),
		s.home.PortsDir(),
	}
	for _, p := range ports {
		paths = append(paths, filepath.Join(s.home.PortsDir(), strconv.Itoa(p)))
	}
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.ModTime().After(since) {
			return true
		}
	}
	return false
}

// racyMargin is more than the coarse clock's tick (1-10 ms on Linux) that
// file times are taken from.
const racyMargin = 50 * time.Millisecond

// readInputs reads every file env's output depends on but the leases, the
// record last. A file that is absent is an input too (its absence).
func (s *EnvSnapshot) readInputs(config string) ([][]byte, bool) {
	paths := []string{
		config,
		s.home.SettingsPath(),
		filepath.Join(s.home.Dir, homeIDFile),
		filepath.Join(s.home.Dir, secretFile),
		s.home.ProxyDownPath(),
		s.home.recordPath(s.id),
	}
	files := make([][]byte, len(paths))
	for i, p := range paths {
		var b []byte
		var err error
		if i == 0 {
			b, err = ReadConfigFile(p) // committed by a branch: bounded
		} else {
			b, err = readRegular(p, maxSnapshotSize)
		}
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
func (s *EnvSnapshot) sum(files [][]byte, ports []int) [32]byte {
	var d digestWriter
	d.str(envSnapshotMagic)
	d.str(version.String()) // another build may print differently
	d.buf.Write(s.wtKey)
	for _, f := range files {
		d.bytes(f)
	}
	for _, p := range ports {
		d.str(strconv.Itoa(p))
		b, ok := s.leases[p]
		if !ok {
			var err error
			if b, err = readRegular(filepath.Join(s.home.PortsDir(), strconv.Itoa(p)), maxSnapshotSize); err != nil {
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

// recordPorts lists the ports a record holds, sorted: their leases are
// inputs too. Decoding only the ports keeps this off the fast path's cost.
func recordPorts(record []byte) ([]int, bool) {
	if len(record) == 0 || record[0] != 1 {
		return nil, false
	}
	var r struct {
		Ports map[string]int `json:"ports"`
	}
	if err := json.Unmarshal(record[1:], &r); err != nil {
		return nil, false
	}
	var ports []int
	for _, p := range r.Ports {
		ports = append(ports, p)
	}
	slices.Sort(ports)
	return slices.Compact(ports), true
}

// parseEnvSnapshot reads a snapshot file; anything not exactly as Save
// writes it (a torn write, another version) is not a snapshot.
func parseEnvSnapshot(b []byte) (digest [32]byte, ports []int, outputs map[string][]byte, ok bool) {
	i := bytes.LastIndex(b, []byte("end "))
	if i < 0 || !bytes.HasSuffix(b, []byte("\n")) {
		return digest, nil, nil, false
	}
	end := sha256.Sum256(b[:i])
	if strings.TrimSuffix(string(b[i+4:]), "\n") != hex.EncodeToString(end[:]) {
		return digest, nil, nil, false
	}
	rest, ok := bytes.CutPrefix(b[:i], []byte(envSnapshotMagic))
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

// exeIdentity tells this build from another that reports the same
// version (a `go install` without -ldflags, a developer's build): its size
// and modification time. A copy of the same build elsewhere shares them.
func exeIdentity() []byte {
	p, err := os.Executable()
	if err != nil {
		return nil
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil
	}
	return []byte(strconv.FormatInt(fi.Size(), 10) + " " + strconv.FormatInt(fi.ModTime().UnixNano(), 10))
}
