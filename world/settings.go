package world

import (
	"bytes"
	"fmt"
	"os"

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
		MaxParallel: 8,
		Reserve:     Reserve{RAMPercent: 10, DiskGB: 2},
	}
}

// LoadSettings reads settings.toml, filling defaults for what it lacks. A
// missing file is the defaults.
func (h Home) LoadSettings() (Settings, error) {
	s := DefaultSettings()
	b, err := os.ReadFile(h.SettingsPath())
	if isNotExist(err) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read settings: %w", err)
	}
	if _, err := toml.NewDecoder(bytes.NewReader(b)).Decode(&s); err != nil {
		return s, fmt.Errorf("%s is not valid: %w (fix it, or delete it to go back to the defaults)", h.SettingsPath(), err)
	}
	if err := s.Validate(); err != nil {
		return s, fmt.Errorf("%s: %w", h.SettingsPath(), err)
	}
	return s, nil
}

// Validate checks every setting is in its range.
func (s Settings) Validate() error {
	if s.Ports.Min < 1024 || s.Ports.Max > 65535 || s.Ports.Min > s.Ports.Max {
		return fmt.Errorf("ports: %d-%d is not a valid range (min >= 1024, max <= 65535, min <= max)", s.Ports.Min, s.Ports.Max)
	}
	if s.ProxyPort < 1 || s.ProxyPort > 65535 {
		return fmt.Errorf("proxy_port %d: must be 1-65535", s.ProxyPort)
	}
	if s.MaxParallel < 1 {
		return fmt.Errorf("max_parallel %d: must be at least 1", s.MaxParallel)
	}
	if s.Reserve.RAMPercent < 0 || s.Reserve.RAMPercent >= 100 {
		return fmt.Errorf("reserve.ram_percent %g: must be 0-99", s.Reserve.RAMPercent)
	}
	if s.Reserve.DiskGB < 0 {
		return fmt.Errorf("reserve.disk_gb %g: cannot be negative", s.Reserve.DiskGB)
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
	return WriteFileAtomic(h.SettingsPath(), buf.Bytes(), 0o600)
}
