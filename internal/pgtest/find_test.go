package pgtest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func noPath(string) (string, error) { return "", errors.New("not found") }

// Without initdb, the error says that make test installs PostgreSQL.
func TestFindBinDir_MissingSaysMakeTestInstallsIt(t *testing.T) {
	_, err := findBinDir(noPath, filepath.Join(t.TempDir(), "*", "bin", "initdb"))
	if err == nil || !strings.Contains(err.Error(), "make test") || !strings.Contains(err.Error(), "postgresql") {
		t.Errorf("err = %v; want one saying make test installs PostgreSQL", err)
	}
}

// In PATH first, else the newest /usr/lib/postgresql/<version>/bin.
func TestFindBinDir_PathThenNewestVersion(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"9", "15", "13"} {
		os.MkdirAll(filepath.Join(root, v, "bin"), 0o755)
		os.WriteFile(filepath.Join(root, v, "bin", "initdb"), nil, 0o755)
	}
	glob := filepath.Join(root, "*", "bin", "initdb")
	if dir, err := findBinDir(noPath, glob); err != nil || dir != filepath.Join(root, "15", "bin") {
		t.Errorf("dir = %s, %v; want version 15's", dir, err)
	}
	inPath := func(string) (string, error) { return "/opt/pg/bin/initdb", nil }
	if dir, err := findBinDir(inPath, glob); err != nil || dir != "/opt/pg/bin" {
		t.Errorf("dir = %s, %v; want PATH's", dir, err)
	}
}
