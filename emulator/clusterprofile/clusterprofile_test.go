package clusterprofile

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"drakit.dev/drakit/internal/tpuhw"
)

// wantLine returns the text after prefix on the file's first line.
func wantLine(t *testing.T, file, prefix string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	want, ok := strings.CutPrefix(first, prefix)
	if !ok {
		t.Fatalf("%s: first line is not %q…", file, prefix)
	}
	return want
}

func loadResolve(nameOrPath string) (*Cluster, error) {
	src, err := Load(nameOrPath)
	if err != nil {
		return nil, err
	}
	return Resolve(src)
}

func nodeNames(c *Cluster) []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.Name)
	}
	return out
}

func TestValidFiles(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/valid-*.yaml")
	if len(files) == 0 {
		t.Fatal("no valid-*.yaml")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			want := strings.Fields(wantLine(t, file, "# want nodes: "))
			c, err := loadResolve(file)
			if err != nil {
				t.Fatal(err)
			}
			if got := nodeNames(c); !slices.Equal(got, want) {
				t.Errorf("nodes %v, want %v", got, want)
			}
		})
	}
}

func TestInvalidFiles(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/invalid-*.yaml")
	if len(files) == 0 {
		t.Fatal("no invalid-*.yaml")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			want := wantLine(t, file, "# want: ")
			_, err := loadResolve(file)
			if err == nil {
				t.Fatalf("no error, want %q", want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error does not wrap ErrInvalid: %v", err)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error\n%v\ndoes not contain\n%s", err, want)
			}
		})
	}
}

func TestExplicit(t *testing.T) {
	t.Parallel()
	c, err := loadResolve("testdata/valid-explicit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n17, _ := c.Node("rack-3-node-17")
	n18, _ := c.Node("rack-3-node-18")
	if d := n17.Profile.Spec.NVLink.Domain; d == nil || d.CliqueID != 7 || d.ClusterUUID != "00000000-1111-2222-3333-444444444444" {
		t.Errorf("rack-3-node-17 domain %+v, want clique 7", d)
	}
	if d := n18.Profile.Spec.NVLink.Domain; d == nil || d.CliqueID != 8 {
		t.Errorf("rack-3-node-18 domain %+v, want clique 8", d)
	}
	if n17.Rack != "rack-3" || n17.Profile.Spec.UUIDSeed != "rack-3-node-17" {
		t.Errorf("rack-3-node-17: rack %q, uuidSeed %q", n17.Rack, n17.Profile.Spec.UUIDSeed)
	}
	if n17.Profile.Spec.GPUs[0].UUID == n18.Profile.Spec.GPUs[0].UUID {
		t.Errorf("two nodes share GPU UUID %s", n17.Profile.Spec.GPUs[0].UUID)
	}
	if got := c.Cliques[0].Nodes; !slices.Equal(got, []string{"rack-3-node-19", "rack-3-node-17"}) {
		t.Errorf("clique 7 nodes %v", got)
	}
	t1, _ := c.Node("tpu-1")
	if s := t1.Profile.Spec.TPU.Slice; s == nil || s.Name != "pair" || s.WorkerID != 0 || s.Topology != "2x2x2" {
		t.Errorf("tpu-1 slice %+v, want pair worker 0", s)
	}
	t0, _ := c.Node("tpu-0")
	if s := t0.Profile.Spec.TPU.Slice; s == nil || s.WorkerID != 1 {
		t.Errorf("tpu-0 slice %+v, want worker 1", s)
	}
	if t0.Profile.Spec.NVLink != nil || t0.Rack != "" {
		t.Errorf("tpu-0: nvlink %+v rack %q", t0.Profile.Spec.NVLink, t0.Rack)
	}
}

func TestSplit(t *testing.T) {
	t.Parallel()
	c, err := loadResolve("testdata/valid-split.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var racks []string
	var ids []uint32
	for _, n := range c.Nodes {
		racks = append(racks, n.Rack)
		ids = append(ids, n.Profile.Spec.NVLink.Domain.CliqueID)
	}
	if want := []string{"r0", "r0", "r1", "r1", "r2", "r2"}; !slices.Equal(racks, want) {
		t.Errorf("racks %v, want %v", racks, want)
	}
	if want := []uint32{10, 10, 10, 11, 11, 11}; !slices.Equal(ids, want) {
		t.Errorf("clique IDs %v, want %v", ids, want)
	}
	if len(c.Cliques) != 2 || c.Cliques[1].Identity() != "00000000-1111-2222-3333-555555555555.11" {
		t.Errorf("cliques %+v", c.Cliques)
	}
}

func TestBuiltins(t *testing.T) {
	t.Parallel()
	if want := []string{"conformance-fabric", "nvl72", "scale-1000", "tpu-v5p-4x4x4"}; !slices.Equal(BuiltinNames(), want) {
		t.Errorf("BuiltinNames %v, want %v", BuiltinNames(), want)
	}
	if _, err := Load("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown built-in: %v, want ErrNotFound", err)
	}
	tests := []struct {
		name                  string
		nodes, gpus, cliques  int
		slices, imexPerClique int
	}{
		{"conformance-fabric", 4, 16, 2, 1, 8},
		{"nvl72", 18, 72, 1, 0, 8},
		{"tpu-v5p-4x4x4", 16, 0, 0, 1, 0},
		{"scale-1000", 1000, 954*4 + 14*8, 53, 2, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := loadResolve(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			gpus := 0
			uuids := map[string]string{}
			for _, n := range c.Nodes {
				gpus += len(n.Profile.Spec.GPUs)
				for _, g := range n.Profile.Spec.GPUs {
					if other, ok := uuids[g.UUID]; ok {
						t.Fatalf("GPU UUID %s on %s and %s", g.UUID, other, n.Name)
					}
					uuids[g.UUID] = n.Name
				}
			}
			if len(c.Nodes) != tt.nodes || gpus != tt.gpus || len(c.Cliques) != tt.cliques || len(c.Slices) != tt.slices {
				t.Errorf("%d nodes, %d GPUs, %d cliques, %d slices; want %d, %d, %d, %d",
					len(c.Nodes), gpus, len(c.Cliques), len(c.Slices), tt.nodes, tt.gpus, tt.cliques, tt.slices)
			}
			for _, cl := range c.Cliques {
				n, _ := c.Node(cl.Nodes[0])
				if n.Profile.Spec.NVLink.IMEXChannels != tt.imexPerClique {
					t.Errorf("clique %d: %d IMEX channels per node", cl.ID, n.Profile.Spec.NVLink.IMEXChannels)
				}
			}
		})
	}
}

// TestConformanceFabric checks the builtin against the fabric contract's
// last section.
func TestConformanceFabric(t *testing.T) {
	t.Parallel()
	c, err := loadResolve("conformance-fabric")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"}; !slices.Equal(nodeNames(c), want) {
		t.Fatalf("nodes %v, want %v", nodeNames(c), want)
	}
	uuid := ""
	for i, n := range c.Nodes {
		p := n.Profile
		if len(p.Spec.GPUs) != 4 || p.Spec.GPUs[0].Architecture != "Blackwell" {
			t.Errorf("%s: %d GPUs of %s, want 4 Blackwell", n.Name, len(p.Spec.GPUs), p.Spec.GPUs[0].Architecture)
		}
		nv := p.Spec.NVLink
		if nv.Version != 5 || nv.LinksPerGPU != 18 || nv.NVSwitches != 0 || nv.IMEXChannels != 8 {
			t.Errorf("%s: nvlink %+v", n.Name, nv)
		}
		if uuid == "" {
			uuid = nv.Domain.ClusterUUID
		}
		if want := uint32(1 + i/2); nv.Domain.CliqueID != want || nv.Domain.ClusterUUID != uuid {
			t.Errorf("%s: domain %+v, want clique %d of %s", n.Name, nv.Domain, want, uuid)
		}
		tp := p.Spec.TPU
		if tp.Generation != "v5p" || tp.ChipBounds != "2x2x1" || tp.Slice.Name != "torus-a" || tp.Slice.Topology != "2x2x4" || tp.Slice.WorkerID != i {
			t.Errorf("%s: tpu %+v slice %+v", n.Name, tp, tp.Slice)
		}
		if o := c.Slices[0].Geometry.HostOrigin(i); o != (tpuhw.Coord{X: 0, Y: 0, Z: i}) || c.Slices[0].Hosts[i] != n.Name {
			t.Errorf("%s: host origin %+v, want z=%d (stacked along z)", n.Name, o, i)
		}
	}
}
