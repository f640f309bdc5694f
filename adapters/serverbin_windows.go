//go:build windows

package adapters

import (
	"os"
	"path/filepath"
)

// exeSuffix is what an executable's file name ends with.
const exeSuffix = ".exe"

// serverBinDirs are the folders FindServerBinary searches after PATH: the
// EDB PostgreSQL installer's (Program Files\PostgreSQL\<version>\bin) and
// MSYS2's package folders.
func serverBinDirs() []string {
	pf := os.Getenv("ProgramFiles")
	if pf == "" {
		pf = `C:\Program Files`
	}
	return []string{filepath.Join(pf, "PostgreSQL", "*", "bin"),
		`C:\msys64\ucrt64\bin`, `C:\msys64\mingw64\bin`, `C:\msys64\clang64\bin`, `C:\msys64\usr\bin`}
}

// executable: Windows file modes have no execute bits; the .exe name says it.
func executable(os.FileInfo) bool { return true }
