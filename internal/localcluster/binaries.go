package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ErrMissingBinary marks an error from CheckBinaries about a binary that is not built yet,
// so a caller can tell "run make tools" apart from a broken build.
var ErrMissingBinary = errors.New("binary not found")

// Binaries are the programs Start runs, in start order; each must be in Options.BinDir.
var Binaries = []string{"etcd", "kube-apiserver"}

// arMagic starts a Go package archive, which `go build -o` writes when handed a library
// package instead of a main package.
var arMagic = []byte("!<arch>\n")

// CheckBinaries verifies that binDir holds every program in Binaries as an executable file.
func CheckBinaries(binDir string) error {
	var errs []error
	for _, name := range Binaries {
		if err := checkExecutable(filepath.Join(binDir, name)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func checkExecutable(path string) error {
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: %w (run `make tools`)", path, ErrMissingBinary)
	}
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (mode %s)", path, info.Mode())
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	defer f.Close()
	head := make([]byte, len(arMagic))
	if _, err := io.ReadFull(f, head); err == nil && bytes.Equal(head, arMagic) {
		return fmt.Errorf("%s is a Go package archive, not a program: it was built from a library package instead of a main package", path)
	}
	if info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not executable (mode %s)", path, info.Mode())
	}
	return nil
}

// ToolsDirEnv overrides where the component binaries are found.
const ToolsDirEnv = "JOINERY_TOOLS_DIR"

// DefaultBinDir is $JOINERY_TOOLS_DIR, or else .local/bin in the repository that holds the
// working directory (where `make tools` builds them).
func DefaultBinDir() (string, error) {
	if dir := os.Getenv(ToolsDirEnv); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ".local", "bin"), nil
}

// RepoRoot is the nearest directory at or above the working directory that holds go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found at or above the working directory")
		}
		dir = parent
	}
}
