package nvml_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/emulator/fault"
	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/nvmlstate"
)

const noInstance = 0xFFFFFFFF

// eventSet creates an event set and registers types on each device.
func eventSet(t *testing.T, lib gonvml.Interface, types uint64, devices ...gonvml.Device) gonvml.EventSet {
	t.Helper()
	set, ret := lib.EventSetCreate()
	if ret != gonvml.SUCCESS {
		t.Fatalf("EventSetCreate: %v", ret)
	}
	t.Cleanup(func() { set.Free() })
	for _, d := range devices {
		if ret := d.RegisterEvents(types, set); ret != gonvml.SUCCESS {
			t.Fatalf("RegisterEvents(%#x): %v", types, ret)
		}
	}
	return set
}

// wantEvent waits up to 5 s for set's next event and compares it with want.
func wantEvent(t *testing.T, set gonvml.EventSet, want gonvml.EventData) {
	t.Helper()
	got, ret := set.Wait(5000)
	if ret != gonvml.SUCCESS {
		t.Fatalf("Wait: %v, want %+v", ret, want)
	}
	if got.Device != want.Device {
		t.Errorf("event %+v is for another device handle than %v", got, want.Device)
	}
	got.Device, want.Device = nil, nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("event (-want +got):\n%s", diff)
	}
}

// wantTimeout waits timeout for set's next event and expects none.
func wantTimeout(t *testing.T, set gonvml.EventSet, timeout time.Duration) {
	t.Helper()
	start := time.Now()
	e, ret := set.Wait(uint32(timeout.Milliseconds()))
	took := time.Since(start)
	if ret != gonvml.ERROR_TIMEOUT {
		t.Errorf("Wait = %+v, %v; want TIMEOUT", e, ret)
	}
	if took < timeout-20*time.Millisecond || took > timeout+time.Second {
		t.Errorf("Wait(%v) timed out after %v", timeout, took)
	}
}

func TestXidEventsThroughEventSet(t *testing.T) {
	s := nvmltest.MIGSampleState()
	root := nvmltest.NewMIGRoot(t, s)
	lib := newLib(t)
	initLib(t, lib, root)
	gpu0, _ := lib.DeviceGetHandleByIndex(0)
	gpu1, _ := lib.DeviceGetHandleByIndex(1)
	mig, ret := lib.DeviceGetHandleByUUID(s.ComputeInstances[1].UUID) // GI 1, CI 1
	if ret != gonvml.SUCCESS {
		t.Fatal(ret)
	}
	errors := uint64(gonvml.EventTypeXidCriticalError | gonvml.EventTypeDoubleBitEccError | gonvml.EventTypeSingleBitEccError)
	gpus := eventSet(t, lib, errors, gpu0, gpu1)
	migs := eventSet(t, lib, uint64(gonvml.EventTypeXidCriticalError), mig)

	// Nothing happened yet: a wait times out after about its timeout.
	wantTimeout(t, gpus, 300*time.Millisecond)

	// An Xid injected while the set waits arrives, with its device effect's
	// ECC event after it.
	injected := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		_, err := fault.InjectXid(root, s.GPUs[0].UUID, fault.XidRequest{Code: 48})
		injected <- err
	}()
	start := time.Now()
	wantEvent(t, gpus, gonvml.EventData{Device: gpu0, EventType: uint64(gonvml.EventTypeXidCriticalError), EventData: 48,
		GpuInstanceId: noInstance, ComputeInstanceId: noInstance})
	if err := <-injected; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the Xid arrived %v after the wait began (injected after 100 ms)", took)
	}
	wantEvent(t, gpus, gonvml.EventData{Device: gpu0, EventType: uint64(gonvml.EventTypeDoubleBitEccError), EventData: 1,
		GpuInstanceId: noInstance, ComputeInstanceId: noInstance})

	// A MIG device's Xid carries its GI and CI ids: on the GPU's
	// registration with the GPU's handle, on the MIG device's with its.
	if _, err := fault.InjectXid(root, s.ComputeInstances[1].UUID, fault.XidRequest{Code: 94}); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, gpus, gonvml.EventData{Device: gpu1, EventType: uint64(gonvml.EventTypeXidCriticalError), EventData: 94,
		GpuInstanceId: 1, ComputeInstanceId: 1})
	// The MIG set did not register GPU 0: it sees only the MIG device's Xid.
	wantEvent(t, migs, gonvml.EventData{Device: mig, EventType: uint64(gonvml.EventTypeXidCriticalError), EventData: 94,
		GpuInstanceId: 1, ComputeInstanceId: 1})
	wantTimeout(t, migs, 100*time.Millisecond)

	// A set created after an event does not see it.
	late := eventSet(t, lib, errors, gpu0, gpu1)
	wantTimeout(t, late, 200*time.Millisecond)
	if _, err := fault.InjectXid(root, s.GPUs[1].UUID, fault.XidRequest{Code: 13}); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, late, gonvml.EventData{Device: gpu1, EventType: uint64(gonvml.EventTypeXidCriticalError), EventData: 13,
		GpuInstanceId: noInstance, ComputeInstanceId: noInstance})

	// Only registered types arrive.
	xidOnly := eventSet(t, lib, uint64(gonvml.EventTypeXidCriticalError), gpu0)
	if err := fault.ECC(root, s.GPUs[0].UUID, 2, 0); err != nil {
		t.Fatal(err)
	}
	wantTimeout(t, xidOnly, 200*time.Millisecond)
	wantEvent(t, late, gonvml.EventData{Device: gpu0, EventType: uint64(gonvml.EventTypeSingleBitEccError), EventData: 2,
		GpuInstanceId: noInstance, ComputeInstanceId: noInstance})
}

func TestLostGPUAndReset(t *testing.T) {
	s := nvmltest.SampleState()
	root := nvmltest.NewRoot(t, s)
	lib := newLib(t)
	initLib(t, lib, root)
	gpu0, _ := lib.DeviceGetHandleByIndex(0)
	gpu1, _ := lib.DeviceGetHandleByIndex(1)
	set := eventSet(t, lib, uint64(gonvml.EventTypeXidCriticalError), gpu0)
	if err := fault.Lose(root, s.GPUs[0].UUID); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, set, gonvml.EventData{Device: gpu0, EventType: uint64(gonvml.EventTypeXidCriticalError), EventData: 79,
		GpuInstanceId: noInstance, ComputeInstanceId: noInstance})
	if _, ret := gpu0.GetUUID(); ret != gonvml.ERROR_GPU_IS_LOST {
		t.Errorf("GetUUID of the lost GPU's held handle = %v, want GPU_IS_LOST", ret)
	}
	if _, ret := gpu0.GetTotalEccErrors(gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.VOLATILE_ECC); ret != gonvml.ERROR_GPU_IS_LOST {
		t.Errorf("GetTotalEccErrors of the lost GPU = %v, want GPU_IS_LOST", ret)
	}
	if n, _ := lib.DeviceGetCount(); n != 2 {
		t.Errorf("DeviceGetCount with a GPU lost = %d, want 2", n)
	}
	if uuid, ret := gpu1.GetUUID(); ret != gonvml.SUCCESS || uuid != s.GPUs[1].UUID {
		t.Errorf("the other GPU's held handle: %q, %v", uuid, ret)
	}
	if _, ret := lib.DeviceGetHandleByUUID(s.GPUs[0].UUID); ret != gonvml.ERROR_NOT_FOUND {
		t.Errorf("DeviceGetHandleByUUID(lost GPU) = %v, want NOT_FOUND", ret)
	}
	if _, err := os.Stat(nvmltest.DeviceNode(root, 0)); !os.IsNotExist(err) {
		t.Errorf("the lost GPU's device node: %v, want it gone", err)
	}
	if err := fault.Lose(root, s.GPUs[0].UUID); err == nil || !strings.Contains(err.Error(), "lost") {
		t.Errorf("a second lose: %v, want an error saying the GPU is lost", err)
	}

	if err := fault.Reset(root, s.GPUs[0].UUID); err != nil {
		t.Fatal(err)
	}
	if uuid, ret := gpu0.GetUUID(); ret != gonvml.SUCCESS || uuid != s.GPUs[0].UUID {
		t.Errorf("GetUUID after the reset = %q, %v", uuid, ret)
	}
	if n, _ := lib.DeviceGetCount(); n != 3 {
		t.Errorf("DeviceGetCount after the reset = %d, want 3", n)
	}
	if diff := cmp.Diff(wantHealth(nvmlstate.Healthy(0)), observeHealth(t, gpu0)); diff != "" {
		t.Errorf("health after the reset (-want +got):\n%s", diff)
	}
}

// childInjectEnv makes the test binary, run again, inject an Xid as another
// process (TestEventFromAnotherProcess): its value is the GPU.
const childInjectEnv = "DRAKIT_NVML_TEST_INJECT_CHILD"

func TestFaultChildInjects(t *testing.T) {
	target := os.Getenv(childInjectEnv)
	if target == "" {
		t.Skip("runs only as the child of TestEventFromAnotherProcess")
	}
	time.Sleep(200 * time.Millisecond) // the parent waits by now
	if _, err := fault.InjectXid(os.Getenv(nvmltest.RootEnv), target, fault.XidRequest{Code: 95}); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("injected-at %d\n", time.Now().UnixMicro())
}

// TestEventFromAnotherProcess: an Xid another process injects wakes a
// waiting client at once.
func TestEventFromAnotherProcess(t *testing.T) {
	s := nvmltest.SampleState()
	root := nvmltest.NewRoot(t, s)
	lib := newLib(t)
	initLib(t, lib, root)
	gpu1, _ := lib.DeviceGetHandleByIndex(1)
	set := eventSet(t, lib, uint64(gonvml.EventTypeXidCriticalError), gpu1)
	child := exec.Command(os.Args[0], "-test.run=^TestFaultChildInjects$", "-test.v")
	child.Env = append(os.Environ(), childInjectEnv+"="+s.GPUs[1].UUID, nvmltest.RootEnv+"="+root)
	var out strings.Builder
	child.Stdout, child.Stderr = &out, &out
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	e, ret := set.Wait(10000)
	woke := time.Now()
	if err := child.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, out.String())
	}
	if ret != gonvml.SUCCESS || e.EventData != 95 || e.Device != gpu1 {
		t.Fatalf("Wait = %+v, %v; want Xid 95 on GPU 1", e, ret)
	}
	_, at, ok := strings.Cut(out.String(), "injected-at ")
	micros, err := strconv.ParseInt(strings.Fields(at + " ")[0], 10, 64)
	if !ok || err != nil {
		t.Fatalf("child output has no injection time:\n%s", out.String())
	}
	if lag := woke.Sub(time.UnixMicro(micros)); lag > 500*time.Millisecond {
		t.Errorf("the waiter woke %v after the other process injected the Xid", lag)
	}
}

// TestMIGRewriteKeepsFaults: the shim's MIG mutations keep the fault and
// event records, and what it writes is what nvmlstate.Write writes.
func TestMIGRewriteKeepsFaults(t *testing.T) {
	requireMknod(t)
	root := nvmltest.NewMIGRoot(t, dynamicMIGState())
	if _, err := fault.InjectXid(root, "0", fault.XidRequest{Code: 48}); err != nil {
		t.Fatal(err)
	}
	before := readStateFile(t, root)
	lib := newLib(t)
	initLib(t, lib, root)
	gpu1, _ := lib.DeviceGetHandleByIndex(1)
	info := giProfileInfo(t, gpu1, gonvml.GPU_INSTANCE_PROFILE_1_SLICE)
	if _, ret := gpu1.CreateGpuInstance(&info); ret != gonvml.SUCCESS {
		t.Fatalf("CreateGpuInstance: %v", ret)
	}
	after := readStateFile(t, root)
	if diff := cmp.Diff(before.Faults, after.Faults); diff != "" || len(after.Events) != 2 || !cmp.Equal(before.Events, after.Events) {
		t.Errorf("the MIG rewrite changed the fault records (-before +after):\n%s\nevents %+v", diff, after.Events)
	}
	var want strings.Builder
	if err := nvmlstate.Write(&want, after); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, nvmlstate.RelativePath)); string(got) != want.String() {
		t.Errorf("the shim's rewrite is not nvmlstate.Write's form:\n%s\nwant:\n%s", got, want.String())
	}
}

// TestLostGPUsMIGDevices: the MIG devices of a lost GPU answer
// GPU_IS_LOST too, and lose-mig makes one MIG device vanish after its Xid.
func TestLostGPUsMIGDevices(t *testing.T) {
	s := nvmltest.MIGSampleState()
	root := nvmltest.NewMIGRoot(t, s)
	lib := newLib(t)
	initLib(t, lib, root)
	gpu1, _ := lib.DeviceGetHandleByIndex(1)
	gone, _ := lib.DeviceGetHandleByUUID(s.ComputeInstances[2].UUID) // GI 13, CI 0
	set := eventSet(t, lib, uint64(gonvml.EventTypeXidCriticalError), gpu1)
	if err := fault.LoseMIG(root, s.ComputeInstances[2].UUID, 95); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, set, gonvml.EventData{Device: gpu1, EventType: uint64(gonvml.EventTypeXidCriticalError), EventData: 95,
		GpuInstanceId: 13, ComputeInstanceId: 0})
	if _, ret := gone.GetUUID(); ret != gonvml.ERROR_INVALID_ARGUMENT {
		t.Errorf("GetUUID of the vanished MIG device = %v, want INVALID_ARGUMENT (as after a destroy)", ret)
	}
	if n, _ := gpu1.GetMaxMigDeviceCount(); n == 0 {
		t.Error("GPU 1 lost its MIG geometry")
	}
	mig, ret := lib.DeviceGetHandleByUUID(s.ComputeInstances[0].UUID)
	if ret != gonvml.SUCCESS {
		t.Fatal(ret)
	}
	if err := fault.Lose(root, s.GPUs[1].UUID); err != nil {
		t.Fatal(err)
	}
	if _, ret := mig.GetUUID(); ret != gonvml.ERROR_GPU_IS_LOST {
		t.Errorf("GetUUID of a lost GPU's MIG device = %v, want GPU_IS_LOST", ret)
	}
	if _, _, ret := gpu1.GetMigMode(); ret != gonvml.ERROR_GPU_IS_LOST {
		t.Errorf("GetMigMode of the lost GPU = %v, want GPU_IS_LOST", ret)
	}
}

// TestWaiterWokenBeforeTheBump: a writer renames the new state file in
// before it bumps the generation. A waiter woken by the rename in between
// must read the new file anyway (it is another file), deliver its event
// once, and, after the late bump, read again without delivering it twice.
func TestWaiterWokenBeforeTheBump(t *testing.T) {
	s := nvmltest.SampleState()
	root := nvmltest.NewRoot(t, s)
	lib := newLib(t)
	initLib(t, lib, root)
	gpu0, _ := lib.DeviceGetHandleByIndex(0)
	set := eventSet(t, lib, uint64(gonvml.EventTypeXidCriticalError), gpu0)
	path := filepath.Join(root, filepath.FromSlash(nvmlstate.RelativePath))
	renamed := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond) // the waiter is blocked on inotify by now
		next, err := nvmlstate.ReadFile(path)
		if err != nil {
			renamed <- err
			return
		}
		next.AppendEvent(nvmlstate.Event{Type: nvmlstate.EventXid, GPU: s.GPUs[0].Minor, GI: nvmlstate.NoInstance,
			CI: nvmlstate.NoInstance, Data: 31, Time: 1})
		var buf strings.Builder
		if err := nvmlstate.Write(&buf, next); err != nil {
			renamed <- err
			return
		}
		if err := os.WriteFile(path+".next", []byte(buf.String()), 0o644); err != nil {
			renamed <- err
			return
		}
		renamed <- os.Rename(path+".next", path) // no bump yet
	}()
	wantEvent(t, set, gonvml.EventData{Device: gpu0, EventType: uint64(gonvml.EventTypeXidCriticalError), EventData: 31,
		GpuInstanceId: noInstance, ComputeInstanceId: noInstance})
	if err := <-renamed; err != nil {
		t.Fatal(err)
	}
	if err := nvmlstate.BumpGeneration(root); err != nil {
		t.Fatal(err)
	}
	if n, ret := lib.DeviceGetCount(); ret != gonvml.SUCCESS || n != len(s.GPUs) {
		t.Errorf("DeviceGetCount after the late bump = %d, %v", n, ret)
	}
	wantTimeout(t, set, 200*time.Millisecond)
}
