package fault

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"drakit.dev/drakit/emulator/nvlink"
	"drakit.dev/drakit/emulator/nvmlstate"
	"drakit.dev/drakit/emulator/profile"
	"drakit.dev/drakit/emulator/render"
	"drakit.dev/drakit/internal/nvidiahw"
)

func renderBuiltin(t *testing.T, name string) string {
	return renderWith(t, name, func(*profile.Profile) {})
}

// renderWith renders the built-in profile name changed by edit.
func renderWith(t *testing.T, name string, edit func(*profile.Profile)) string {
	t.Helper()
	if err := unix.Mknod(filepath.Join(t.TempDir(), "probe"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("rendering needs mknod: %v", err)
	}
	p, err := profile.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	edit(p)
	p.Default()
	root := filepath.Join(t.TempDir(), "root")
	if err := render.Render(context.Background(), p, render.Options{Root: root}); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestSetNVLink(t *testing.T) {
	// In a clique, as a cluster profile puts it.
	root := renderWith(t, "gb200-nvl-node", func(p *profile.Profile) {
		p.Spec.NVLink.Domain = &nvlink.Domain{ClusterUUID: "5f0c7a3e-2b1d-4e8a-9c6f-0d1e2f3a4b5c", CliqueID: 1}
	})
	state := func() *nvmlstate.State {
		s, err := nvmlstate.ReadFile(filepath.Join(root, nvmlstate.RelativePath))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	gen := func() uint64 {
		b, err := os.ReadFile(filepath.Join(root, nvmlstate.GenerationRelativePath))
		if err != nil || len(b) < 16 {
			t.Fatalf("generation file: %v", err)
		}
		return binary.NativeEndian.Uint64(b[len(nvmlstate.GenerationMagic):])
	}
	before := gen()
	s := state()
	target := s.GPUs[1].UUID
	if err := SetNVLink(root, target, 5, false); err != nil {
		t.Fatal(err)
	}
	if gen() <= before {
		t.Error("generation not bumped")
	}
	s = state()
	if len(s.Fabrics) != 4 {
		t.Fatalf("%d fabric records, want 4", len(s.Fabrics))
	}
	for _, l := range s.NVLinks {
		if want := !(l.GPU == s.GPUs[1].Minor && l.Link == 5); l.Active != want {
			t.Errorf("GPU %d link %d: active %v, want %v", l.GPU, l.Link, l.Active, want)
		}
	}
	for _, f := range s.Fabrics {
		want := nvidiahw.FabricHealthy
		if f.GPU == s.GPUs[1].Minor {
			want = nvidiahw.FabricDegradedBandwidth
		}
		if f.HealthMask != want {
			t.Errorf("GPU %d fabric health 0x%X, want 0x%X", f.GPU, f.HealthMask, want)
		}
	}
	if err := SetNVLink(root, s.GPUs[1].BusID, 5, true); err != nil {
		t.Fatal(err)
	}
	for _, f := range state().Fabrics {
		if f.HealthMask != nvidiahw.FabricHealthy {
			t.Errorf("GPU %d fabric health 0x%X after the link came back", f.GPU, f.HealthMask)
		}
	}
	for _, tc := range []struct {
		link int
		want error
	}{{18, ErrInvalid}, {-1, ErrInvalid}} {
		if err := SetNVLink(root, target, tc.link, false); !errors.Is(err, tc.want) {
			t.Errorf("link %d: %v, want %v", tc.link, err, tc.want)
		}
	}
	if err := SetNVLink(root, "GPU-00000000-0000-0000-0000-000000000000", 0, false); !errors.Is(err, ErrUnknownDevice) {
		t.Errorf("unknown GPU: %v", err)
	}
}

func TestSetNVLinkWithoutNVLink(t *testing.T) {
	root := renderBuiltin(t, "dgx-h100")
	if err := SetNVLink(root, "0", 0, false); !errors.Is(err, ErrNoLink) {
		t.Errorf("GPU without NVLink records: %v, want ErrNoLink", err)
	}
}
