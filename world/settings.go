package world

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"
)

// SettingsVersion is the current layout of settings.toml.
const SettingsVersion = 1

// Settings are the machine-wide knobs in $BINKY_HOME/settings.toml.
type Settings struct {
	Version int `toml:"version"`
	// Ports is the range worlds' ports are allocated from.
	Ports PortRange `toml:"ports"`
	// ProxyPort is where the URL proxy listens on loopback.
	ProxyPort int `toml:"proxy_port"`
	// HTTPS fronts the proxy with Caddy (its local CA) on HTTPSPort.
	HTTPS     bool `toml:"https"`
	HTTPSPort int  `toml:"https_port"`
	// MaxParallel caps how many worlds run at once.
	MaxParallel int     `toml:"max_parallel"`
	Reserve     Reserve `toml:"reserve"`
}

// PortRange is an inclusive range of TCP ports.
type PortRange struct {
	Min int `toml:"min"`
	Max int `toml:"max"`
}

// Reserve is what binky always keeps free on the machine.
type Reserve struct {
	RAMPercent float64 `toml:"ram_percent"`
	DiskGB     float64 `toml:"disk_gb"`
}

// DefaultSettings are used for anything settings.toml does not set.
func DefaultSettings() Settings {
	return Settings{
		Version:     SettingsVersion,
		Ports:       PortRange{Min: 4000, Max: 4999},
		ProxyPort:   1355,
		HTTPSPort:   1356,
		MaxParallel: 8,
		Reserve:     Reserve{RAMPercent: 10, DiskGB: 2},
	}
}

// ErrBadSettings marks a settings.toml that cannot be used.
var ErrBadSettings = errors.New("bad settings file")

// LoadSettings reads settings.toml, filling defaults for what it lacks. A
// missing file is the defaults; a file from before settings had a version
// is migrated in place (the old one kept as settings.toml.v0). A file that
// cannot be read is an error naming it, and the settings returned with it
// are the last good copy (settings.toml.good, written on every save), so a
// broken edit never loses them.
func (h Home) LoadSettings() (Settings, error) {
	s := DefaultSettings()
	b, err := os.ReadFile(h.SettingsPath())
	if isNotExist(err) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read settings: %w", err)
	}
	var raw map[string]any
	if _, err := toml.NewDecoder(bytes.NewReader(b)).Decode(&raw); err != nil {
		return h.lastGood(fmt.Errorf("%w: %s is not valid TOML: %v", ErrBadSettings, h.SettingsPath(), err))
	}
	if _, versioned := raw["version"]; !versioned && isV0(raw) {
		return h.migrateV0(raw, b)
	}
	md, err := toml.NewDecoder(bytes.NewReader(b)).Decode(&s)
	if err != nil {
		return h.lastGood(fmt.Errorf("%w: %s: %v", ErrBadSettings, h.SettingsPath(), err))
	}
	if u := md.Undecoded(); len(u) > 0 {
		return h.lastGood(fmt.Errorf("%w: %s: unknown setting %q (known: ports.min, ports.max, proxy_port, https, https_port, max_parallel, reserve.ram_percent, reserve.disk_gb)", ErrBadSettings, h.SettingsPath(), u[0].String()))
	}
	if err := s.Validate(); err != nil {
		return h.lastGood(fmt.Errorf("%w: %s: %v", ErrBadSettings, h.SettingsPath(), err))
	}
	return s, nil
}

func (h Home) goodPath() string { return h.SettingsPath() + ".good" }

// lastGood returns the last good copy of the settings with err, extended by
// how to get back to it.
func (h Home) lastGood(err error) (Settings, error) {
	s := DefaultSettings()
	b, rerr := os.ReadFile(h.goodPath())
	if rerr != nil {
		return s, fmt.Errorf("%w (fix it, or delete it to go back to the defaults)", err)
	}
	if _, derr := toml.NewDecoder(bytes.NewReader(b)).Decode(&s); derr != nil || s.Validate() != nil {
		return DefaultSettings(), fmt.Errorf("%w (fix it, or delete it to go back to the defaults)", err)
	}
	return s, lastGoodError{fmt.Errorf("%w (binky keeps using the last good copy, %s: fix the file, or restore it with 'cp %s %s')",
		err, h.goodPath(), h.goodPath(), h.SettingsPath())}
}

// lastGoodError is a settings file that does not load, returned with the
// last good copy's settings, which binky goes on with.
type lastGoodError struct{ error }

func (e lastGoodError) Unwrap() error { return e.error }

// UsingLastGood reports whether err (from LoadSettings) came with the last
// good copy of the settings: the caller goes on with them, and only says
// the file is broken (status, doctor, the daemon's log).
func UsingLastGood(err error) bool {
	var e lastGoodError
	return errors.As(err, &e)
}

// isV0 recognises the flat layout settings had before they had a version.
func isV0(raw map[string]any) bool {
	for _, k := range []string{"port_min", "port_max", "ram_reserve_pct", "disk_reserve_gb", "proxy", "parallel"} {
		if _, ok := raw[k]; ok {
			return true
		}
	}
	return false
}

func (h Home) migrateV0(raw map[string]any, old []byte) (Settings, error) {
	s := DefaultSettings()
	num := func(k string) (float64, bool) {
		switch v := raw[k].(type) {
		case int64:
			return float64(v), true
		case float64:
			return v, true
		}
		return 0, false
	}
	if v, ok := num("port_min"); ok {
		s.Ports.Min = int(v)
	}
	if v, ok := num("port_max"); ok {
		s.Ports.Max = int(v)
	}
	if v, ok := num("proxy"); ok {
		s.ProxyPort = int(v)
	}
	if v, ok := num("ram_reserve_pct"); ok {
		s.Reserve.RAMPercent = v
	}
	if v, ok := num("disk_reserve_gb"); ok {
		s.Reserve.DiskGB = v
	}
	if v, ok := num("parallel"); ok {
		s.MaxParallel = int(v)
	}
	if err := s.Validate(); err != nil {
		return h.lastGood(fmt.Errorf("%w: %s (version 0): %v", ErrBadSettings, h.SettingsPath(), err))
	}
	if err := WriteFileAtomic(h.SettingsPath()+".v0", old, 0o600); err != nil {
		return s, err
	}
	return s, h.SaveSettings(s)
}

// Validate checks every setting is in its range.
func (s Settings) Validate() error {
	if s.Ports.Min < 1024 || s.Ports.Max > 65535 || s.Ports.Min > s.Ports.Max {
		return fmt.Errorf("ports: %d-%d is not a valid range (min >= 1024, max <= 65535, min <= max)", s.Ports.Min, s.Ports.Max)
	}
	if s.ProxyPort < 1 || s.ProxyPort > 65535 {
		return fmt.Errorf("proxy port %d is out of range: give 1-65535 (above 1023 needs no root)", s.ProxyPort)
	}
	if s.HTTPSPort < 1 || s.HTTPSPort > 65535 || (s.HTTPS && s.HTTPSPort == s.ProxyPort) {
		return fmt.Errorf("https port %d: give 1-65535, different from the proxy port %d", s.HTTPSPort, s.ProxyPort)
	}
	if s.MaxParallel < 1 || s.MaxParallel > 1000 {
		return fmt.Errorf("max_parallel %d is out of range: give 1-1000", s.MaxParallel)
	}
	if s.Reserve.RAMPercent < 0 || s.Reserve.RAMPercent > 95 {
		return fmt.Errorf("RAM reserve %g%% is out of range: give 0-95%%", s.Reserve.RAMPercent)
	}
	if s.Reserve.DiskGB < 0 || s.Reserve.DiskGB > 1e6 {
		return fmt.Errorf("disk reserve %g GB is out of range: give 0 or more GB", s.Reserve.DiskGB)
	}
	return nil
}

// SaveSettings writes settings.toml atomically.
func (h Home) SaveSettings(s Settings) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if err := h.Ensure(); err != nil {
		return err
	}
	s.Version = SettingsVersion
	var buf bytes.Buffer
	buf.WriteString("# git-binky machine settings; change them with `git binky reserve` and `git binky port`.\n")
	if err := toml.NewEncoder(&buf).Encode(s); err != nil {
		return err
	}
	if err := WriteFileAtomic(h.SettingsPath(), buf.Bytes(), 0o600); err != nil {
		return err
	}
	return WriteFileAtomic(h.goodPath(), buf.Bytes(), 0o600)
}

// UpdateSettings changes settings.toml under a lock: fn edits the current
// settings, which are validated and saved. With readOnly nothing is saved.
func (h Home) UpdateSettings(fn func(*Settings) error, readOnly bool) (Settings, error) {
	if err := h.Ensure(); err != nil {
		return Settings{}, err
	}
	unlock, err := Lock(context.Background(), filepath.Join(h.Dir, "settings.lock"))
	if err != nil {
		return Settings{}, err
	}
	defer unlock()
	s, err := h.LoadSettings()
	if err != nil {
		// Never write over a file the user has to fix: it may hold edits.
		return s, err
	}
	if err := fn(&s); err != nil {
		return s, err
	}
	if readOnly {
		return s, nil
	}
	return s, h.SaveSettings(s)
}
