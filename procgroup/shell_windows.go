//go:build windows

package procgroup

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
)

// shell returns the sh that runs binky.toml's command lines: Git for
// Windows' sh.exe, which is also what git runs hooks with, so one command
// line means the same thing in a hook, a service and a verify check. Git for
// Windows keeps git.exe in <root>\cmd (or <root>\bin, <root>\mingw64\bin)
// and sh.exe in <root>\bin and <root>\usr\bin; an sh on PATH (MSYS2,
// Cygwin) is the fallback.
func shell() (string, error) {
	if git, err := exec.LookPath("git"); err == nil {
		dir := filepath.Dir(git)
		for _, root := range []string{filepath.Dir(dir), filepath.Dir(filepath.Dir(dir))} {
			for _, rel := range []string{`bin\sh.exe`, `usr\bin\sh.exe`} {
				p := filepath.Join(root, rel)
				if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
					return p, nil
				}
			}
		}
	}
	if p, err := exec.LookPath("sh"); err == nil {
		return p, nil
	}
	return "", errors.New("no sh.exe found next to git.exe or on PATH: install Git for Windows (binky runs binky.toml's commands with its sh)")
}
