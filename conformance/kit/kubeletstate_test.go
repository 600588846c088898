package kit

import (
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadKubeletDRAState reads a checkpoint in the kubelet's format
// (checkpoint.dra.kubelet.k8s.io/v1) and refuses a wrong checksum.
func TestReadKubeletDRAState(t *testing.T) {
	dir := t.TempDir()
	data := `{"kind":"DRACheckpoint","apiVersion":"checkpoint.dra.kubelet.k8s.io/v1","ClaimInfoStateList":[{"ClaimUID":"u1","ClaimName":"c","Namespace":"ns","PodUIDs":{"p1":{}},"DriverState":{"plain.drakit.dev":{"Devices":[{"PoolName":"node","DeviceName":"dev-0","RequestNames":["r"],"CDIDeviceIDs":["plain.drakit.dev/device=dev-0"]}]}}}]}`
	write := func(sum uint32) {
		b, _ := json.Marshal(map[string]any{"Data": data, "Checksum": sum})
		os.WriteFile(filepath.Join(dir, kubeletDRAStateFile), b, 0o600)
	}
	if got, err := ReadKubeletDRAState(dir); err != nil || len(got) != 0 {
		t.Errorf("no checkpoint yet: %v, %v; want nothing prepared", got, err)
	}
	write(crc32.ChecksumIEEE([]byte(data)))
	got, err := ReadKubeletDRAState(dir)
	if err != nil {
		t.Fatal(err)
	}
	d := got["u1"].DriverState["plain.drakit.dev"].Devices
	if len(d) != 1 || d[0].DeviceName != "dev-0" || d[0].CDIDeviceIDs[0] != "plain.drakit.dev/device=dev-0" {
		t.Errorf("prepared devices %+v", d)
	}
	write(1)
	if _, err := ReadKubeletDRAState(dir); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("wrong checksum: %v", err)
	}
}
