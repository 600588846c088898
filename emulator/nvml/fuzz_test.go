package nvml_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"

	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/nvmlstate"
)

// FuzzStateFile feeds arbitrary bytes to the shim as its state file and
// drives it through go-nvml, in this process: init, enumerate every getter,
// shut down. The shim must never crash, and it must agree with the reference
// reader: it initialises exactly when nvmlstate.Parse accepts the bytes, and
// then reports exactly what the parsed state says. Without -fuzz only the
// seed corpus runs.
func FuzzStateFile(f *testing.F) {
	root := f.TempDir()
	visible := func(minor int) bool { return minor%4 != 3 }
	for minor := 0; minor <= 254; minor++ {
		if visible(minor) {
			nvmltest.CreateDeviceNode(f, root, minor)
		}
	}
	statePath := filepath.Join(root, filepath.FromSlash(nvmlstate.RelativePath))
	if err := os.MkdirAll(filepath.Dir(statePath), 0o755); err != nil {
		f.Fatal(err)
	}
	f.Setenv(nvmltest.RootEnv, root)
	lib := newLib(f)

	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(statePath, data, 0o644); err != nil {
			t.Fatal(err)
		}
		state, perr := nvmlstate.Parse(bytes.NewReader(data))
		ret := lib.Init()
		if ret == gonvml.SUCCESS {
			defer func() {
				if ret := lib.Shutdown(); ret != gonvml.SUCCESS {
					t.Errorf("Shutdown: %v", ret)
				}
			}()
		}
		switch {
		case perr != nil && ret == gonvml.SUCCESS:
			t.Fatalf("shim accepted a state file nvmlstate.Parse rejects (%v)", perr)
		case perr != nil:
			return
		case ret != gonvml.SUCCESS:
			t.Fatalf("nvmlstate.Parse accepts the state file, shim Init = %v", ret)
		}
		wantSys, wantGPUs := wantView(state, visible)
		gotSys, gotGPUs := observeView(t, lib)
		if diff := cmp.Diff(wantSys, gotSys); diff != "" {
			t.Errorf("system (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(wantGPUs, gotGPUs); diff != "" {
			t.Errorf("GPUs (-want +got):\n%s", diff)
		}
	})
}

// faultSampleState is MIGSampleState with a fault record on GPUs 3 and 1
// and three events (one of a MIG device).
func faultSampleState() *nvmlstate.State {
	s := nvmltest.MIGSampleState()
	s.Faults = []nvmlstate.Fault{
		{GPU: 1, SBEVolatile: 3, DBEVolatile: 1, SBEAggregate: 7, DBEAggregate: 2, RetiredDBE: 2, RetiredPending: true,
			RemappedCorrectable: 4, RemapPending: true, RecoveryAction: nvmlstate.RecoveryGPUReset, Temperature: 35},
		{GPU: 3, SBEVolatile: 9, SBEAggregate: 9, RetiredSBE: 1, RecoveryAction: nvmlstate.RecoveryDrainAndReset,
			ClocksEventReasons: 0x48, Temperature: 91},
	}
	s.Events = []nvmlstate.Event{
		{Seq: 1, Type: nvmlstate.EventXid, GPU: 0, GI: nvmlstate.NoInstance, CI: nvmlstate.NoInstance, Data: 48, Time: 1764000000000000},
		{Seq: 2, Type: nvmlstate.EventDBE, GPU: 0, GI: nvmlstate.NoInstance, CI: nvmlstate.NoInstance, Data: 1, Time: 1764000000000001},
		{Seq: 7, Type: nvmlstate.EventXid, GPU: 1, GI: 1, CI: 1, Data: 94, Time: 1764000000000002},
	}
	return s
}

// fabricSampleState is SampleState with NVLink records: the H100s linked
// directly (links 0..1) and to a switch (link 2, inactive), the L4 with
// none; fabric records on GPUs 0 and 1 (completed, degraded), a peer record
// per pair.
func fabricSampleState() *nvmlstate.State {
	s := nvmltest.SampleState()
	s.NVLinks = []nvmlstate.NVLink{
		{GPU: 0, Link: 0, Active: true, Version: 6, RemoteType: nvmlstate.RemoteGPU, RemoteBusID: "00000000:43:00.0", RemotePCIDeviceID: 0x233010DE},
		{GPU: 0, Link: 1, Active: true, Version: 6, RemoteType: nvmlstate.RemoteGPU, RemoteBusID: "00000000:43:00.0", RemotePCIDeviceID: 0x233010DE},
		{GPU: 0, Link: 17, Version: 6, RemoteType: nvmlstate.RemoteSwitch, RemoteBusID: "0000FFFF:11:00.0", RemotePCIDeviceID: 0x22A310DE},
		{GPU: 1, Link: 0, Active: true, Version: 7, RemoteType: nvmlstate.RemoteGPU, RemoteBusID: "00000000:1B:00.0", RemotePCIDeviceID: 0x233010DE},
	}
	s.Fabrics = []nvmlstate.Fabric{
		{GPU: 1, ClusterUUID: "6a1c2f0e-93b4-4d57-8e21-0c7f5a9d3b11", CliqueID: 4294967295, State: nvmlstate.FabricCompleted, HealthMask: 0x1A9},
		{GPU: 0, ClusterUUID: "6a1c2f0e-93b4-4d57-8e21-0c7f5a9d3b11", CliqueID: 1, State: nvmlstate.FabricInProgress, Status: -1},
	}
	s.Peers = []nvmlstate.Peer{{GPU: 0, Peer: 1, Ancestor: 50, NVLink: true}, {GPU: 3, Peer: 1, Ancestor: 30}, {GPU: 0, Peer: 3, Ancestor: 40}}
	return s
}

// manyEvents is SampleState with n Xid events on GPU 0.
func manyEvents(n int) *nvmlstate.State {
	s := nvmltest.SampleState()
	for i := 0; i < n; i++ {
		s.AppendEvent(nvmlstate.Event{Type: nvmlstate.EventXid, GI: nvmlstate.NoInstance, CI: nvmlstate.NoInstance, Data: 13})
	}
	return s
}

func fuzzSeeds(f *testing.F) [][]byte {
	write := func(s *nvmlstate.State) string {
		var b bytes.Buffer
		if err := nvmlstate.Write(&b, s); err != nil {
			f.Fatal(err)
		}
		return b.String()
	}
	good := write(nvmltest.SampleState())
	edge := nvmltest.SampleState()
	edge.System.DriverVersion = "1.2.3.4"
	edge.System.NVMLVersion = strings.Repeat("9", 77) + ".1" // 79 bytes: the longest version allowed
	edge.System.CUDADriverVersion = 1<<31 - 1
	edge.GPUs[0].Name = "A\x00B"
	edge.GPUs[0].NUMANode = -1 << 31
	edge.GPUs[0].Architecture = -1
	edge.GPUs[1].BusID = "0000FFFF:00:1F.7"
	edge.GPUs[1].MIGMode = 1
	edge.GPUs[1].Brand = 1<<31 - 1
	edge.GPUs[2].Minor = 254
	edge.GPUs[2].BusID = "10000000:00:00.0"
	many := &nvmlstate.State{System: edge.System}
	for minor := 0; minor <= 254; minor++ {
		g := nvmltest.SampleState().GPUs[0]
		g.Minor = minor
		g.UUID = strings.Replace(g.UUID, "5d8b4c1a", fmt.Sprintf("5d8b4c%02x", minor), 1)
		g.BusID = fmt.Sprintf("00000000:%02X:00.0", minor)
		many.GPUs = append(many.GPUs, g)
	}
	mig := write(nvmltest.MIGSampleState())
	faulty := write(faultSampleState())
	fabric := write(fabricSampleState())
	migLines := strings.Split(strings.TrimSuffix(mig, "\n"), "\n")
	end := migLines[len(migLines)-1] + "\n"
	lastCI := migLines[len(migLines)-2]
	seeds := []string{
		good,
		mig,
		strings.Replace(mig, "placements=0,1,2,3,4,5,6", "placements=0x0,1,2,3,4,5,0x6", 1),
		strings.Replace(mig, "placements=0,1,2,3,4,5,6", "placements=0,1,2,3,4,5,6,", 1),
		strings.Replace(mig, "placements=0,1,2,3,4,5,6", "placements=,0", 1),
		strings.Replace(mig, "placements=0,1,2,3,4,5,6", "placements=1,0", 1),
		strings.Replace(mig, "placements=0,1,2,3,4,5,6", "placements=0,1,2,3,4,5,6,7", 1),
		strings.Replace(mig, "maxDevices=7", "maxDevices=9", 1),
		strings.Replace(mig, "memorySlices=8", "memorySlices=0", 1),
		strings.Replace(mig, "gi\tgpu=1\tid=13\tprofile=19\tstart=2", "gi\tgpu=1\tid=13\tprofile=19\tstart=5", 1),
		strings.Replace(mig, "capMinor=147", "capMinor=148", 1),
		strings.Replace(mig, "capMinor=149", "capMinor=150", 1),
		strings.Replace(mig, "id=1\tprofile=0\tstart=2", "id=1\tprofile=0\tstart=1", 1),
		strings.Replace(mig, "id=1\tprofile=0\tstart=2", "id=8\tprofile=0\tstart=2", 1),
		strings.Replace(mig, "migMode=1", "migMode=0", 2),
		strings.Replace(mig, "\tp2p=0", "\tp2p=2", 1),
		strings.Replace(mig, "\tsms=", "\tsms=-", 1),
		strings.Replace(mig, "memoryMB=", "memoryMB=0", 1),
		strings.Replace(mig, "uuid=MIG-5c", "uuid=MIG-5C", 1),
		beforeEnd(mig, lastCI+"\n"),
		beforeEnd(mig, strings.Replace(lastCI, "id=0", "id=1", 1)+"\n"),
		beforeEnd(mig, "mig\tgpu=3\tmaxDevices=7\tmemorySlices=8\n"),
		beforeEnd(mig, "mig\tgpu=9\tmaxDevices=7\tmemorySlices=8\n"),
		beforeEnd(mig, "gi\tgpu=0\tid=0\tprofile=0\tstart=0\tsize=8\tcapMinor=3\n"),
		beforeEnd(mig, "gi\tgpu=0\tid=0\tprofile=0\tstart=0\tsize=8\n"),
		strings.Join(append([]string{migLines[0], lastCI}, migLines[1:len(migLines)-2]...), "\n") + "\n" + end,
		// Cut short: a writer that ran out of space or was interrupted.
		strings.TrimSuffix(mig, end),
		mig[:strings.Index(mig, "\ngi\t")+1],
		mig[:strings.Index(mig, "\nci\t")+10],
		mig[:len(mig)-1],
		mig[:len(mig)-2] + "\n",
		// The end record: fields, CRLF, anything after it, a second one.
		strings.TrimSuffix(mig, end) + "end\tchecksum=0\n",
		strings.TrimSuffix(mig, end) + "end\tchecksum\n",
		strings.TrimSuffix(mig, end) + "end\r\n",
		strings.TrimSuffix(mig, end) + "end\r",
		strings.ReplaceAll(mig, "\n", "\r\n"),
		mig + "\n",
		mig + "# trailing comment\n",
		mig + end,
		strings.Replace(mig, "\nmig\t", "\n"+end+"mig\t", 1),
		strings.Replace(strings.TrimSuffix(mig, end), nvmlstate.Header, "drakit-nvml-state v1", 1),
		write(edge),
		write(many),
		// NVLink, fabric and peer records.
		fabric,
		strings.Replace(fabric, "link=17", "link=18", 1),
		strings.Replace(fabric, "link=1\t", "link=0\t", 1),
		strings.Replace(fabric, "version=7", "version=9", 1),
		strings.Replace(fabric, "version=7", "version=0", 1),
		strings.Replace(fabric, "remoteType=2", "remoteType=1", 1),
		strings.Replace(fabric, "remoteBusId=0000FFFF", "remoteBusId=0000ffff", 1),
		strings.Replace(fabric, "remoteBusId=00000000:1B:00.0", "remoteBusId=00000000:43:00.0", 1),
		strings.Replace(fabric, "remoteBusId=00000000:1B:00.0", "remoteBusId=00000000:1C:00.0", 1),
		strings.Replace(fabric, "nvlink\tgpu=1", "nvlink\tgpu=2", 1),
		strings.Replace(fabric, "remotePciDeviceId=0x22A310DE", "remotePciDeviceId=0x122A310DE", 1),
		strings.Replace(fabric, "clusterUuid=6a1c", "clusterUuid=6A1C", 1),
		strings.Replace(fabric, "-0c7f5a9d3b11\tcliqueId=1", "-0c7f5a9d3b1\tcliqueId=1", 1),
		strings.Replace(fabric, "state=2", "state=4", 1),
		strings.Replace(fabric, "state=2", "state=0", 1),
		strings.Replace(fabric, "cliqueId=4294967295", "cliqueId=4294967296", 1),
		strings.Replace(fabric, "fabric\tgpu=0", "fabric\tgpu=1", 1),
		strings.Replace(fabric, "fabric\tgpu=0", "fabric\tgpu=3", 1),
		strings.Replace(fabric, "healthMask=0x1A9", "healthMask=0x1A9\thealthMask=0", 1),
		strings.Replace(fabric, "ancestor=30", "ancestor=35", 1),
		strings.Replace(fabric, "ancestor=30", "ancestor=60", 1),
		strings.Replace(fabric, "peer=1\tancestor=30", "peer=0\tancestor=30", 1),
		strings.Replace(fabric, "peer=1\tancestor=30", "peer=3\tancestor=30", 1),
		strings.Replace(fabric, "peer\tgpu=3\tpeer=1", "peer\tgpu=1\tpeer=0", 1),
		strings.Replace(fabric, "nvlink=1", "nvlink=2", 1),
		strings.Replace(fabric, "\tnvlink=0", "", 1),
		// Fault and event records.
		faulty,
		strings.Replace(faulty, "lost=0", "lost=1", 1),
		strings.Replace(faulty, "lost=0", "lost=2", 1),
		strings.Replace(faulty, "\tgpu=3\tsbeVolatile", "\tgpu=2\tsbeVolatile", 1),
		strings.Replace(faulty, "\tgpu=3\tsbeVolatile", "\tgpu=1\tsbeVolatile", 1),
		strings.Replace(faulty, "sbeAggregate=9", "sbeAggregate=1", 1),
		strings.Replace(faulty, "retiredSbe=1", "retiredSbe=-1", 1),
		strings.Replace(faulty, "recoveryAction=4", "recoveryAction=8", 1),
		strings.Replace(faulty, "recoveryAction=4", "recoveryAction=7", 1),
		strings.Replace(faulty, "clocksEventReasons=0x48", "clocksEventReasons=0x200", 1),
		strings.Replace(faulty, "clocksEventReasons=0x48", "clocksEventReasons=0x1FF", 1),
		strings.Replace(faulty, "temperature=91", "temperature=201", 1),
		strings.Replace(faulty, "temperature=91", "temperature=200", 1),
		strings.Replace(faulty, "\ttemperature=91", "", 1),
		strings.Replace(faulty, "seq=2", "seq=1", 1),
		strings.Replace(faulty, "seq=1", "seq=0", 1),
		strings.Replace(faulty, "seq=2", "seq=18446744073709551615", 1),
		strings.Replace(faulty, "type=dbe", "type=pstate", 1),
		strings.Replace(faulty, "type=dbe", "type=sbe", 1),
		strings.Replace(faulty, "gi=0xFFFFFFFF\tci=0xFFFFFFFF", "gi=0xFFFFFFFF\tci=0x0", 1),
		strings.Replace(faulty, "gi=0x1\tci=0x1", "gi=0xF\tci=0x1", 1),
		strings.Replace(faulty, "gi=0x1\tci=0x1", "gi=0xE\tci=0x8", 1),
		strings.Replace(faulty, "gi=0x1\tci=0x1", "gi=0x1\tci=0xFFFFFFFF", 1),
		strings.Replace(faulty, "gi=0x1\tci=0x1", "gi=0x100000000\tci=0x1", 1),
		strings.Replace(faulty, "\tgpu=1\tgi=0x1", "\tgpu=2\tgi=0x1", 1),
		strings.Replace(faulty, "data=94", "data=-94", 1),
		beforeEnd(good, strings.Repeat("event\tseq=1\ttype=xid\tgpu=0\tgi=0xFFFFFFFF\tci=0xFFFFFFFF\tdata=13\ttime=0\n", 1)),
		write(manyEvents(nvmlstate.MaxEvents)),
		beforeEnd(write(manyEvents(nvmlstate.MaxEvents)), "event\tseq=999\ttype=xid\tgpu=0\tgi=0xFFFFFFFF\tci=0xFFFFFFFF\tdata=13\ttime=0\n"),
		strings.ReplaceAll(good, "\n", "\r\n"),
		strings.TrimSuffix(good, "\n"),
		strings.Replace(good, "minor=1", "minor=0x1", 1),
		strings.Replace(good, "memoryTotal=85520809984", "memoryTotal=0o1_175_140_000_000", 1),
		strings.Replace(good, "ccMinor=0", "ccMinor=-0", 1),
		strings.Replace(good, "ccMinor=0", "ccMinor=+0b1", 1),
		strings.Replace(good, "ccMinor=0", "ccMinor=0_", 1),
		strings.Replace(good, "ccMinor=0", "ccMinor=08", 1),
		strings.Replace(good, "ccMinor=0", "ccMinor=-9223372036854775808", 1),
		strings.Replace(good, "ccMinor=0", "ccMinor=9223372036854775808", 1),
		strings.Replace(good, "pciDeviceId=0x233010DE", "pciDeviceId=4294967295", 1),
		strings.Replace(good, "pciDeviceId=0x233010DE", "pciDeviceId=4294967296", 1),
		strings.Replace(good, "\tbrand=2", "", 1),
		strings.Replace(good, "\tbrand=2", "\tbrand=2\tbrand=2", 1),
		strings.Replace(good, "migCapable=1", "migCapable=0x1", 1),
		strings.Replace(good, "migCapable=1", "migCapable=-1", 1),
		beforeEnd(good, strings.Split(good, "\n")[1]+"\n"),
		beforeEnd(good, "gpu\n"),
		beforeEnd(good, "\tx=1\n"),
		beforeEnd(good, "unknown\tnokey\n"),
		nvmlstate.Header + "\r\r\n" + end,
		nvmlstate.Header + "\n" + end,
		"",
		"\n",
		nvmlstate.Header,
		"end\n",
		"\x00\xff\t=\n\t\t",
	}
	out := make([][]byte, len(seeds))
	for i, s := range seeds {
		out[i] = []byte(s)
	}
	return out
}
