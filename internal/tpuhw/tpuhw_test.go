package tpuhw

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

func mustBounds(t *testing.T, s string) Bounds {
	t.Helper()
	b, err := ParseBounds(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseBounds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Bounds
		err  string
	}{
		{in: "2x2x1", want: Bounds{2, 2, 1}},
		{in: "4x4x4", want: Bounds{4, 4, 4}},
		{in: "2x4", want: Bounds{2, 4, 1}},
		{in: "16x16x24", want: Bounds{16, 16, 24}},
		{in: "", err: "want XxYxZ"},
		{in: "4", err: "want XxYxZ"},
		{in: "1x2x3x4", err: "want XxYxZ"},
		{in: "2X2X1", err: "want XxYxZ"},
		{in: "0x2x2", err: "size 0 of dimension x must be 1..64"},
		{in: "2x65x1", err: "size 65 of dimension y must be 1..64"},
		{in: "2x2x-1", err: `size "-1" of dimension z is not a decimal number`},
		{in: "2x+2x1", err: "not a decimal number"},
		{in: "02x2x1", err: "not a decimal number"},
		{in: "2xx1", err: "not a decimal number"},
		{in: "a x4x4", err: "not a decimal number"},
		{in: "64x64x64", err: "262144 chips, more than 8192"},
	} {
		got, err := ParseBounds(tc.in)
		if tc.err != "" {
			if err == nil || !errors.Is(err, ErrBounds) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseBounds(%q) = %v, %v; want error containing %q wrapping ErrBounds", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseBounds(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParseBounds(f *testing.F) {
	for _, s := range []string{"2x2x1", "4x4x4", "2x4", "0x1x1", "x", "99999999999999999999x1x1", "1x1x1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBounds(s)
		if err != nil {
			if !errors.Is(err, ErrBounds) {
				t.Fatalf("ParseBounds(%q): error %v does not wrap ErrBounds", s, err)
			}
			return
		}
		if b.X < 1 || b.Y < 1 || b.Z < 1 || b.Chips() > MaxChips {
			t.Fatalf("ParseBounds(%q) = %v out of range", s, b)
		}
		again, err := ParseBounds(b.String())
		if err != nil || again != b {
			t.Fatalf("ParseBounds(%q) = %v, but its String %q parses to %v, %v", s, b, b.String(), again, err)
		}
	})
}

func TestNeighbours(t *testing.T) {
	for _, tc := range []struct {
		torus string
		c     Coord
		want  []Coord
	}{
		// 4x4x4: every dimension wraps, six neighbours everywhere.
		{"4x4x4", Coord{0, 0, 0}, []Coord{{1, 0, 0}, {3, 0, 0}, {0, 1, 0}, {0, 3, 0}, {0, 0, 1}, {0, 0, 3}}},
		{"4x4x4", Coord{1, 2, 3}, []Coord{{1, 2, 2}, {1, 1, 3}, {0, 2, 3}, {2, 2, 3}, {1, 3, 3}, {1, 2, 0}}},
		// 2x2x4: x and y are single links, z wraps.
		{"2x2x4", Coord{0, 0, 0}, []Coord{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0, 0, 3}}},
		{"2x2x4", Coord{1, 1, 3}, []Coord{{1, 1, 0}, {1, 0, 3}, {0, 1, 3}, {1, 1, 2}}},
		// 2x2x1: no links in z.
		{"2x2x1", Coord{0, 1, 0}, []Coord{{0, 0, 0}, {1, 1, 0}}},
		// 1x1x1: alone.
		{"1x1x1", Coord{0, 0, 0}, nil},
		// 3x1x1: a ring of three.
		{"3x1x1", Coord{0, 0, 0}, []Coord{{1, 0, 0}, {2, 0, 0}}},
	} {
		b := mustBounds(t, tc.torus)
		got := b.Neighbours(tc.c)
		want := slices.Clone(tc.want)
		slices.SortFunc(want, func(p, q Coord) int { return b.Index(p) - b.Index(q) })
		if !slices.Equal(got, want) {
			t.Errorf("%s.Neighbours(%v) = %v, want %v", tc.torus, tc.c, got, want)
		}
	}
}

func TestPlacements(t *testing.T) {
	for _, tc := range []struct {
		torus, shape string
		want         int
		first, last  string
	}{
		{"4x4x4", "2x2x2", 64, "2x2x2@0,0,0", "2x2x2@3,3,3"},
		{"4x4x4", "2x2x1", 64, "2x2x1@0,0,0", "2x2x1@3,3,3"},
		{"4x4x4", "2x2x4", 16, "2x2x4@0,0,0", "2x2x4@3,3,0"},
		{"4x4x4", "4x4x4", 1, "4x4x4@0,0,0", "4x4x4@0,0,0"},
		{"4x4x4", "8x1x1", 0, "", ""},
		{"2x2x4", "2x2x2", 4, "2x2x2@0,0,0", "2x2x2@0,0,3"},
		{"2x2x4", "2x2x4", 1, "2x2x4@0,0,0", "2x2x4@0,0,0"},
		{"2x2x4", "1x1x1", 16, "1x1x1@0,0,0", "1x1x1@1,1,3"},
		{"2x2x4", "4x4x4", 0, "", ""},
		{"2x2x4", "1x2x1", 8, "1x2x1@0,0,0", "1x2x1@1,0,3"},
	} {
		b, shape := mustBounds(t, tc.torus), mustBounds(t, tc.shape)
		got := b.Placements(shape)
		if len(got) != tc.want {
			t.Errorf("%s.Placements(%s): %d, want %d", tc.torus, tc.shape, len(got), tc.want)
			continue
		}
		if tc.want > 0 && (got[0].String() != tc.first || got[len(got)-1].String() != tc.last) {
			t.Errorf("%s.Placements(%s): first %s last %s, want %s and %s", tc.torus, tc.shape, got[0], got[len(got)-1], tc.first, tc.last)
		}
		for _, p := range got {
			cs := p.Coords(b)
			if !b.IsSubTorus(cs, shape) || !b.Connected(cs) {
				t.Errorf("%s: placement %s (%v) is not a connected sub-torus", tc.torus, p, cs)
			}
		}
	}
}

func TestWrappedPlacementCoords(t *testing.T) {
	b := mustBounds(t, "2x2x4")
	p := Placement{Origin: Coord{0, 0, 3}, Shape: Bounds{2, 2, 2}}
	got := p.Coords(b)
	want := []Coord{{0, 0, 3}, {1, 0, 3}, {0, 1, 3}, {1, 1, 3}, {0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}}
	if !slices.Equal(got, want) {
		t.Errorf("%s.Coords = %v, want %v", p, got, want)
	}
}

func TestConnectedAndSubTorus(t *testing.T) {
	b := mustBounds(t, "2x2x4")
	shape := Bounds{2, 2, 2}
	planes := func(zs ...int) []Coord {
		var out []Coord
		for _, z := range zs {
			out = append(out, Coord{0, 0, z}, Coord{1, 0, z}, Coord{0, 1, z}, Coord{1, 1, z})
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		coords    []Coord
		connected bool
		subTorus  bool
	}{
		{"planes 0,1", planes(0, 1), true, true},
		{"planes 3,0 around the wrap", planes(3, 0), true, true},
		{"planes 0,2 apart", planes(0, 2), false, false},
		{"planes 0,1 with a chip twice", append(planes(0, 1)[:7], Coord{0, 0, 0}), true, false},
		{"one plane", planes(1), true, false},
		{"outside", append(planes(0)[:3], Coord{2, 0, 0}), false, false},
		{"empty", nil, false, false},
	} {
		if got := b.Connected(tc.coords); got != tc.connected {
			t.Errorf("%s: Connected = %v, want %v", tc.name, got, tc.connected)
		}
		if got := b.IsSubTorus(tc.coords, shape); got != tc.subTorus {
			t.Errorf("%s: IsSubTorus = %v, want %v", tc.name, got, tc.subTorus)
		}
	}
	// In a 2x2x2 torus z does not wrap: a 2x2x1 placement has two origins,
	// not a third around the wrap.
	small := mustBounds(t, "2x2x2")
	if got := len(small.Placements(Bounds{2, 2, 1})); got != 2 {
		t.Errorf("2x2x2.Placements(2x2x1) = %d, want 2", got)
	}
}

func TestSliceTiling(t *testing.T) {
	s, err := NewSlice(Bounds{4, 4, 4}, Bounds{2, 2, 1})
	if err != nil {
		t.Fatal(err)
	}
	if s.Hosts() != 16 || s.HostBounds() != (Bounds{2, 2, 4}) {
		t.Fatalf("hosts %d of %v, want 16 of 2x2x4", s.Hosts(), s.HostBounds())
	}
	for _, tc := range []struct {
		worker, index int
		want          Coord
	}{
		{0, 0, Coord{0, 0, 0}}, {0, 3, Coord{1, 1, 0}}, {1, 0, Coord{2, 0, 0}},
		{2, 1, Coord{1, 2, 0}}, {3, 2, Coord{2, 3, 0}}, {4, 0, Coord{0, 0, 1}}, {15, 3, Coord{3, 3, 3}},
	} {
		got := s.ChipCoord(tc.worker, tc.index)
		if got != tc.want {
			t.Errorf("ChipCoord(%d, %d) = %v, want %v", tc.worker, tc.index, got, tc.want)
		}
		if w, i := s.Locate(got); w != tc.worker || i != tc.index {
			t.Errorf("Locate(%v) = %d, %d; want %d, %d", got, w, i, tc.worker, tc.index)
		}
	}
	// Hosts tile x, then y, then z; together they cover every chip once.
	for worker, want := range map[int]Coord{1: {2, 0, 0}, 2: {0, 2, 0}, 15: {2, 2, 3}} {
		if got := s.HostOrigin(worker); got != want {
			t.Errorf("HostOrigin(%d) = %v, want %v", worker, got, want)
		}
	}
	covered := map[Coord]bool{}
	for w := range s.Hosts() {
		for i := range s.ChipBounds.Chips() {
			covered[s.ChipCoord(w, i)] = true
		}
	}
	if len(covered) != s.Topology.Chips() {
		t.Errorf("%d hosts of %d chips cover %d coordinates, want %d", s.Hosts(), s.ChipBounds.Chips(), len(covered), s.Topology.Chips())
	}
	p := Placement{Origin: Coord{2, 2, 3}, Shape: Bounds{2, 2, 2}}
	if got := s.HostsOf(p); !slices.Equal(got, []int{3, 15}) {
		t.Errorf("HostsOf(%s) = %v, want [3 15]", p, got)
	}
	if !s.HostAligned(p) || s.HostAligned(Placement{Origin: Coord{1, 0, 0}, Shape: Bounds{2, 2, 2}}) {
		t.Errorf("HostAligned wrong")
	}
	if got := s.ChipsOn(Placement{Origin: Coord{1, 0, 0}, Shape: Bounds{2, 2, 1}}, 1); !slices.Equal(got, []int{0, 2}) {
		t.Errorf("ChipsOn = %v, want [0 2]", got)
	}
	if _, err := NewSlice(Bounds{4, 4, 4}, Bounds{3, 1, 1}); !errors.Is(err, ErrSlice) {
		t.Errorf("NewSlice(4x4x4, 3x1x1) = %v, want ErrSlice", err)
	}
}

func TestGenerations(t *testing.T) {
	for _, tc := range []struct {
		name string
		id   uint16
		vfio bool
	}{{"v4", 0x005e, false}, {"v5e", 0x0063, true}, {"v5p", 0x0062, true}, {"v6e", 0x006f, true}} {
		g, ok := LookupGeneration(tc.name)
		if !ok || g.DeviceID != tc.id || g.VFIO != tc.vfio {
			t.Errorf("LookupGeneration(%s) = %+v, %v", tc.name, g, ok)
		}
		if back, ok := GenerationForDevice(tc.id); !ok || back.Name != tc.name {
			t.Errorf("GenerationForDevice(%#x) = %+v, %v", tc.id, back, ok)
		}
	}
	if _, ok := GenerationForDevice(0x1234); ok {
		t.Error("GenerationForDevice(0x1234) found a generation")
	}
}

func TestHostFileRoundTrip(t *testing.T) {
	s, _ := NewSlice(Bounds{2, 2, 4}, Bounds{2, 2, 1})
	f := &HostFile{APIVersion: HostFileVersion, Generation: "v5p", Slice: "torus-a", Topology: "2x2x4", ChipBounds: "2x2x1", WorkerID: 2}
	for i := range 4 {
		c := s.ChipCoord(2, i)
		f.Chips = append(f.Chips, Chip{Index: i, X: c.X, Y: c.Y, Z: c.Z, PCIAddress: "0000:41:00.0", IOMMUGroup: 10 + i,
			Accel: AccelPath(i), VFIO: VFIOGroupPath(10 + i)})
	}
	var buf bytes.Buffer
	if err := WriteHostFile(&buf, f); err != nil {
		t.Fatal(err)
	}
	got, err := ReadHostFile(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := got.ChipByDevice("/dev/vfio/13"); !ok || c.Coord() != (Coord{1, 1, 2}) {
		t.Errorf("ChipByDevice(/dev/vfio/13) = %+v, %v", c, ok)
	}
	bad := strings.Replace(buf.String(), `"z": 2`, `"z": 3`, 1)
	if _, err := ReadHostFile([]byte(bad)); !errors.Is(err, ErrHostFile) || !strings.Contains(err.Error(), "want 0,0,2") {
		t.Errorf("ReadHostFile(moved chip) = %v", err)
	}
	unknown := strings.Replace(buf.String(), `"workerID"`, `"worker": 1, "workerID"`, 1)
	if _, err := ReadHostFile([]byte(unknown)); !errors.Is(err, ErrHostFile) {
		t.Errorf("ReadHostFile(unknown field) = %v", err)
	}
}

func TestTPUEnvRoundTrip(t *testing.T) {
	s, _ := NewSlice(Bounds{2, 2, 4}, Bounds{2, 2, 1})
	e := TPUEnv{Generation: "v5p", SliceName: "torus-a", Slice: s, WorkerID: 3}
	text := FormatTPUEnv(e)
	for _, want := range []string{"ACCELERATOR_TYPE: 'v5p-16'\n", "CHIPS_PER_HOST_BOUNDS: '2,2,1'\n", "HOST_BOUNDS: '1,1,4'\n", "TOPOLOGY: '2x2x4'\n", "WORKER_ID: '3'\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("tpu-env lacks %q:\n%s", want, text)
		}
	}
	got, err := ParseTPUEnv(text)
	if err != nil || got != e {
		t.Errorf("ParseTPUEnv = %+v, %v; want %+v", got, err, e)
	}
	for _, bad := range []string{
		strings.Replace(text, "'3'", "'4'", 1),
		strings.Replace(text, "v5p-16", "tpu-16", 1),
		strings.Replace(text, "'2,2,1'", "'3,2,1'", 1),
		"TOPOLOGY 2x2x4\n",
	} {
		if _, err := ParseTPUEnv(bad); !errors.Is(err, ErrTPUEnv) {
			t.Errorf("ParseTPUEnv(%q) = %v, want ErrTPUEnv", bad, err)
		}
	}
}
