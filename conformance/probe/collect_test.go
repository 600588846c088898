package probe

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// mknod creates a device node or skips the test where the process may not
// (device nodes need CAP_MKNOD).
func mknod(t *testing.T, path string, mode uint32, major, minor uint32) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(path, mode|0o600, int(unix.Mkdev(major, minor))); err != nil {
		if errors.Is(err, unix.EPERM) {
			t.Skipf("creating device nodes needs CAP_MKNOD: %v", err)
		}
		t.Fatalf("mknod %s: %v", path, err)
	}
}

func TestCollectDevices(t *testing.T) {
	root := filepath.Join(t.TempDir(), "dev")
	mknod(t, filepath.Join(root, "nvidia0"), unix.S_IFCHR, 195, 0)
	mknod(t, filepath.Join(root, "nvidia3"), unix.S_IFCHR, 195, 3)
	mknod(t, filepath.Join(root, "nvidiactl"), unix.S_IFCHR, 195, 255)
	mknod(t, filepath.Join(root, "dri", "renderD128"), unix.S_IFCHR, 226, 128)
	mknod(t, filepath.Join(root, "loop0"), unix.S_IFBLK, 7, 0)
	// Not device nodes: a regular file, a FIFO, and a symbolic link to a
	// device node, which must not be followed.
	if err := os.WriteFile(filepath.Join(root, "regular"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(root, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nvidia0", filepath.Join(root, "gpu-link")); err != nil {
		t.Fatal(err)
	}

	got, err := Collect(context.Background(), Options{MountInfo: "/proc/self/mountinfo", DevRoot: root, Environ: []string{}, NVML: &fakeNVML{}})
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	want := []DeviceNode{
		{Path: "/dev/dri/renderD128", Type: CharDevice, Major: 226, Minor: 128},
		{Path: "/dev/loop0", Type: BlockDevice, Major: 7, Minor: 0},
		{Path: "/dev/nvidia0", Type: CharDevice, Major: 195, Minor: 0},
		{Path: "/dev/nvidia3", Type: CharDevice, Major: 195, Minor: 3},
		{Path: "/dev/nvidiactl", Type: CharDevice, Major: 195, Minor: 255},
	}
	if diff := cmp.Diff(want, got.Devices); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
}

func TestCollectErrors(t *testing.T) {
	t.Parallel()
	_, err := Collect(context.Background(), Options{MountInfo: "/proc/self/mountinfo", DevRoot: filepath.Join(t.TempDir(), "missing"), NVML: &fakeNVML{}})
	if err == nil || !strings.Contains(err.Error(), "scan device root") {
		t.Errorf("Collect with a missing device root: got %v, want a scan device root error", err)
	}
	_, err = Collect(context.Background(), Options{NVML: &fakeNVML{}})
	if err == nil || !strings.Contains(err.Error(), "DevRoot") {
		t.Errorf("Collect without DevRoot: got %v, want an error naming DevRoot", err)
	}
}

func TestCollectEnv(t *testing.T) {
	t.Parallel()
	environ := []string{"A=1", "DRAKIT_DEVICE_GPU_0=GPU-abc", "EMPTY=", "WITH_EQUALS=a=b", "A=2", "=ignored"}
	got, err := Collect(context.Background(), Options{MountInfo: "/proc/self/mountinfo", DevRoot: t.TempDir(), Environ: environ, NVML: &fakeNVML{}})
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	want := map[string]string{"A": "2", "DRAKIT_DEVICE_GPU_0": "GPU-abc", "EMPTY": "", "WITH_EQUALS": "a=b"}
	if diff := cmp.Diff(want, got.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
}

// fakeNVML is an in-memory NVML. Errors set on it are returned by the
// corresponding call.
type fakeNVML struct {
	initErr, shutdownErr, versionErr, countErr error
	version                                    string
	gpus                                       []GPU
	gpuErrs                                    map[int]error
	shutdowns                                  int
}

func (f *fakeNVML) Init() error { return f.initErr }
func (f *fakeNVML) Shutdown() error {
	f.shutdowns++
	return f.shutdownErr
}
func (f *fakeNVML) DriverVersion() (string, error) { return f.version, f.versionErr }
func (f *fakeNVML) Count() (int, error) {
	if f.countErr != nil {
		return 0, f.countErr
	}
	return len(f.gpus), nil
}
func (f *fakeNVML) GPU(i int) (GPU, error) { return f.gpus[i], f.gpuErrs[i] }

func TestCollectNVML(t *testing.T) {
	t.Parallel()
	gpu0 := GPU{UUID: "GPU-0000", Name: "NVIDIA H100 80GB HBM3", Minor: 0, BusID: "00000000:1B:00.0", MemoryTotal: 85899345920}
	gpu1 := GPU{UUID: "GPU-1111", Name: "NVIDIA H100 80GB HBM3", Minor: 1, BusID: "00000000:43:00.0", MemoryTotal: 85899345920}
	tests := map[string]struct {
		lib           *fakeNVML
		want          NVML
		wantShutdowns int
	}{
		"two GPUs": {
			lib:           &fakeNVML{version: "550.54.15", gpus: []GPU{gpu0, gpu1}},
			want:          NVML{DriverVersion: "550.54.15", GPUs: []GPU{withIndex(gpu0, 0), withIndex(gpu1, 1)}},
			wantShutdowns: 1,
		},
		"no GPUs": {
			lib:           &fakeNVML{version: "550.54.15"},
			want:          NVML{DriverVersion: "550.54.15", GPUs: []GPU{}},
			wantShutdowns: 1,
		},
		"library missing": {
			lib:  &fakeNVML{initErr: errors.New("ERROR_LIBRARY_NOT_FOUND")},
			want: NVML{Unavailable: "initialize NVML: ERROR_LIBRARY_NOT_FOUND", GPUs: []GPU{}},
		},
		"count fails": {
			lib:           &fakeNVML{version: "1.0", countErr: errors.New("ERROR_UNKNOWN")},
			want:          NVML{Error: "count GPUs: ERROR_UNKNOWN", DriverVersion: "1.0", GPUs: []GPU{}},
			wantShutdowns: 1,
		},
		"one GPU partly unreadable, shutdown fails": {
			lib: &fakeNVML{
				version:     "1.0",
				gpus:        []GPU{gpu0, {UUID: "GPU-1111"}},
				gpuErrs:     map[int]error{1: errors.New("get memory info: ERROR_NOT_SUPPORTED")},
				shutdownErr: errors.New("ERROR_UNINITIALIZED"),
			},
			want: NVML{
				Error:         "GPU 1: get memory info: ERROR_NOT_SUPPORTED; shut down NVML: ERROR_UNINITIALIZED",
				DriverVersion: "1.0",
				GPUs:          []GPU{withIndex(gpu0, 0), {Index: 1, UUID: "GPU-1111"}},
			},
			wantShutdowns: 1,
		},
		"driver version fails": {
			lib:           &fakeNVML{versionErr: errors.New("ERROR_NOT_SUPPORTED"), gpus: []GPU{gpu0}},
			want:          NVML{Error: "get driver version: ERROR_NOT_SUPPORTED", GPUs: []GPU{withIndex(gpu0, 0)}},
			wantShutdowns: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := Collect(context.Background(), Options{MountInfo: "/proc/self/mountinfo", DevRoot: t.TempDir(), Environ: []string{}, NVML: tc.lib})
			if err != nil {
				t.Fatalf("Collect: %v", err)
			}
			if diff := cmp.Diff(tc.want, got.NVML); diff != "" {
				t.Errorf("NVML (-want +got):\n%s", diff)
			}
			if tc.lib.shutdowns != tc.wantShutdowns {
				t.Errorf("Shutdown called %d times, want %d", tc.lib.shutdowns, tc.wantShutdowns)
			}
		})
	}
}

func withIndex(g GPU, i int) GPU {
	g.Index = i
	return g
}

// TestCollectRealNVMLMissing loads NVML the way the probe does, from a path
// that does not exist: the probe must report NVML unavailable, not crash.
func TestCollectRealNVMLMissing(t *testing.T) {
	t.Parallel()
	lib := NewNVML(filepath.Join(t.TempDir(), "libnvidia-ml.so.1"))
	got, err := Collect(context.Background(), Options{MountInfo: "/proc/self/mountinfo", DevRoot: t.TempDir(), Environ: []string{}, NVML: lib})
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	if !strings.HasPrefix(got.NVML.Unavailable, "initialize NVML: ") || got.NVML.Error != "" {
		t.Errorf("NVML.Unavailable = %q, Error = %q; want unavailable with an initialize NVML error, no error", got.NVML.Unavailable, got.NVML.Error)
	}
	if len(got.NVML.GPUs) != 0 {
		t.Errorf("NVML.GPUs = %v, want none", got.NVML.GPUs)
	}
}

// TestReadMounts parses a mountinfo with an escaped path and read-only and
// read-write mounts, and refuses a short line.
func TestReadMounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mountinfo")
	os.WriteFile(path, []byte(`1 0 0:1 / / rw,relatime - overlay overlay rw
2 1 0:2 / /var/run/plain/dev-0 ro,relatime - ext4 /dev/vda rw
3 1 0:3 / /with\040space rw - tmpfs tmpfs rw
`), 0o644)
	got, err := readMounts(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{{Path: "/"}, {Path: "/var/run/plain/dev-0", ReadOnly: true}, {Path: "/with space"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("readMounts (-want +got):\n%s", diff)
	}
	os.WriteFile(path, []byte("1 0 0:1 /\n"), 0o644)
	if _, err := readMounts(path); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("readMounts of a short line = %v, want an error naming line 1", err)
	}
}
