package nvmlstate

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func sample() *State {
	return &State{
		System: System{DriverVersion: "570.172.08", NVMLVersion: "12.570.172.08", CUDADriverVersion: 12080},
		GPUs: []GPU{{
			Minor: 3, UUID: "GPU-0123abcd-0000-1111-2222-333344445555", Name: "NVIDIA H100 80GB HBM3",
			BusID: "00000000:1B:00.0", PCIDeviceID: 0x233010DE, PCISubSystemID: 0x16C110DE,
			MemoryTotal: 85520809984, MemoryReserved: 567279616, Architecture: 9, Brand: 2,
			CCMajor: 9, CCMinor: 0, NUMANode: 1, MIGCapable: true,
		}},
	}
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sample()); err != nil {
		t.Fatalf("write: %v", err)
	}
	if !strings.HasPrefix(buf.String(), Header+"\n") {
		t.Fatalf("state file does not start with %q:\n%s", Header, buf.String())
	}
	got, err := Parse(&buf)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if diff := cmp.Diff(sample(), got); diff != "" {
		t.Errorf("round trip changed the state (-want +got):\n%s", diff)
	}
}

func TestParseToleratesCommentsUnknownKeysAndRecords(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(buf.String(), "\ngpu\t", "\n# a comment\n\nnvswitch\tid=0\ngpu\tfutureKey=1\t", 1)
	got, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if len(got.GPUs) != 1 || got.GPUs[0].Minor != 3 {
		t.Errorf("got %+v, want the one GPU with minor 3", got.GPUs)
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	valid := func() string {
		var buf bytes.Buffer
		if err := Write(&buf, sample()); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}()
	cases := map[string]struct {
		text string
		want string
	}{
		"empty":            {"", "empty file"},
		"wrong header":     {"drakit-nvml-state v0\n", `line 1: expected "drakit-nvml-state v2"`},
		"version 1":        {strings.Replace(valid, Header, "drakit-nvml-state v1", 1), "a version-1 file, which has no end record: render the root again"},
		"no system":        {Header + "\nend\n", "no system record"},
		"missing field":    {strings.Replace(valid, "\tminor=3", "", 1), "line 3: missing field minor"},
		"not key=value":    {strings.Replace(valid, "minor=3", "minor3", 1), `line 3: field "minor3" is not key=value`},
		"bad integer":      {strings.Replace(valid, "minor=3", "minor=three", 1), `line 3: field minor="three" is not a 32-bit integer`},
		"bad bus id":       {strings.Replace(valid, "busId=00000000:1B:00.0", "busId=0000:1b:00.0", 1), "gpu[0].busId"},
		"bad uuid":         {strings.Replace(valid, "uuid=GPU-", "uuid=MIG-", 1), "gpu[0].uuid"},
		"octal-looking":    {strings.Replace(valid, "minor=3", "minor=03_0", 1), `field minor="03_0" is not a 32-bit integer`},
		"plus sign":        {strings.Replace(valid, "minor=3", "minor=+3", 1), `field minor="+3" is not a 32-bit integer`},
		"int32 range":      {strings.Replace(valid, "architecture=9", "architecture=2147483648", 1), "field architecture"},
		"long version":     {strings.Replace(valid, "driverVersion=570.172.08", "driverVersion=570.172."+strings.Repeat("1", 80), 1), "system.driverVersion"},
		"flag not 0/1":     {strings.Replace(valid, "migCapable=1", "migCapable=2", 1), "line 3: field migCapable=2 must be 0 or 1"},
		"duplicate key":    {strings.Replace(valid, "\tminor=3", "\tminor=3\tminor=4", 1), "line 3: field minor given twice"},
		"two systems":      {strings.Replace(valid, "\ngpu", "\nsystem\tdriverVersion=1.2\tnvmlVersion=1.2\tcudaDriverVersion=1\ngpu", 1), "line 3: second system record"},
		"mig on non-mig":   {strings.Replace(strings.Replace(valid, "migCapable=1", "migCapable=0", 1), "migMode=0", "migMode=1", 1), "not MIG capable"},
		"no end record":    {strings.TrimSuffix(valid, "end\n"), `line 4: end of file before the end record "end": the file is truncated`},
		"cut mid-line":     {valid[:len(valid)-20], "line 3: no newline at the end of the file: the file is truncated"},
		"no final newline": {strings.TrimSuffix(valid, "\n"), "line 4: no newline at the end of the file: the file is truncated"},
		"after the end":    {valid + "# a comment\n", "line 5: content after the end record on line 4"},
		"two ends":         {valid + "end\n", "line 5: content after the end record on line 4"},
		"line too long":    {strings.Replace(valid, "\nend\n", "\n#"+strings.Repeat("x", 1<<20)+"\nend\n", 1), "line 4: longer than"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.text))
			if err == nil {
				t.Fatalf("parse succeeded, want error containing %q", tc.want)
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q: want ErrInvalid containing %q", err, tc.want)
			}
		})
	}
}

// TestParseRejectsEveryTruncation cuts a written state file at every byte:
// only the whole file parses, so a writer that stopped early (a full disk, a
// crash without the temporary file and rename) never yields a state with
// records missing.
func TestParseRejectsEveryTruncation(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sampleMIG()); err != nil {
		t.Fatal(err)
	}
	data := buf.String()
	if !strings.HasSuffix(data, "\n"+EndRecord+"\n") {
		t.Fatalf("Write does not end the file with the end record:\n%s", data)
	}
	for n := range len(data) {
		if _, err := Parse(strings.NewReader(data[:n])); !errors.Is(err, ErrInvalid) {
			t.Fatalf("the first %d of %d bytes parse (error %v); want ErrInvalid", n, len(data), err)
		}
	}
	if _, err := Parse(strings.NewReader(data)); err != nil {
		t.Fatalf("the whole file: %v", err)
	}
}

func TestParseEndRecord(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	valid := buf.String()
	for name, text := range map[string]string{
		"CRLF":                   strings.ReplaceAll(valid, "\n", "\r\n"),
		"unknown key on the end": strings.TrimSuffix(valid, "end\n") + "end\tfuture=1\n",
		"comment before the end": strings.TrimSuffix(valid, "end\n") + "# comment\n\nend\n",
	} {
		if _, err := Parse(strings.NewReader(text)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Parse(strings.NewReader(strings.TrimSuffix(valid, "end\n") + "end\tbroken\n")); err == nil {
		t.Error("an end record with a field that is not key=value parses")
	}
}

func TestReadFileNamesFileAndLine(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sampleMIG()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "nvml.state")
	// A writer that ran out of space after the gi records.
	truncated := buf.String()[:strings.Index(buf.String(), "\nci\t")+1]
	if err := os.WriteFile(path, []byte(truncated), 0o644); err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(truncated, "\n")
	_, err := ReadFile(path)
	want := fmt.Sprintf("read NVML state %s: invalid NVML state: line %d: end of file before the end record", path, lines+1)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
		t.Errorf("ReadFile of a truncated file: %v; want ErrInvalid containing %q", err, want)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sampleMIG(), got); diff != "" {
		t.Errorf("ReadFile (-want +got):\n%s", diff)
	}
	if _, err := ReadFile(path + ".missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v, want ErrNotExist", err)
	}
}

func TestValidateRejectsDuplicates(t *testing.T) {
	s := sample()
	second := s.GPUs[0]
	second.UUID = "GPU-0123abcd-0000-1111-2222-333344445556"
	s.GPUs = append(s.GPUs, second)
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "gpu[1].minor 3 used twice") {
		t.Errorf("duplicate minor: got %v", err)
	}
	s.GPUs[1].Minor = 4
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), `gpu[1].busId "00000000:1B:00.0" used twice`) {
		t.Errorf("duplicate bus id: got %v", err)
	}
	s.GPUs[1].BusID = "00000000:2A:00.0"
	s.GPUs[1].UUID = s.GPUs[0].UUID
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "used twice") {
		t.Errorf("duplicate uuid: got %v", err)
	}
}

func FuzzParse(f *testing.F) {
	var buf bytes.Buffer
	if err := Write(&buf, sample()); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.String())
	buf.Reset()
	if err := Write(&buf, sampleMIG()); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.String())
	f.Add(Header + "\nsystem\n")
	f.Add(strings.TrimSuffix(buf.String(), "end\n"))
	f.Add(buf.String() + "end\n")
	buf.Reset()
	if err := Write(&buf, faultSample()); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.String())
	f.Add(strings.Replace(buf.String(), "type=dbe", "type=xid", 1))
	f.Add(strings.Replace(buf.String(), "seq=5", "seq=4", 1))
	f.Add(strings.Replace(buf.String(), "lost=0", "lost=1", 1))
	buf.Reset()
	if err := Write(&buf, nvlinkSample()); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.String())
	f.Add(strings.Replace(buf.String(), "ancestor=10", "ancestor=15", 1))
	f.Add(strings.Replace(buf.String(), "link=17", "link=18", 1))
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(strings.NewReader(text))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := Write(&out, s); err != nil {
			t.Fatalf("parsed state does not write back: %v", err)
		}
		again, err := Parse(&out)
		if err != nil {
			t.Fatalf("written state does not parse: %v", err)
		}
		if diff := cmp.Diff(s, again); diff != "" {
			t.Fatalf("round trip changed the state (-first +second):\n%s", diff)
		}
	})
}
