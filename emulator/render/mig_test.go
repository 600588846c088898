package render

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"drakit.dev/drakit/emulator/gpu"
	"drakit.dev/drakit/emulator/nvmlstate"
)

func readState(t *testing.T, root string) *nvmlstate.State {
	t.Helper()
	s, err := nvmlstate.ReadFile(filepath.Join(root, nvmlstate.RelativePath))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkCapNode checks that /dev/nvidia-caps/nvidia-cap<minor> is a character
// device nvidia-caps:<minor> with mode.
func checkCapNode(t *testing.T, root string, minor int, mode uint32) {
	t.Helper()
	var st syscall.Stat_t
	node := filepath.Join(root, fmt.Sprintf("dev/nvidia-caps/nvidia-cap%d", minor))
	if err := syscall.Stat(node, &st); err != nil {
		t.Errorf("%v", err)
		return
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFCHR || unix.Major(st.Rdev) != NvidiaCapsMajor ||
		unix.Minor(st.Rdev) != uint32(minor) || st.Mode&0o777 != mode {
		t.Errorf("%s: mode %o, device %d:%d; want character device %d:%d mode %o",
			node, st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev), NvidiaCapsMajor, minor, mode)
	}
}

// checkAccessFile checks a capabilities access file.
func checkAccessFile(t *testing.T, path string, minor int, mode uint32) {
	t.Helper()
	want := map[string]string{
		"DeviceFileMinor": strconv.Itoa(minor), "DeviceFileMode": strconv.Itoa(int(mode)), "DeviceFileModify": "1",
	}
	if diff := cmp.Diff(want, readKeyValues(t, path)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

// TestMIGSurfaces renders mixed-mig and checks that the state file's GI and
// CI records, the capability files, mig-minors and the device nodes agree
// with each other and with the profile's layouts.
func TestMIGSurfaces(t *testing.T) {
	requireMknod(t)
	t.Parallel()
	p := loadProfile(t, "mixed-mig")
	root := render(t, p, Options{})
	state := readState(t, root)

	// The state holds exactly the profile's MIG devices, with derived UUIDs.
	var want, got []string
	for _, g := range p.Spec.GPUs {
		gis, err := g.MIGLayout()
		if err != nil {
			t.Fatal(err)
		}
		for _, gi := range gis {
			for _, ci := range gi.ComputeInstances {
				want = append(want, fmt.Sprintf("gpu%d/gi%d/ci%d %s %s", *g.Minor, gi.ID, ci.ID, ci.Profile.Name,
					gpu.DeriveMIGUUID(g.UUID, gi.ID, ci.ID)))
			}
		}
	}
	ciName := map[[3]int]string{}
	for _, p := range state.CIProfiles {
		ciName[[3]int{p.GPU, p.GIProfile, p.ID}] = p.Name
	}
	giProfile := map[[2]int]int{}
	for _, gi := range state.GPUInstances {
		giProfile[[2]int{gi.GPU, gi.ID}] = gi.Profile
		dir := filepath.Join(root, fmt.Sprintf("proc/driver/nvidia/capabilities/gpu%d/mig/gi%d", gi.GPU, gi.ID))
		checkAccessFile(t, filepath.Join(dir, "access"), gi.CapMinor, 0o444)
		checkCapNode(t, root, gi.CapMinor, 0o444)
	}
	for _, ci := range state.ComputeInstances {
		got = append(got, fmt.Sprintf("gpu%d/gi%d/ci%d %s %s", ci.GPU, ci.GI, ci.ID,
			ciName[[3]int{ci.GPU, giProfile[[2]int{ci.GPU, ci.GI}], ci.Profile}], ci.UUID))
		path := filepath.Join(root, fmt.Sprintf("proc/driver/nvidia/capabilities/gpu%d/mig/gi%d/ci%d/access", ci.GPU, ci.GI, ci.ID))
		checkAccessFile(t, path, ci.CapMinor, 0o444)
		checkCapNode(t, root, ci.CapMinor, 0o444)
	}
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MIG devices (-profile +state):\n%s", diff)
	}
	if len(got) != 9 {
		t.Errorf("%d MIG devices, want 4 + 5 on the two A100s", len(got))
	}
	// Only created instances have capability files and nodes.
	entries, err := os.ReadDir(filepath.Join(root, "dev/nvidia-caps"))
	if err != nil {
		t.Fatal(err)
	}
	if n := 2 + len(state.GPUInstances) + len(state.ComputeInstances); len(entries) != n {
		t.Errorf("dev/nvidia-caps has %d nodes, want %d", len(entries), n)
	}
	checkCapNode(t, root, 1, 0o400)
	checkCapNode(t, root, 2, 0o444)
	caps := filepath.Join(root, "proc/driver/nvidia/capabilities")
	checkAccessFile(t, filepath.Join(caps, "mig/config"), 1, 0o400)
	checkAccessFile(t, filepath.Join(caps, "mig/monitor"), 2, 0o444)

	// MIG records exist for the GPUs with a mig section; migMode follows it.
	var migGPUs, enabled []int
	for _, m := range state.MIG {
		migGPUs = append(migGPUs, m.GPU)
	}
	for _, g := range state.GPUs {
		if g.MIGMode == 1 {
			enabled = append(enabled, g.Minor)
		}
	}
	if diff := cmp.Diff([]int{0, 1, 2, 3, 5}, migGPUs); diff != "" {
		t.Errorf("GPUs with mig records (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{0, 1, 2, 3}, enabled); diff != "" {
		t.Errorf("GPUs with migMode 1 (-want +got):\n%s", diff)
	}
}

// TestMIGMinors checks mig-minors against the driver's numbering, including
// the values of emulation-surfaces.md §2.1.
func TestMIGMinors(t *testing.T) {
	requireMknod(t)
	t.Parallel()
	root := render(t, loadProfile(t, "dgx-h100"), Options{})
	data, err := os.ReadFile(filepath.Join(root, "proc/driver/nvidia-caps/mig-minors"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if want := 2 + 32*15*9; len(lines) != want {
		t.Errorf("%d lines, want %d", len(lines), want)
	}
	minors := map[string]int{}
	for i, l := range lines {
		name, num, ok := strings.Cut(l, " ")
		n, err := strconv.Atoi(num)
		if !ok || err != nil || n != i+1 {
			t.Errorf("line %d %q: want \"<name> %d\"", i+1, l, i+1)
		}
		minors[name] = n
	}
	for name, want := range map[string]int{
		"config": 1, "monitor": 2, "gpu0/gi0/access": 3, "gpu0/gi0/ci0/access": 4,
		"gpu3/gi3/ci3/access": 439, "gpu6/gi11/ci7/access": 920, "gpu31/gi14/ci7/access": 4322,
	} {
		if minors[name] != want {
			t.Errorf("%s = %d, want %d", name, minors[name], want)
		}
	}
	// No instances exist, so only the config and monitor nodes.
	entries, err := os.ReadDir(filepath.Join(root, "dev/nvidia-caps"))
	if err != nil || len(entries) != 2 {
		t.Errorf("dev/nvidia-caps: %d entries, %v; want nvidia-cap1 and nvidia-cap2", len(entries), err)
	}
	if s := readState(t, root); s.MIG != nil || s.GIProfiles != nil {
		t.Errorf("dgx-h100 has no mig sections but the state has MIG records: %+v", s.MIG)
	}
}
