package nvml_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
)

// replaceState renames a state with the first n GPUs of the sample over
// root's state file, as a writer does, without bumping the generation.
func replaceState(t *testing.T, root string, n int) {
	t.Helper()
	s := nvmltest.SampleState()
	s.GPUs = s.GPUs[:n]
	var b bytes.Buffer
	if err := nvmlstate.Write(&b, s); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, nvmlstate.RelativePath)
	if err := os.WriteFile(path+".tmp", b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

func deviceCount(t *testing.T, lib gonvml.Interface) int {
	t.Helper()
	n, ret := lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		t.Fatalf("DeviceGetCount: %v", ret)
	}
	return n
}

// A long-lived client sees a Go writer's change at its next query, through
// the generation counter: a replaced state file without the bump is not
// noticed (no stat per call), the bump makes the next call reread.
func TestGenerationChangeSeenAtNextQuery(t *testing.T) {
	root := nvmltest.NewRoot(t, nvmltest.SampleState())
	lib := newLib(t)
	initLib(t, lib, root)
	if n := deviceCount(t, lib); n != 3 {
		t.Fatalf("%d GPUs, want 3", n)
	}
	replaceState(t, root, 2)
	if n := deviceCount(t, lib); n != 3 {
		t.Errorf("after a rename without a bump: %d GPUs, want 3 (the shim watches the generation, not the file)", n)
	}
	if err := nvmlstate.BumpGeneration(root); err != nil {
		t.Fatal(err)
	}
	if n := deviceCount(t, lib); n != 2 {
		t.Errorf("after the bump: %d GPUs, want 2", n)
	}
	replaceState(t, root, 1)
	if err := nvmlstate.BumpGeneration(root); err != nil {
		t.Fatal(err)
	}
	if n := deviceCount(t, lib); n != 1 {
		t.Errorf("after a second change: %d GPUs, want 1", n)
	}
}

// A root without a (valid) generation file, rendered by an older drakit or
// damaged, falls back to a stat of the state file per call: a replaced
// state file is seen at the next query; a writer's bump then repairs the
// file and the next reread maps it.
func TestGenerationFallback(t *testing.T) {
	for _, tc := range []struct {
		name string
		file *string // nil: no generation file
	}{
		{"no generation file", nil},
		{"short generation file", ptr("drk")},
		{"generation file without the magic", ptr(strings.Repeat("x", 4096))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := nvmltest.NewRoot(t, nvmltest.SampleState())
			gen := filepath.Join(root, nvmlstate.GenerationRelativePath)
			if err := os.Remove(gen); err != nil {
				t.Fatal(err)
			}
			if tc.file != nil {
				if err := os.WriteFile(gen, []byte(*tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			lib := newLib(t)
			initLib(t, lib, root)
			replaceState(t, root, 2)
			if n := deviceCount(t, lib); n != 2 {
				t.Fatalf("after a rename: %d GPUs, want 2", n)
			}
			// A writer of today bumps, creating or repairing the file; the
			// reread it causes maps it, and from then on the counter rules.
			replaceState(t, root, 1)
			if err := nvmlstate.BumpGeneration(root); err != nil {
				t.Fatal(err)
			}
			if n := deviceCount(t, lib); n != 1 {
				t.Fatalf("after a rename and a bump: %d GPUs, want 1", n)
			}
			replaceState(t, root, 3)
			if n := deviceCount(t, lib); n != 1 {
				t.Errorf("after a rename without a bump, the file repaired: %d GPUs, want 1 (the counter is watched again)", n)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// The fallback is explained on stderr with $DRAKIT_NVML_DEBUG, and nvmlInit
// succeeds.
func TestGenerationFallbackExplained(t *testing.T) {
	probe := buildProbe(t)
	root := nvmltest.NewRoot(t, nvmltest.SampleState())
	gen := filepath.Join(root, nvmlstate.GenerationRelativePath)
	for _, tc := range []struct{ data, want string }{
		{"drk", "nvml.generation: 3 bytes, shorter than 16: every call stats the state file instead"},
		{strings.Repeat("x", 4096), "nvml.generation: not a generation file (no magic \"drkgen01\"): every call stats the state file instead"},
	} {
		if err := os.WriteFile(gen, []byte(tc.data), 0o644); err != nil {
			t.Fatal(err)
		}
		r := runProbe(t, probe, nvmltest.BuildShim(t), map[string]string{nvmltest.RootEnv: root, "DRAKIT_NVML_DEBUG": "1"}, "count")
		if r.steps["count"] != "rc=0 3" || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q as the generation file: count %q, stderr %q; want rc=0 3 and %q", tc.data, r.steps["count"], r.stderr, tc.want)
		}
	}
}

// Rendering the root again replaces its generation file: the renderer bumps
// the old one, so a client that mapped it rereads and finds the new root.
func TestGenerationAcrossRenders(t *testing.T) {
	requireMknod(t)
	root := filepath.Join(t.TempDir(), "root")
	renderProfile := func(name string) int {
		t.Helper()
		p, err := profile.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := render.Render(context.Background(), p, render.Options{Root: root}); err != nil {
			t.Fatal(err)
		}
		return len(p.Spec.GPUs)
	}
	first := renderProfile("mixed-mig")
	lib := newLib(t)
	initLib(t, lib, root)
	if n := deviceCount(t, lib); n != first {
		t.Fatalf("mixed-mig: %d GPUs, want %d", n, first)
	}
	second := renderProfile("dgx-h100")
	if second == first {
		t.Fatalf("the profiles have as many GPUs (%d): the test cannot tell them apart", first)
	}
	if n := deviceCount(t, lib); n != second {
		t.Errorf("after rendering dgx-h100 over mixed-mig: %d GPUs, want %d", n, second)
	}
}
