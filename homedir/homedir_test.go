package homedir

import (
	"path/filepath"
	"testing"
)

func TestTheHomeIsBinkyHomeThenXDGStateThenThePlatformsFolder(t *testing.T) {
	tmp := t.TempDir()
	t.Chdir(tmp)
	t.Setenv("BINKY_HOME", "rel/home")
	t.Setenv("XDG_STATE_HOME", filepath.Join(tmp, "state"))
	if got, err := Default(); err != nil || got != filepath.Join(tmp, "rel", "home") {
		t.Errorf("with BINKY_HOME relative: %q, %v; want it made absolute", got, err)
	}
	t.Setenv("BINKY_HOME", "")
	if got, err := Default(); err != nil || got != filepath.Join(tmp, "state", "binky") {
		t.Errorf("with XDG_STATE_HOME: %q, %v", got, err)
	}
	// A relative XDG_STATE_HOME is invalid by the spec, and ignored.
	t.Setenv("XDG_STATE_HOME", "state")
	want, err := stateDir()
	if err != nil {
		t.Skip("no platform state folder here:", err)
	}
	if got, err := Default(); err != nil || got != filepath.Join(want, "binky") {
		t.Errorf("with XDG_STATE_HOME relative: %q, %v; want %q", got, err, filepath.Join(want, "binky"))
	}
}

func TestAWorldsFilesAreNamedByItsID(t *testing.T) {
	id := WorldID("/r/.git", "/r/.git/worktrees/a")
	if len(id) != 16 || id == WorldID("/r/.git", "/r/.git/worktrees/b") {
		t.Fatalf("WorldID = %q", id)
	}
	if got := Record("/h", id); got != filepath.Join("/h", "worlds", id+".json") {
		t.Errorf("Record = %q", got)
	}
	if got := EnvSnapshot("/h", id); got != filepath.Join("/h", "worlds", id+".env") {
		t.Errorf("EnvSnapshot = %q", got)
	}
	if got := Port("/h", 4107); got != filepath.Join("/h", "ports", "4107") {
		t.Errorf("Port = %q", got)
	}
}
