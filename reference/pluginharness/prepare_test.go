package pluginharness_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"drakit.dev/drakit/reference/pluginharness"
	"drakit.dev/drakit/reference/pluginharness/harnesstest"
)

// TestPrepareWritesSpec: one spec per claim named after its UID, one CDI
// device <uid>-<device> per device with the driver's edits, the spec's own
// edits, and a CDI device ID for every allocation result.
func TestPrepareWritesSpec(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.plugin(t)
	got := harnesstest.PrepareOne(t, p, harnesstest.AllocatedClaim("multi", uidA,
		harnesstest.AllocResult(testDriver, testNode, "big", "dev-0"),
		harnesstest.AllocResult(testDriver, testNode, "big", "dev-1"),
		harnesstest.AllocResult(testDriver, testNode, "small/first", "dev-3")))
	if got.Err != nil {
		t.Fatalf("prepare: %v", got.Err)
	}
	id := func(dev string) []string { return []string{deviceID(uidA, dev)} }
	want := []kubeletplugin.Device{
		{Requests: []string{"big"}, PoolName: testNode, DeviceName: "dev-0", CDIDeviceIDs: id("dev-0")},
		{Requests: []string{"big"}, PoolName: testNode, DeviceName: "dev-1", CDIDeviceIDs: id("dev-1")},
		{Requests: []string{"small/first"}, PoolName: testNode, DeviceName: "dev-3", CDIDeviceIDs: id("dev-3")},
	}
	if diff := cmp.Diff(want, got.Devices); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	spec, err := cdiapi.ReadSpec(e.specPath(uidA), 0)
	if err != nil {
		t.Fatalf("read back CDI spec: %v", err)
	}
	device := func(dev string) cdispec.Device {
		return cdispec.Device{Name: uidA + "-" + dev, ContainerEdits: cdispec.ContainerEdits{Env: []string{"FAKE_DEVICE=" + dev}}}
	}
	wantSpec := &cdispec.Spec{
		Version:        "0.3.0",
		Kind:           "k8s." + testDriver + "/claim",
		ContainerEdits: cdispec.ContainerEdits{Env: []string{"FAKE_CLAIM=" + uidA}},
		Devices:        []cdispec.Device{device("dev-0"), device("dev-1"), device("dev-3")},
	}
	if diff := cmp.Diff(wantSpec, spec.Spec); diff != "" {
		t.Errorf("CDI spec (-want +got):\n%s", diff)
	}
	for _, d := range got.Devices {
		if spec.GetDevice(uidA+"-"+d.DeviceName).GetQualifiedName() != d.CDIDeviceIDs[0] {
			t.Errorf("CDI device ID %s does not name the spec's device", d.CDIDeviceIDs[0])
		}
	}
	if diff := cmp.Diff([]string{uidA + "/dev-0", uidA + "/dev-1", uidA + "/dev-3"}, e.drv.set()); diff != "" {
		t.Errorf("hardware (-want +got):\n%s", diff)
	}
	if c := p.Prepared()[uidA]; c.Incomplete || c.Namespace != "test" || c.Name != "multi" || len(c.Devices) != 3 {
		t.Errorf("checkpointed %+v, want test/multi, complete, 3 devices", c)
	}
}

// TestPrepareTwiceIsPrepareOnce: the second prepare writes the same spec
// from the checkpoint and returns the same devices without asking the
// driver to prepare again.
func TestPrepareTwiceIsPrepareOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.plugin(t)
	claim := harnesstest.AllocatedClaim("one", uidA, harnesstest.AllocResult(testDriver, testNode, "r", "dev-0"), harnesstest.AllocResult(testDriver, testNode, "r", "dev-1"))
	first := harnesstest.PrepareOne(t, p, claim)
	if first.Err != nil {
		t.Fatalf("first prepare: %v", first.Err)
	}
	cdiAfterFirst, cpAfterFirst := harnesstest.DirState(t, e.cfg.CDIDir), harnesstest.DirState(t, e.cfg.CheckpointDir)

	for _, restart := range []bool{false, true} {
		if restart {
			p = e.plugin(t)
		}
		second := harnesstest.PrepareOne(t, p, claim)
		if second.Err != nil {
			t.Fatalf("prepare again (restart %v): %v", restart, second.Err)
		}
		if diff := cmp.Diff(first, second); diff != "" {
			t.Errorf("prepare again (restart %v) returned something else (-first +again):\n%s", restart, diff)
		}
		if diff := cmp.Diff(cdiAfterFirst, harnesstest.DirState(t, e.cfg.CDIDir)); diff != "" {
			t.Errorf("CDI dir changed on prepare again (restart %v) (-first +again):\n%s", restart, diff)
		}
		if diff := cmp.Diff(cpAfterFirst, harnesstest.DirState(t, e.cfg.CheckpointDir)); diff != "" {
			t.Errorf("checkpoint dir changed on prepare again (restart %v) (-first +again):\n%s", restart, diff)
		}
	}
	if len(cdiAfterFirst) != 1 {
		t.Errorf("CDI dir has %d files, want 1: %v", len(cdiAfterFirst), cdiAfterFirst)
	}
	if n := e.drv.count("Prepare"); n != 1 {
		t.Errorf("Driver.Prepare called %d times, want once", n)
	}
	if n := e.drv.count("Edits"); n != 3 {
		t.Errorf("Driver.Edits called %d times, want 3 (every prepare writes the spec)", n)
	}
}

// TestPrepareOtherAllocation: a prepared claim prepared again with another
// allocation is undone first.
func TestPrepareOtherAllocation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.plugin(t)
	if r := harnesstest.PrepareOne(t, p, harnesstest.AllocatedClaim("one", uidA, harnesstest.AllocResult(testDriver, testNode, "r", "dev-0"))); r.Err != nil {
		t.Fatal(r.Err)
	}
	got := harnesstest.PrepareOne(t, p, harnesstest.AllocatedClaim("one", uidA, harnesstest.AllocResult(testDriver, testNode, "r", "dev-2")))
	if got.Err != nil {
		t.Fatal(got.Err)
	}
	if diff := cmp.Diff([]string{uidA + "/dev-2"}, e.drv.set()); diff != "" {
		t.Errorf("hardware (-want +got):\n%s", diff)
	}
	if n := e.drv.count("Unprepare"); n != 1 {
		t.Errorf("Driver.Unprepare called %d times, want once", n)
	}
	spec, err := cdiapi.ReadSpec(e.specPath(uidA), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Devices) != 1 || spec.Devices[0].Name != uidA+"-dev-2" {
		t.Errorf("spec devices %+v, want only dev-2", spec.Devices)
	}
	// dev-0 is free again.
	if r := harnesstest.PrepareOne(t, p, harnesstest.AllocatedClaim("two", uidB, harnesstest.AllocResult(testDriver, testNode, "r", "dev-0"))); r.Err != nil {
		t.Errorf("prepare of the released device: %v", r.Err)
	}
}

func TestPrepareIgnoresOtherDrivers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.plugin(t)
	mixed := harnesstest.AllocatedClaim("mixed", uidA,
		harnesstest.AllocResult("nic.example.com", "other-pool", "nic", "nic-0"),
		harnesstest.AllocResult(testDriver, testNode, "dev", "dev-0"))
	foreign := harnesstest.AllocatedClaim("foreign", uidB, harnesstest.AllocResult("nic.example.com", testNode, "nic", "dev-1"))
	res := harnesstest.Prepare(t, p, mixed, foreign)
	want := map[types.UID]kubeletplugin.PrepareResult{
		uidA: {Devices: []kubeletplugin.Device{{Requests: []string{"dev"}, PoolName: testNode, DeviceName: "dev-0",
			CDIDeviceIDs: []string{deviceID(uidA, "dev-0")}}}},
		uidB: {Devices: []kubeletplugin.Device{}},
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(e.specPath(uidB)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a claim without devices of this driver got a CDI spec (stat: %v)", err)
	}
	spec, err := cdiapi.ReadSpec(e.specPath(uidA), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Devices) != 1 {
		t.Errorf("CDI spec has %d devices, want only dev-0", len(spec.Devices))
	}
}

// TestPreparePerClaimErrors: a refused claim gets its own error, no spec,
// no checkpoint entry and nothing done on the hardware, while the other
// claim of the call is prepared.
func TestPreparePerClaimErrors(t *testing.T) {
	t.Parallel()
	admin := harnesstest.AllocResult(testDriver, testNode, "r", "dev-0")
	admin.AdminAccess = ptr.To(true)
	notAllocated := harnesstest.AllocatedClaim("n", uidB)
	notAllocated.Status.Allocation = nil
	for _, tc := range []struct {
		name    string
		claim   *resourceapi.ResourceClaim
		refuse  string // a device Admit refuses
		wantErr string // the whole error; empty: success
	}{
		{"not allocated", notAllocated, "", "prepare claim test/n (" + uidB + "): not allocated"},
		{"other pool", harnesstest.AllocatedClaim("o", uidB, harnesstest.AllocResult(testDriver, "node-b", "r", "dev-1")), "",
			"prepare claim test/o (" + uidB + "): device dev-1 is in pool node-b, this node's pool is 127.0.0.1"},
		{"unknown device", harnesstest.AllocatedClaim("u", uidB, harnesstest.AllocResult(testDriver, testNode, "r", "dev-4")), "",
			"prepare claim test/u (" + uidB + "): device dev-4 is not on this node"},
		{"device taken", harnesstest.AllocatedClaim("h", uidB, harnesstest.AllocResult(testDriver, testNode, "r", "dev-1"), harnesstest.AllocResult(testDriver, testNode, "r", "dev-0")), "",
			"prepare claim test/h (" + uidB + "): device dev-0 is already prepared for claim test/held (" + uidA + ")"},
		{"admitted refuses", harnesstest.AllocatedClaim("a", uidB, harnesstest.AllocResult(testDriver, testNode, "r", "dev-2")), "dev-2",
			"prepare claim test/a (" + uidB + "): device dev-2: refused (admin access false)"},
		{"admin access shares", harnesstest.AllocatedClaim("s", uidB, admin), "", ""},
		{"UID with a path", harnesstest.AllocatedClaim("p", "x/../../victim", harnesstest.AllocResult(testDriver, testNode, "r", "dev-1")), "",
			`prepare claim test/p (x/../../victim): claim UID "x/../../victim" has characters other than letters, digits and '-'`},
		{"no UID", harnesstest.AllocatedClaim("e", "", harnesstest.AllocResult(testDriver, testNode, "r", "dev-1")), "",
			"prepare claim test/e (): the claim has no UID"},
		{"UID too long for a file name", harnesstest.AllocatedClaim("l", strings.Repeat("I", 300), harnesstest.AllocResult(testDriver, testNode, "r", "dev-1")), "",
			"prepare claim test/l (" + strings.Repeat("I", 300) + `): claim UID "IIIIIIIIIIIIIIII"... has 300 characters, more than 128`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			if tc.refuse != "" {
				e.drv.refuse[tc.refuse] = true
			}
			p := e.plugin(t)
			held := harnesstest.AllocatedClaim("held", uidA, harnesstest.AllocResult(testDriver, testNode, "r", "dev-0"))
			res := harnesstest.Prepare(t, p, held, tc.claim)
			if res[uidA].Err != nil {
				t.Errorf("the other claim in the call failed too: %v", res[uidA].Err)
			}
			got := res[tc.claim.UID].Err
			switch {
			case tc.wantErr == "" && got != nil:
				t.Fatalf("unexpected error: %v", got)
			case tc.wantErr != "" && (got == nil || got.Error() != tc.wantErr):
				t.Fatalf("error %v, want %q", got, tc.wantErr)
			}
			uid := string(tc.claim.UID)
			_, statErr := os.Stat(e.specPath(uid))
			_, remembered := p.Prepared()[uid]
			if wantSpec := tc.wantErr == ""; wantSpec != (statErr == nil) || wantSpec != remembered {
				t.Errorf("spec written: %v, checkpointed: %v; want both %v", statErr == nil, remembered, wantSpec)
			}
			if tc.wantErr != "" && e.drv.count("Prepare") != 1 {
				t.Errorf("Driver.Prepare called %d times, want only for the other claim", e.drv.count("Prepare"))
			}
		})
	}
}

// TestPrepareFailureRollsBack: when the driver's prepare or edits fail,
// what the driver did is undone and nothing of the claim is left; when the
// undo fails too, the claim stays checkpointed as incomplete and the next
// prepare undoes it first.
func TestPrepareFailureRollsBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                string
		failPrepare, failEd bool
		failUnprepare       bool
		wantErr             string
	}{
		{"prepare fails", true, false, false, "prepare claim test/c (" + uidA + "): set up device dev-0: injected failure"},
		{"edits fail", false, true, false, "prepare claim test/c (" + uidA + "): edits of claim " + uidA + ": injected failure"},
		{"prepare and undo fail", true, false, true,
			"prepare claim test/c (" + uidA + "): set up device dev-0: injected failure (rolling back: undo claim " + uidA + ": injected failure)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.drv.failPrepare, e.drv.failEdits, e.drv.failUnprepare = tc.failPrepare, tc.failEd, tc.failUnprepare
			p := e.plugin(t)
			claim := harnesstest.AllocatedClaim("c", uidA, harnesstest.AllocResult(testDriver, testNode, "r", "dev-0"), harnesstest.AllocResult(testDriver, testNode, "r", "dev-1"))
			got := harnesstest.PrepareOne(t, p, claim)
			if got.Err == nil || got.Err.Error() != tc.wantErr {
				t.Fatalf("error %v, want %q", got.Err, tc.wantErr)
			}
			if _, err := os.Stat(e.specPath(uidA)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the failed claim has a spec (stat: %v)", err)
			}
			entry, remembered := e.plugin(t).Prepared()[uidA]
			if !tc.failUnprepare {
				if remembered || len(e.drv.set()) != 0 {
					t.Errorf("after the rollback: checkpointed %v, hardware %v; want neither", remembered, e.drv.set())
				}
				return
			}
			if !remembered || !entry.Incomplete || len(e.drv.set()) == 0 {
				t.Fatalf("after a failed rollback: checkpointed %v (%+v), hardware %v; want an incomplete entry and the hardware as it was",
					remembered, entry, e.drv.set())
			}
			// The kubelet retries: the undo now works, the prepare too.
			e.drv.failPrepare, e.drv.failUnprepare = false, false
			if got := harnesstest.PrepareOne(t, p, claim); got.Err != nil {
				t.Fatalf("prepare again: %v", got.Err)
			}
			if diff := cmp.Diff([]string{uidA + "/dev-0", uidA + "/dev-1"}, e.drv.set()); diff != "" {
				t.Errorf("hardware (-want +got):\n%s", diff)
			}
			if c := p.Prepared()[uidA]; c.Incomplete {
				t.Error("the prepared claim is still incomplete")
			}
		})
	}
}

// TestStartUndoesUnfinishedPrepares: a claim the checkpoint holds as
// incomplete (a driver that died in the middle of a prepare) is undone at
// start, its spec removed and the claim forgotten; Discover still sees it.
// When the undo fails the claim stays for unprepare or the next start.
func TestStartUndoesUnfinishedPrepares(t *testing.T) {
	t.Parallel()
	for _, failUndo := range []bool{false, true} {
		t.Run(fmt.Sprintf("undo fails=%v", failUndo), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.drv.failPrepare = true
			e.drv.failUnprepare = true // the dying driver undid nothing
			p := e.plugin(t)
			if got := harnesstest.PrepareOne(t, p, harnesstest.AllocatedClaim("c", uidA, harnesstest.AllocResult(testDriver, testNode, "r", "dev-0"))); got.Err == nil {
				t.Fatal("prepare succeeded")
			}
			e.drv.failPrepare = false
			if got := harnesstest.PrepareOne(t, p, harnesstest.AllocatedClaim("done", uidB, harnesstest.AllocResult(testDriver, testNode, "r", "dev-1"))); got.Err != nil {
				t.Fatal(got.Err)
			}
			// A spec written before the driver died.
			if err := os.WriteFile(e.specPath(uidA), []byte(`{"cdiVersion":"0.3.0","kind":"k8s.test.drakit.dev/claim","devices":[]}`), 0o644); err != nil {
				t.Fatal(err)
			}

			e.drv.failUnprepare = failUndo
			restarted := e.plugin(t)
			if c, ok := e.drv.discovered[uidA]; !ok || !c.Incomplete {
				t.Errorf("Discover was given %v, want the incomplete claim too", e.drv.discovered)
			}
			_, kept := restarted.Prepared()[uidA]
			_, specErr := os.Stat(e.specPath(uidA))
			if kept != failUndo || (specErr == nil) != failUndo {
				t.Errorf("incomplete claim kept: %v, spec kept: %v; want both %v", kept, specErr == nil, failUndo)
			}
			wantHW := []string{uidB + "/dev-1"}
			if failUndo {
				wantHW = []string{uidA + "/dev-0", uidB + "/dev-1"}
			}
			if diff := cmp.Diff(wantHW, e.drv.set()); diff != "" {
				t.Errorf("hardware (-want +got):\n%s", diff)
			}
			if _, ok := restarted.Prepared()[uidB]; !ok {
				t.Error("the prepared claim was forgotten")
			}
		})
	}
}

// TestNewRefusesDriverName: the CDI vendor k8s.<driver> must be valid.
func TestNewRefusesDriverName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.cfg.DriverName = "not a name"
	if _, err := e.tryPlugin(t); err == nil || !strings.Contains(err.Error(), "derive CDI vendor from driver name not a name") {
		t.Errorf("error %v, want the vendor refused", err)
	}
}

func TestHandleError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.plugin(t)
	recoverable := errors.Join(kubeletplugin.ErrRecoverable, errors.New("slice rejected"))
	p.HandleError(t.Context(), recoverable, "publishing")
	if causes := e.fatal.Causes(); len(causes) != 0 {
		t.Fatalf("a recoverable error stopped the driver: %v", causes)
	}
	p.HandleError(t.Context(), errors.New("socket gone"), "DRA gRPC server failed")
	if causes := e.fatal.Causes(); len(causes) != 1 || causes[0].Error() != "DRA gRPC server failed: socket gone" {
		t.Errorf("fatal causes %v, want one 'DRA gRPC server failed: socket gone'", causes)
	}
	if err := p.WatchHealthStatus(t.Context(), nil); !errors.Is(err, kubeletplugin.ErrHealthNotSupported) {
		t.Errorf("WatchHealthStatus: %v, want ErrHealthNotSupported", err)
	}
}

// TestUpdateWithdrawsDevices: after an Update without a device, prepare
// refuses it with ErrDeviceWithdrawn; a later Update that has it again lets
// it be prepared; Resources is the updated pool.
func TestUpdateWithdrawsDevices(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.plugin(t)
	full := p.Resources()
	pool := full.Pools[testNode]
	without := resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{testNode: {Slices: []resourceslice.Slice{{Devices: pool.Slices[0].Devices[1:]}}}}}
	p.Update(without)
	if got := p.Resources().Pools[testNode].Slices[0].Devices; len(got) != 3 || got[0].Name != "dev-1" {
		t.Fatalf("Resources after Update: %v, want dev-1..dev-3", got)
	}
	claim := harnesstest.AllocatedClaim("w", uidA, harnesstest.AllocResult(testDriver, testNode, "r", "dev-0"))
	err := harnesstest.Prepare(t, p, claim)[uidA].Err
	if !errors.Is(err, pluginharness.ErrDeviceWithdrawn) {
		t.Fatalf("prepare of a withdrawn device: %v, want ErrDeviceWithdrawn", err)
	}
	if want := "prepare claim test/w (" + uidA + "): device dev-0: " + pluginharness.ErrDeviceWithdrawn.Error(); err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	other := harnesstest.AllocatedClaim("o", uidB, harnesstest.AllocResult(testDriver, testNode, "r", "dev-1"))
	if err := harnesstest.Prepare(t, p, other)[uidB].Err; err != nil {
		t.Errorf("prepare of a device still published: %v", err)
	}
	first := p.Resources().Pools[testNode].Generation
	p.Update(full)
	if err := harnesstest.Prepare(t, p, claim)[uidA].Err; err != nil {
		t.Errorf("prepare after the device is back: %v", err)
	}
	// Every Update asks for a bumped generation, above any published before.
	if second := p.Resources().Pools[testNode].Generation; first <= pool.Generation || second <= first {
		t.Errorf("pool generations: %d at start, %d after one Update, %d after two; want them increasing", pool.Generation, first, second)
	}
	if full.Pools[testNode].Generation != pool.Generation {
		t.Errorf("Update changed the caller's pool: generation %d", full.Pools[testNode].Generation)
	}
}

// TestPrepareShares: two claims with shares of one device (results with a
// share ID, KEP-5075) are both prepared; the checkpoint records each
// share's ID and consumed capacity, and the kubelet gets the share ID back.
func TestPrepareShares(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.plugin(t)
	share := func(id string, cpu string) resourceapi.DeviceRequestAllocationResult {
		r := harnesstest.AllocResult(testDriver, testNode, "r", "dev-0")
		r.ShareID = ptr.To(types.UID(id))
		r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{"cpu": resource.MustParse(cpu)}
		return r
	}
	const shareA, shareB = "0b7e1c2a-0000-4000-8000-00000000000a", "0b7e1c2a-0000-4000-8000-00000000000b"
	res := harnesstest.Prepare(t, p,
		harnesstest.AllocatedClaim("a", uidA, share(shareA, "2")),
		harnesstest.AllocatedClaim("b", uidB, share(shareB, "1")))
	for uid, share := range map[types.UID]string{uidA: shareA, uidB: shareB} {
		r := res[uid]
		if r.Err != nil || len(r.Devices) != 1 || r.Devices[0].ShareID == nil || string(*r.Devices[0].ShareID) != share {
			t.Errorf("claim %s: result %+v, want dev-0 with share ID %s", uid, r, share)
		}
	}
	got := p.Prepared()[uidA].Devices[0]
	if cpu := got.ConsumedCapacity["cpu"]; got.ShareID != shareA || cpu.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("checkpointed share %+v, want share ID %s consuming cpu 2", got, shareA)
	}
}
