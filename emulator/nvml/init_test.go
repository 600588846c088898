package nvml_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"drakit.dev/drakit/emulator/nvml/nvmltest"
	"drakit.dev/drakit/emulator/nvmlstate"
)

func sampleStateText(t testing.TB) string {
	t.Helper()
	var b bytes.Buffer
	if err := nvmlstate.Write(&b, nvmltest.SampleState()); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// beforeEnd inserts extra lines just before state's end record.
func beforeEnd(state, extra string) string {
	return strings.TrimSuffix(state, nvmlstate.EndRecord+"\n") + extra + nvmlstate.EndRecord + "\n"
}

func TestStateFileVariants(t *testing.T) {
	good := sampleStateText(t)
	lines := strings.Split(strings.TrimSuffix(good, "\n"), "\n")
	gpu0 := lines[2]
	end := nvmlstate.EndRecord + "\n"
	tests := []struct {
		name      string
		data      string
		wantRet   gonvml.Return
		wantCount int
	}{
		{"written by nvmlstate", good, gonvml.SUCCESS, 3},
		{"CRLF line ends", strings.ReplaceAll(good, "\n", "\r\n"), gonvml.SUCCESS, 3},
		{"comments, blank lines, unknown records and keys",
			lines[0] + "\n# comment\n\nnvswitch\tid=1\n" + lines[1] + "\tfuture=1\n" + strings.Join(lines[2:len(lines)-1], "\n") +
				"\n# comment\n\nend\tfuture=1\n",
			gonvml.SUCCESS, 3},
		{"hex integer syntax", strings.Replace(good, "memoryTotal=85520809984", "memoryTotal=0x13E8000000", 1), gonvml.SUCCESS, 3},
		{"underscores in an integer", strings.Replace(good, "memoryTotal=85520809984", "memoryTotal=0x13_E8_00_00_00", 1), gonvml.ERROR_UNKNOWN, 0},
		{"octal-looking integer", strings.Replace(good, "\tminor=0\t", "\tminor=0o7\t", 1), gonvml.ERROR_UNKNOWN, 0},

		{"empty", "", gonvml.ERROR_UNKNOWN, 0},
		{"wrong header", strings.Replace(good, "v2", "v3", 1), gonvml.ERROR_UNKNOWN, 0},
		{"version 1 (no end record)", strings.Replace(strings.TrimSuffix(good, end), "v2", "v1", 1), gonvml.ERROR_UNKNOWN, 0},
		{"header only", lines[0] + "\n", gonvml.ERROR_UNKNOWN, 0},
		{"header and end only", lines[0] + "\n" + end, gonvml.ERROR_UNKNOWN, 0},
		{"no system record", lines[0] + "\n" + gpu0 + "\n" + end, gonvml.ERROR_UNKNOWN, 0},
		{"no end record", strings.TrimSuffix(good, end), gonvml.ERROR_UNKNOWN, 0},
		{"no final newline", strings.TrimSuffix(good, "\n"), gonvml.ERROR_UNKNOWN, 0},
		{"end record with CR only", strings.TrimSuffix(good, "\n") + "\r", gonvml.ERROR_UNKNOWN, 0},
		{"comment after the end record", good + "# late\n", gonvml.ERROR_UNKNOWN, 0},
		{"blank line after the end record", good + "\n", gonvml.ERROR_UNKNOWN, 0},
		{"two end records", good + end, gonvml.ERROR_UNKNOWN, 0},
		{"end record in the middle", strings.Replace(good, "\ngpu\t", "\n"+end+"gpu\t", 1), gonvml.ERROR_UNKNOWN, 0},
		{"end record with a field that is not key=value", strings.TrimSuffix(good, end) + "end\tbroken\n", gonvml.ERROR_UNKNOWN, 0},
		{"field without =", beforeEnd(good, "nvswitch\tbroken\n"), gonvml.ERROR_UNKNOWN, 0},
		{"repeated key", strings.Replace(good, "\tminor=0\t", "\tminor=9\tminor=0\t", 1), gonvml.ERROR_UNKNOWN, 0},
		{"repeated unknown key in an unknown record", beforeEnd(good, "nvswitch\tid=1\tid=1\n"), gonvml.ERROR_UNKNOWN, 0},
		{"second system record", beforeEnd(good, lines[1]+"\n"), gonvml.ERROR_UNKNOWN, 0},
		{"MIG capability not 0 or 1", strings.Replace(good, "migCapable=1", "migCapable=2", 1), gonvml.ERROR_UNKNOWN, 0},
		{"duplicate bus id", strings.Replace(good, "00000000:43:00.0", "00000000:1B:00.0", 1), gonvml.ERROR_UNKNOWN, 0},
		{"no memory", strings.Replace(good, "memoryTotal=85520809984\tmemoryReserved=566231040", "memoryTotal=0\tmemoryReserved=0", 1), gonvml.ERROR_UNKNOWN, 0},
		{"trailing tab", strings.Replace(good, "cudaDriverVersion=12080\n", "cudaDriverVersion=12080\t\n", 1), gonvml.ERROR_UNKNOWN, 0},
		{"missing field", strings.Replace(good, "\tbrand=2", "", 1), gonvml.ERROR_UNKNOWN, 0},
		{"bad integer", strings.Replace(good, "ccMajor=9", "ccMajor=nine", 1), gonvml.ERROR_UNKNOWN, 0},
		{"32-bit overflow", strings.Replace(good, "pciDeviceId=0x233010DE", "pciDeviceId=0x1233010DE", 1), gonvml.ERROR_UNKNOWN, 0},
		{"misplaced underscore", strings.Replace(good, "ccMinor=0", "ccMinor=0_", 1), gonvml.ERROR_UNKNOWN, 0},
		{"duplicate minor", strings.Replace(good, "minor=1", "minor=0", 1), gonvml.ERROR_UNKNOWN, 0},
		{"minor out of range", strings.Replace(good, "minor=3", "minor=255", 1), gonvml.ERROR_UNKNOWN, 0},
		{"upper-case uuid", strings.Replace(good, "GPU-5d8b4c1a", "GPU-5D8B4C1A", 1), gonvml.ERROR_UNKNOWN, 0},
		{"lower-case bus id", strings.Replace(good, "00000000:1B:00.0", "00000000:1b:00.0", 1), gonvml.ERROR_UNKNOWN, 0},
		{"name too long", strings.Replace(good, "NVIDIA L4", strings.Repeat("L", 96), 1), gonvml.ERROR_UNKNOWN, 0},
		{"reserved above total", strings.Replace(good, "memoryReserved=566231040", "memoryReserved=95520809984", 1), gonvml.ERROR_UNKNOWN, 0},
		{"MIG on without capability", strings.Replace(good, "migCapable=1\tmigMode=0", "migCapable=0\tmigMode=1", 1), gonvml.ERROR_UNKNOWN, 0},
		{"bad driver version", strings.Replace(good, "driverVersion=570.172.08", "driverVersion=570", 1), gonvml.ERROR_UNKNOWN, 0},
		{"zero CUDA version", strings.Replace(good, "cudaDriverVersion=12080", "cudaDriverVersion=0", 1), gonvml.ERROR_UNKNOWN, 0},
		{"binary garbage", "\x00\xff\xfe\x01drakit\x00\n\t=\t", gonvml.ERROR_UNKNOWN, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The reference reader must agree with the case's expectation.
			_, perr := nvmlstate.Parse(strings.NewReader(tt.data))
			if (perr == nil) != (tt.wantRet == gonvml.SUCCESS) {
				t.Fatalf("nvmlstate.Parse error = %v, but the case expects %v", perr, tt.wantRet)
			}
			root := nvmltest.NewRoot(t, nvmltest.SampleState())
			nvmltest.WriteStateFile(t, root, []byte(tt.data))
			t.Setenv(nvmltest.RootEnv, root)
			lib := newLib(t)
			ret := lib.Init()
			if ret != tt.wantRet {
				t.Fatalf("Init = %v, want %v", ret, tt.wantRet)
			}
			if ret != gonvml.SUCCESS {
				return
			}
			defer lib.Shutdown()
			if n, ret := lib.DeviceGetCount(); ret != gonvml.SUCCESS || n != tt.wantCount {
				t.Errorf("DeviceGetCount = %d, %v; want %d", n, ret, tt.wantCount)
			}
		})
	}
}

func TestLongLines(t *testing.T) {
	// nvmlstate.Parse reads lines of at most 1 MiB - 1 bytes (its scanner's
	// buffer holds the newline too); the shim draws the same line.
	good := sampleStateText(t)
	for _, n := range []int{1<<20 - 1, 1 << 20} {
		data := beforeEnd(good, "#"+strings.Repeat("x", n-1)+"\n")
		_, perr := nvmlstate.Parse(strings.NewReader(data))
		root := nvmltest.NewRoot(t, nvmltest.SampleState())
		nvmltest.WriteStateFile(t, root, []byte(data))
		t.Setenv(nvmltest.RootEnv, root)
		lib := newLib(t)
		ret := lib.Init()
		if ret == gonvml.SUCCESS {
			lib.Shutdown()
		}
		if (perr == nil) != (ret == gonvml.SUCCESS) {
			t.Errorf("%d-byte comment line: nvmlstate.Parse error %v, shim Init %v; they must agree", n, perr, ret)
		}
	}
}

// TestTruncatedStateFile cuts a MIG state file at every line end and in the
// middle of every line: the shim refuses each (a file cut short by a full
// disk or an interrupted writer must not show a MIG GPU without its
// instances), as nvmlstate.Parse does.
func TestTruncatedStateFile(t *testing.T) {
	s := nvmltest.MIGSampleState()
	var b bytes.Buffer
	if err := nvmlstate.Write(&b, s); err != nil {
		t.Fatal(err)
	}
	data := b.String()
	var cuts []int
	for i := range len(data) {
		if data[i] == '\n' {
			start := strings.LastIndexByte(data[:i], '\n') + 1
			cuts = append(cuts, (start+i)/2, i, i+1)
		}
	}
	cuts = cuts[:len(cuts)-1] // the whole file
	root := nvmltest.NewMIGRoot(t, s)
	t.Setenv(nvmltest.RootEnv, root)
	lib := newLib(t)
	for _, n := range cuts {
		if _, err := nvmlstate.Parse(strings.NewReader(data[:n])); err == nil {
			t.Fatalf("nvmlstate.Parse accepts the first %d of %d bytes", n, len(data))
		}
		nvmltest.WriteStateFile(t, root, []byte(data[:n]))
		if ret := lib.Init(); ret != gonvml.ERROR_UNKNOWN {
			if ret == gonvml.SUCCESS {
				lib.Shutdown()
			}
			t.Fatalf("Init with the first %d of %d bytes = %v, want ERROR_UNKNOWN", n, len(data), ret)
		}
	}
	nvmltest.WriteStateFile(t, root, []byte(data))
	initLib(t, lib, root)
}

func TestInitErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root string)
		want  gonvml.Return
	}{
		{"no state file", func(t *testing.T, root string) {
			if err := os.Remove(filepath.Join(root, nvmlstate.RelativePath)); err != nil {
				t.Fatal(err)
			}
		}, gonvml.ERROR_DRIVER_NOT_LOADED},
		{"root does not exist", func(t *testing.T, root string) {
			if err := os.RemoveAll(root); err != nil {
				t.Fatal(err)
			}
		}, gonvml.ERROR_DRIVER_NOT_LOADED},
		{"state file is a directory", func(t *testing.T, root string) {
			path := filepath.Join(root, nvmlstate.RelativePath)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, gonvml.ERROR_UNKNOWN},
		{"state file larger than 16 MiB", func(t *testing.T, root string) {
			data := []byte(sampleStateText(t))
			for len(data) <= 16<<20 {
				data = append(data, "# padding padding padding padding padding padding padding padding\n"...)
			}
			nvmltest.WriteStateFile(t, root, data)
		}, gonvml.ERROR_UNKNOWN},
	}
	if os.Geteuid() != 0 {
		tests = append(tests, struct {
			name  string
			setup func(t *testing.T, root string)
			want  gonvml.Return
		}{"state file unreadable", func(t *testing.T, root string) {
			if err := os.Chmod(filepath.Join(root, nvmlstate.RelativePath), 0); err != nil {
				t.Fatal(err)
			}
		}, gonvml.ERROR_NO_PERMISSION})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := nvmltest.NewRoot(t, nvmltest.SampleState())
			tt.setup(t, root)
			t.Setenv(nvmltest.RootEnv, root)
			lib := newLib(t)
			if ret := lib.Init(); ret != tt.want {
				if ret == gonvml.SUCCESS {
					lib.Shutdown()
				}
				t.Fatalf("Init = %v, want %v", ret, tt.want)
			}
			// A failed nvmlInit leaves the shim uninitialised.
			if _, ret := lib.DeviceGetCount(); ret != gonvml.ERROR_UNINITIALIZED {
				t.Errorf("DeviceGetCount after failed Init = %v, want ERROR_UNINITIALIZED", ret)
			}
		})
	}
}

func TestStateReloadedAfterFullShutdown(t *testing.T) {
	one := nvmltest.SampleState()
	one.GPUs = one.GPUs[:1]
	rootA, rootB := nvmltest.NewRoot(t, nvmltest.SampleState()), nvmltest.NewRoot(t, one)
	lib := newLib(t)
	count := func() int {
		t.Helper()
		n, ret := lib.DeviceGetCount()
		if ret != gonvml.SUCCESS {
			t.Fatalf("DeviceGetCount: %v", ret)
		}
		return n
	}
	t.Setenv(nvmltest.RootEnv, rootA)
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		t.Fatal(ret)
	}
	// While initialised, neither a new root nor a nested Init re-reads.
	t.Setenv(nvmltest.RootEnv, rootB)
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		t.Fatal(ret)
	}
	if n := count(); n != 3 {
		t.Errorf("after nested Init with another root: %d GPUs, want 3 (state kept)", n)
	}
	lib.Shutdown()
	lib.Shutdown()
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		t.Fatal(ret)
	}
	defer lib.Shutdown()
	if n := count(); n != 1 {
		t.Errorf("after full shutdown and Init with the new root: %d GPUs, want 1", n)
	}
}

func TestErrorString(t *testing.T) {
	lib := newLib(t)
	initLib(t, lib, nvmltest.NewRoot(t, nvmltest.SampleState()))
	// After loading, go-nvml's Return.Error goes through nvmlErrorString.
	for ret, want := range canonicalErrorStrings {
		if got := lib.ErrorString(ret); got != want {
			t.Errorf("ErrorString(%d) = %q, want %q", int32(ret), got, want)
		}
	}
	if got := gonvml.Return(12345).Error(); got != "Unknown Error" {
		t.Errorf("Return(12345).Error() = %q, want %q", got, "Unknown Error")
	}
}

// canonicalErrorStrings are NVML's strings for every nvmlReturn_t.
var canonicalErrorStrings = map[gonvml.Return]string{
	gonvml.SUCCESS:                         "Success",
	gonvml.ERROR_UNINITIALIZED:             "Uninitialized",
	gonvml.ERROR_INVALID_ARGUMENT:          "Invalid Argument",
	gonvml.ERROR_NOT_SUPPORTED:             "Not Supported",
	gonvml.ERROR_NO_PERMISSION:             "Insufficient Permissions",
	gonvml.ERROR_ALREADY_INITIALIZED:       "Already Initialized",
	gonvml.ERROR_NOT_FOUND:                 "Not Found",
	gonvml.ERROR_INSUFFICIENT_SIZE:         "Insufficient Size",
	gonvml.ERROR_INSUFFICIENT_POWER:        "Insufficient External Power",
	gonvml.ERROR_DRIVER_NOT_LOADED:         "Driver Not Loaded",
	gonvml.ERROR_TIMEOUT:                   "Timeout",
	gonvml.ERROR_IRQ_ISSUE:                 "Interrupt Request Issue",
	gonvml.ERROR_LIBRARY_NOT_FOUND:         "NVML Shared Library Not Found",
	gonvml.ERROR_FUNCTION_NOT_FOUND:        "Function Not Found",
	gonvml.ERROR_CORRUPTED_INFOROM:         "Corrupted infoROM",
	gonvml.ERROR_GPU_IS_LOST:               "GPU is lost",
	gonvml.ERROR_RESET_REQUIRED:            "GPU requires restart",
	gonvml.ERROR_OPERATING_SYSTEM:          "The operating system has blocked the request.",
	gonvml.ERROR_LIB_RM_VERSION_MISMATCH:   "RM has detected an NVML/RM version mismatch.",
	gonvml.ERROR_IN_USE:                    "In use by another client",
	gonvml.ERROR_MEMORY:                    "Insufficient Memory",
	gonvml.ERROR_NO_DATA:                   "No data",
	gonvml.ERROR_VGPU_ECC_NOT_SUPPORTED:    "The requested vgpu operation is not available on target device, because ECC is enabled",
	gonvml.ERROR_INSUFFICIENT_RESOURCES:    "Insufficient Resources",
	gonvml.ERROR_FREQ_NOT_SUPPORTED:        "Frequency not supported",
	gonvml.ERROR_ARGUMENT_VERSION_MISMATCH: "Argument version mismatch",
	gonvml.ERROR_DEPRECATED:                "Deprecated",
	gonvml.ERROR_NOT_READY:                 "System is not in ready state",
	gonvml.ERROR_GPU_NOT_FOUND:             "GPU not found",
	gonvml.ERROR_INVALID_STATE:             "Invalid state",
	gonvml.ERROR_RESET_TYPE_NOT_SUPPORTED:  "Reset type not supported",
	gonvml.ERROR_UNKNOWN:                   "Unknown Error",
}

func TestUnimplementedFunctionsReturnNotSupported(t *testing.T) {
	// A sample of the long tail, called through go-nvml: the process must
	// survive (no unresolved symbol) and each call must say NOT_SUPPORTED.
	lib := newLib(t)
	initLib(t, lib, nvmltest.NewRoot(t, nvmltest.SampleState()))
	d, ret := lib.DeviceGetHandleByIndex(0)
	if ret != gonvml.SUCCESS {
		t.Fatal(ret)
	}
	calls := map[string]func() gonvml.Return{
		"GetFanSpeed":   func() gonvml.Return { _, r := d.GetFanSpeed(); return r },
		"GetPowerUsage": func() gonvml.Return { _, r := d.GetPowerUsage(); return r },
		"GetClockInfo":  func() gonvml.Return { _, r := d.GetClockInfo(gonvml.CLOCK_SM); return r },
		"GetUtilizationRates": func() gonvml.Return {
			_, r := d.GetUtilizationRates()
			return r
		},
		"GetGpuInstanceProfileInfo": func() gonvml.Return {
			_, r := d.GetGpuInstanceProfileInfo(gonvml.GPU_INSTANCE_PROFILE_1_SLICE)
			return r
		},
		"GetCurrPcieLinkGeneration": func() gonvml.Return {
			_, r := d.GetCurrPcieLinkGeneration()
			return r
		},
		"GetGpuFabricInfo":      func() gonvml.Return { _, r := d.GetGpuFabricInfo(); return r },
		"GetSerial":             func() gonvml.Return { _, r := d.GetSerial(); return r },
		"GetBoardPartNumber":    func() gonvml.Return { _, r := d.GetBoardPartNumber(); return r },
		"SetPersistenceMode":    func() gonvml.Return { return d.SetPersistenceMode(gonvml.FEATURE_ENABLED) },
		"GetDefaultEccMode":     func() gonvml.Return { _, r := d.GetDefaultEccMode(); return r },
		"SystemGetDriverBranch": func() gonvml.Return { _, r := lib.SystemGetDriverBranch(); return r },
		"UnitGetCount":          func() gonvml.Return { _, r := lib.UnitGetCount(); return r },
		"GetMigDeviceHandleByIndex": func() gonvml.Return {
			_, r := d.GetMigDeviceHandleByIndex(0)
			return r
		},
	}
	for name, call := range calls {
		if got := call(); got != gonvml.ERROR_NOT_SUPPORTED {
			t.Errorf("%s = %v, want ERROR_NOT_SUPPORTED", name, got)
		}
	}
}
