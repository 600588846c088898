package nvmlstate

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// nvlinkSample is sample() with a second GPU, links between them and to a
// switch, a fabric record and their peer record.
func nvlinkSample() *State {
	s := sample()
	g := s.GPUs[0]
	g.Minor, g.UUID, g.BusID = 4, "GPU-0123abcd-0000-1111-2222-333344445556", "00000000:2A:00.0"
	s.GPUs = append(s.GPUs, g)
	s.NVLinks = []NVLink{
		{GPU: 3, Link: 0, Active: true, Version: 6, RemoteType: RemoteGPU, RemoteBusID: "00000000:2A:00.0", RemotePCIDeviceID: 0x233010DE},
		{GPU: 4, Link: 17, Version: 7, RemoteType: RemoteSwitch, RemoteBusID: "0000FFFF:11:00.0", RemotePCIDeviceID: 0x22A310DE},
	}
	s.Fabrics = []Fabric{{GPU: 4, ClusterUUID: "6a1c2f0e-93b4-4d57-8e21-0c7f5a9d3b11", CliqueID: 1, State: FabricCompleted, Status: -1, HealthMask: 0x1AA}}
	s.Peers = []Peer{{GPU: 4, Peer: 3, Ancestor: TopologySingle, NVLink: true}}
	return s
}

func TestNVLinkRoundTrip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := Write(&buf, nvlinkSample()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"nvlink\tgpu=3\tlink=0\tstate=1\tversion=6\tremoteType=0\tremoteBusId=00000000:2A:00.0\tremotePciDeviceId=0x233010DE\n",
		"fabric\tgpu=4\tclusterUuid=6a1c2f0e-93b4-4d57-8e21-0c7f5a9d3b11\tcliqueId=1\tstate=3\tstatus=-1\thealthMask=0x1AA\n",
		"peer\tgpu=4\tpeer=3\tancestor=10\tnvlink=1\n",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("written state lacks %q:\n%s", want, buf.String())
		}
	}
	got, err := Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(nvlinkSample(), got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestNVLinkValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
		edit       func(s *State)
	}{
		{"unknown gpu", "nvlink[0].gpu 9 names no gpu record", func(s *State) { s.NVLinks[0].GPU = 9 }},
		{"link range", "nvlink[1].link 18 out of range 0..17", func(s *State) { s.NVLinks[1].Link = MaxNVLinks }},
		{"link twice", "link 0 of gpu 3 given twice", func(s *State) { s.NVLinks[1].GPU, s.NVLinks[1].Link = 3, 0 }},
		{"version", "nvlink[0].version 9 out of range 1..8", func(s *State) { s.NVLinks[0].Version = 9 }},
		{"remote type", "nvlink[0].remoteType 1 must be 0 (GPU) or 2 (switch)", func(s *State) { s.NVLinks[0].RemoteType = 1 }},
		{"remote bus", "remoteBusId \"0000ffff:11:00.0\" is not", func(s *State) { s.NVLinks[1].RemoteBusID = "0000ffff:11:00.0" }},
		{"remote gpu itself", "remoteBusId \"00000000:1B:00.0\" names no other gpu record", func(s *State) { s.NVLinks[0].RemoteBusID = "00000000:1B:00.0" }},
		{"fabric uuid", "fabric[0].clusterUuid \"6A1C", func(s *State) { s.Fabrics[0].ClusterUUID = strings.ToUpper(s.Fabrics[0].ClusterUUID) }},
		{"fabric state", "fabric[0].state 4 out of range 0..3", func(s *State) { s.Fabrics[0].State = 4 }},
		{"fabric twice", "second fabric record of gpu 4", func(s *State) { s.Fabrics = append(s.Fabrics, s.Fabrics[0]) }},
		{"peer itself", "peer[0]: gpu 4 and peer 4 must name two gpu records", func(s *State) { s.Peers[0].Peer = 4 }},
		{"peer twice", "gpus 3 and 4 given twice", func(s *State) { s.Peers = append(s.Peers, Peer{GPU: 3, Peer: 4, Ancestor: 50}) }},
		{"peer level", "peer[0].ancestor 35 is not a topology level", func(s *State) { s.Peers[0].Ancestor = 35 }},
	} {
		s := nvlinkSample()
		tc.edit(s)
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}
