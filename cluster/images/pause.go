package images

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// PauseImage is the name of the pause image BuildPause writes; the local
// cluster's containerd uses it as its sandbox image.
const PauseImage = "drakit.dev/pause:dev"

//go:embed pause/pause.c
var pauseSource []byte

// BuildPause compiles the embedded pause program with gcc -static and writes
// it as the docker-archive of PauseImage (entrypoint /pause) to outPath.
func BuildPause(ctx context.Context, outPath string) error {
	dir, err := os.MkdirTemp("", "drakit-pause-")
	if err != nil {
		return fmt.Errorf("build pause image: %w", err)
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "pause.c")
	bin := filepath.Join(dir, "pause")
	if err := os.WriteFile(src, pauseSource, 0o644); err != nil {
		return fmt.Errorf("build pause image: %w", err)
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "gcc", "-static", "-Os", "-s", "-Wall", "-Werror", "-o", bin, src)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build pause image: compile pause.c (gcc and the static libc, libc6-dev, are needed: scripts/install-deps.sh): %w: %s",
			err, strings.TrimSpace(out.String()))
	}
	return Build(ctx, Spec{Name: PauseImage, Files: map[string]string{"/pause": bin}, Entrypoint: []string{"/pause"}}, outPath)
}
