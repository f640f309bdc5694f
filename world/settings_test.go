package world

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestSettingsMigrateFromVersion0InPlace(t *testing.T) {
	h := newTestHome(t)
	old := "# binky settings\nport_min = 5000\nport_max = 5999\nproxy = 1400\nram_reserve_pct = 25\ndisk_reserve_gb = 5\n"
	os.WriteFile(h.SettingsPath(), []byte(old), 0o600)
	s, err := h.LoadSettings()
	if err != nil {
		t.Fatal(err)
	}
	if s.Ports.Min != 5000 || s.Ports.Max != 5999 || s.ProxyPort != 1400 || s.Reserve.RAMPercent != 25 || s.Reserve.DiskGB != 5 {
		t.Errorf("migrated %+v", s)
	}
	b, _ := os.ReadFile(h.SettingsPath())
	if !strings.Contains(string(b), "version = 1") {
		t.Errorf("not rewritten in place:\n%s", b)
	}
	if kept, _ := os.ReadFile(h.SettingsPath() + ".v0"); string(kept) != old {
		t.Error("the old file was not kept")
	}
	if again, err := h.LoadSettings(); err != nil || again != s {
		t.Errorf("reload after migration: %+v %v", again, err)
	}
}

func TestCorruptSettingsKeepTheLastGoodCopy(t *testing.T) {
	h := newTestHome(t)
	good := DefaultSettings()
	good.ProxyPort = 1777
	if err := h.SaveSettings(good); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(h.SettingsPath(), []byte("proxy_port = [oops\n"), 0o600)
	s, err := h.LoadSettings()
	if !errors.Is(err, ErrBadSettings) || !strings.Contains(err.Error(), h.SettingsPath()) || !strings.Contains(err.Error(), "last good copy") {
		t.Fatalf("err = %v", err)
	}
	if s.ProxyPort != 1777 {
		t.Errorf("settings with the error are %+v, want the last good copy", s)
	}
	if _, err := h.UpdateSettings(func(s *Settings) error { s.ProxyPort = 1; return nil }, false); err == nil {
		t.Error("an update wrote over the broken file")
	}
	if b, _ := os.ReadFile(h.SettingsPath()); string(b) != "proxy_port = [oops\n" {
		t.Error("the broken file was changed")
	}
}

func TestSettingsOutOfRangeAreRefusedWithTheRange(t *testing.T) {
	for _, tt := range []struct {
		edit func(*Settings)
		want string
	}{
		{func(s *Settings) { s.Reserve.RAMPercent = 150 }, "give 0-95%"},
		{func(s *Settings) { s.ProxyPort = 70000 }, "give 1-65535"},
		{func(s *Settings) { s.MaxParallel = 0 }, "give 1-1000"},
	} {
		s := DefaultSettings()
		tt.edit(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("err = %v, want %q", err, tt.want)
		}
	}
}
