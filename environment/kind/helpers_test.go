package kind

import (
	"os"
	"os/exec"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// runLocal runs a node command on the host, its Stdin file as standard
// input.
func runLocal(t *testing.T, c NodeCommand) {
	t.Helper()
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	if c.Stdin != "" {
		f, err := os.Open(c.Stdin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v: %s", c.Argv, err, out)
	}
}
