package nvidiahw

import (
	"fmt"
	"strings"
	"testing"
)

// realMIGMinors are entries of a real /proc/driver/nvidia-caps/mig-minors
// as NVIDIA quotes it: the MIG User Guide ("Device Nodes and
// Capabilities": the first and the last entries of the table) and
// k8s-dra-driver-gpu (internal/common/nvcaps.go: entries of GPUs 3 and 6).
const realMIGMinors = `config 1
monitor 2
gpu0/gi0/access 3
gpu0/gi0/ci0/access 4
gpu0/gi0/ci1/access 5
gpu0/gi0/ci2/access 6
gpu3/gi3/ci3/access 439
gpu3/gi3/ci4/access 440
gpu3/gi3/ci5/access 441
gpu6/gi11/ci5/access 918
gpu6/gi11/ci6/access 919
gpu6/gi11/ci7/access 920
gpu31/gi14/ci6/access 4321
gpu31/gi14/ci7/access 4322
`

// TestRealMIGMinors computes every entry of realMIGMinors.
func TestRealMIGMinors(t *testing.T) {
	t.Parallel()
	for _, line := range strings.Split(strings.TrimSpace(realMIGMinors), "\n") {
		var gpu, gi, ci, want int
		var got int
		switch {
		case line == fmt.Sprintf("config %d", ConfigCapMinor), line == fmt.Sprintf("monitor %d", MonitorCapMinor):
			continue
		case strings.Count(line, "/") == 3:
			if _, err := fmt.Sscanf(line, "gpu%d/gi%d/ci%d/access %d", &gpu, &gi, &ci, &want); err != nil {
				t.Fatalf("parse %q: %v", line, err)
			}
			got = CIAccessMinor(gpu, gi, ci)
		case strings.Count(line, "/") == 2:
			if _, err := fmt.Sscanf(line, "gpu%d/gi%d/access %d", &gpu, &gi, &want); err != nil {
				t.Fatalf("parse %q: %v", line, err)
			}
			got = GIAccessMinor(gpu, gi)
		default:
			t.Fatalf("entry %q: not config %d, monitor %d or an access capability", line, ConfigCapMinor, MonitorCapMinor)
		}
		if got != want {
			t.Errorf("%q: the formula gives minor %d", line, got)
		}
	}
}

// TestMIGMinorsTable: the formulas number the driver's whole table (32
// GPUs, GPU instances 0..MaxGIID, compute instances 0..MaxCIID) in its
// order without gaps, right after config and monitor, up to the last real
// entry, 4322.
func TestMIGMinorsTable(t *testing.T) {
	t.Parallel()
	next := MonitorCapMinor + 1
	for gpu := range 32 {
		for gi := range MaxGIID + 1 {
			if got := GIAccessMinor(gpu, gi); got != next {
				t.Fatalf("gpu%d/gi%d/access = %d, want %d (next in the table)", gpu, gi, got, next)
			}
			next++
			for ci := range MaxCIID + 1 {
				if got := CIAccessMinor(gpu, gi, ci); got != next {
					t.Fatalf("gpu%d/gi%d/ci%d/access = %d, want %d (next in the table)", gpu, gi, ci, got, next)
				}
				next++
			}
		}
	}
	if last := next - 1; last != 4322 {
		t.Errorf("the table ends at %d, the driver's at 4322", last)
	}
}
