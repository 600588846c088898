package driver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"drakit.dev/drakit/internal/nvidiahw"
	"drakit.dev/drakit/reference/pluginharness"
)

var _ pluginharness.PoolAdmitter = (*hardware)(nil)

// ErrWrongClique is returned for an IMEX channel of a pool that is not this
// node's NVLink clique's.
var ErrWrongClique = errors.New("the IMEX channel is not of this node's NVLink clique")

// AdmitPool admits the IMEX channels of this node's clique: pool must be
// IMEXPoolName of the node's fabric, device channel-<N> with
// /dev/nvidia-caps-imex-channels/channel<N> on the node.
func (h *hardware) AdmitPool(pool, device string) error {
	f := h.inventory.NodeFabric()
	if f == nil {
		return fmt.Errorf("device %s of pool %s: %w: this node's GPUs are in no NVLink clique", device, pool, ErrWrongClique)
	}
	if want := IMEXPoolName(*f); pool != want {
		return fmt.Errorf("device %s of pool %s: %w: this node is in clique %s (pool %s)", device, pool, ErrWrongClique, f.Clique(), want)
	}
	n, ok := parseIMEXChannel(device)
	if !ok {
		return fmt.Errorf("device %s of pool %s: not an IMEX channel (channel-<N>)", device, pool)
	}
	node := filepath.Join(h.driverRoot, nvidiahw.IMEXChannelPath(n))
	if _, err := os.Stat(node); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("device %s of pool %s: this node has no %s", device, pool, nvidiahw.IMEXChannelPath(n))
	} else if err != nil {
		return fmt.Errorf("device %s of pool %s: %w", device, pool, err)
	}
	return nil
}

// imexChannelDevice is what an admitted IMEX channel injects: its device
// node, and DRAKIT_DEVICE_CHANNEL_<N>=channel<N>.
func imexChannelDevice(device string) (cdiDevice, error) {
	n, ok := parseIMEXChannel(device)
	if !ok {
		return cdiDevice{}, fmt.Errorf("device %s is not an IMEX channel", device)
	}
	path := nvidiahw.IMEXChannelPath(n)
	return cdiDevice{name: device, uuid: filepath.Base(path), nodes: []string{strings.TrimPrefix(path, "/dev/")}}, nil
}
