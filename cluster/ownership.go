package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// MarkerFile, directly under RunDir, marks a run dir that Up created or
// claimed. Down and a later Up act on a run dir only when it carries this
// marker, naming that very run dir.
const MarkerFile = ".drakit-cluster"

// markerKind and markerVersion identify the marker's format.
const (
	markerKind    = "drakit-cluster-run-dir"
	markerVersion = 1
)

// ErrNotOwned is wrapped when a run dir, a cgroup or a mount was not created
// by drakit env up, so neither Up nor Down may act on it.
var ErrNotOwned = errors.New("not created by drakit env up")

// runDirMarker is MarkerFile's content: the run dir's identity.
type runDirMarker struct {
	Kind    string    `json:"kind"`
	Version int       `json:"version"`
	ID      string    `json:"id"`
	RunDir  string    `json:"runDir"`
	Created time.Time `json:"created"`
}

func markerPath(cfg Config) string { return filepath.Join(cfg.RunDir, MarkerFile) }

// claimRunDir makes RunDir the cluster's: it creates a missing RunDir (and
// its parents), claims an empty one, and accepts one that carries the
// cluster's marker. A non-empty directory without the marker, a marker that
// names another run dir, a symlink, a file, and a directory that other users
// can write are refused with ErrNotOwned before anything is written.
func claimRunDir(cfg Config) (runDirMarker, error) {
	fi, err := os.Lstat(cfg.RunDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(cfg.RunDir), 0o755); err != nil {
			return runDirMarker{}, fmt.Errorf("create run dir %s: %w", cfg.RunDir, err)
		}
		if err := os.Mkdir(cfg.RunDir, 0o755); err != nil {
			return runDirMarker{}, fmt.Errorf("create run dir %s: %w", cfg.RunDir, err)
		}
		return writeMarker(cfg)
	case err != nil:
		return runDirMarker{}, fmt.Errorf("inspect run dir %s: %w", cfg.RunDir, err)
	}
	if err := checkRunDirInode(cfg.RunDir, fi); err != nil {
		return runDirMarker{}, err
	}
	m, err := readMarker(cfg)
	if err == nil {
		return m, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return runDirMarker{}, err
	}
	entries, err := os.ReadDir(cfg.RunDir)
	if err != nil {
		return runDirMarker{}, fmt.Errorf("read run dir %s: %w", cfg.RunDir, err)
	}
	if len(entries) > 0 {
		return runDirMarker{}, fmt.Errorf("run dir %s: %w: it is not empty (holds %s) and has no %s; "+
			"choose a new or empty --run-dir", cfg.RunDir, ErrNotOwned, entryNames(entries, 3), MarkerFile)
	}
	return writeMarker(cfg)
}

// ownedRunDir returns RunDir's marker for Down: (marker, true, nil) for a run
// dir Up created, (zero, false, nil) when RunDir does not exist, and an error
// wrapping ErrNotOwned for anything else that is there.
func ownedRunDir(cfg Config) (runDirMarker, bool, error) {
	fi, err := os.Lstat(cfg.RunDir)
	if errors.Is(err, fs.ErrNotExist) {
		return runDirMarker{}, false, nil
	}
	if err != nil {
		return runDirMarker{}, false, fmt.Errorf("inspect run dir %s: %w", cfg.RunDir, err)
	}
	if err := checkRunDirInode(cfg.RunDir, fi); err != nil {
		return runDirMarker{}, false, err
	}
	m, err := readMarker(cfg)
	if errors.Is(err, fs.ErrNotExist) {
		return runDirMarker{}, false, fmt.Errorf("run dir %s: %w: it has no %s, so nothing in it was started by the cluster; "+
			"it is left untouched", cfg.RunDir, ErrNotOwned, MarkerFile)
	}
	if err != nil {
		return runDirMarker{}, false, err
	}
	return m, true, nil
}

// checkRunDirInode refuses a run dir that is not a real directory owned by
// this user and writable by nobody else: a symlink could point anywhere, and
// a directory others can write could hold a planted marker.
func checkRunDirInode(dir string, fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(dir)
		return fmt.Errorf("run dir %s: %w: it is a symlink (to %s); give the real directory", dir, ErrNotOwned, target)
	}
	if !fi.IsDir() {
		return fmt.Errorf("run dir %s: %w: it is a %s, not a directory", dir, ErrNotOwned, fileKind(fi))
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("run dir %s: %w: it belongs to uid %d, not to this user (uid %d)", dir, ErrNotOwned, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("run dir %s: %w: others can write it (mode %04o); use a directory only its owner writes",
			dir, ErrNotOwned, fi.Mode().Perm())
	}
	return nil
}

func writeMarker(cfg Config) (runDirMarker, error) {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return runDirMarker{}, fmt.Errorf("mark run dir %s: %w", cfg.RunDir, err)
	}
	m := runDirMarker{Kind: markerKind, Version: markerVersion, ID: hex.EncodeToString(id), RunDir: cfg.RunDir,
		Created: time.Now().UTC().Truncate(time.Second)}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return runDirMarker{}, fmt.Errorf("mark run dir %s: %w", cfg.RunDir, err)
	}
	if err := writeFileAtomic(markerPath(cfg), append(b, '\n'), 0o644); err != nil {
		return runDirMarker{}, fmt.Errorf("mark run dir %s: %w", cfg.RunDir, err)
	}
	return m, nil
}

// readMarker reads and checks MarkerFile; a missing marker wraps
// fs.ErrNotExist.
func readMarker(cfg Config) (runDirMarker, error) {
	path := markerPath(cfg)
	fi, err := os.Lstat(path)
	if err != nil {
		return runDirMarker{}, err
	}
	if !fi.Mode().IsRegular() {
		return runDirMarker{}, fmt.Errorf("run dir %s: %w: %s is a %s, not the cluster's marker file", cfg.RunDir, ErrNotOwned, path, fileKind(fi))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return runDirMarker{}, fmt.Errorf("read %s: %w", path, err)
	}
	var m runDirMarker
	if err := json.Unmarshal(b, &m); err != nil || m.Kind != markerKind || m.ID == "" {
		return runDirMarker{}, fmt.Errorf("run dir %s: %w: %s is not a drakit cluster marker", cfg.RunDir, ErrNotOwned, path)
	}
	if m.Version != markerVersion {
		return runDirMarker{}, fmt.Errorf("run dir %s: %w: marker version %d, this drakit knows version %d",
			cfg.RunDir, ErrNotOwned, m.Version, markerVersion)
	}
	if m.RunDir != cfg.RunDir {
		return runDirMarker{}, fmt.Errorf("run dir %s: %w: its marker names run dir %s (a copied or moved run dir; "+
			"its PID files and mounts refer to the other path)", cfg.RunDir, ErrNotOwned, m.RunDir)
	}
	return m, nil
}

func fileKind(fi fs.FileInfo) string {
	switch t := fi.Mode().Type(); {
	case t == 0:
		return "regular file"
	case t&fs.ModeSymlink != 0:
		return "symlink"
	case t&fs.ModeDevice != 0:
		return "device"
	case t&fs.ModeNamedPipe != 0:
		return "named pipe"
	case t&fs.ModeSocket != 0:
		return "socket"
	default:
		return t.String()
	}
}

func entryNames(entries []os.DirEntry, max int) string {
	names := make([]string, 0, max)
	for i, e := range entries {
		if i == max {
			names = append(names, fmt.Sprintf("and %d more", len(entries)-max))
			break
		}
		names = append(names, e.Name())
	}
	return strings.Join(names, ", ")
}

// mountLedger lists the mount points Up mounted itself. Besides those, only
// mounts that the cluster's own components make inside the directories they
// were given (mountAreas) are unmounted by Down.
type mountLedger struct {
	Mounted []string `json:"mounted"`
}

func mountLedgerPath(cfg Config) string { return filepath.Join(cfg.RunDir, "mounts.json") }

// mountAreas are the directories where the nodes' kubelets (volumes of
// their pods) and containerds (container root filesystems, sandbox shm)
// mount; Down unmounts what is below them. A kubelet mounts below its root
// dir in KubeletRootBase; its store in RunDir is an area too, for what
// propagates there and for a cluster that an older drakit brought up with
// the kubelet root dir in RunDir.
func mountAreas(cfg Config) []string {
	var areas []string
	for _, n := range cfg.nodes() {
		areas = append(areas, KubeletRootDir(n), kubeletRootStore(n), containerdDir(n))
	}
	return areas
}

// mountRoots are the directories the cluster's mounts are found in: RunDir
// and every node's kubelet root dir.
func mountRoots(cfg Config) []string {
	roots := []string{cfg.RunDir}
	for _, n := range cfg.nodes() {
		roots = append(roots, KubeletRootDir(n))
	}
	return roots
}

// recordMount adds a mount point Up made to the mount ledger, before the
// mount is made (a crash after the mount still leaves it recorded).
func recordMount(cfg Config, mountPoint string) error {
	l, err := readMountLedger(cfg)
	if err != nil {
		return err
	}
	if slices.Contains(l.Mounted, mountPoint) {
		return nil
	}
	l.Mounted = append(l.Mounted, mountPoint)
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return fmt.Errorf("record mount %s: %w", mountPoint, err)
	}
	if err := writeFileAtomic(mountLedgerPath(cfg), b, 0o644); err != nil {
		return fmt.Errorf("record mount %s: %w", mountPoint, err)
	}
	return nil
}

func readMountLedger(cfg Config) (mountLedger, error) {
	var l mountLedger
	b, err := os.ReadFile(mountLedgerPath(cfg))
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return l, fmt.Errorf("read mount ledger: %w", err)
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("parse mount ledger %s: %w", mountLedgerPath(cfg), err)
	}
	return l, nil
}

// ownMounts splits the mounts at or below RunDir and the kubelet root dirs
// into the cluster's (recorded by Up, or inside a mount area) and the
// foreign ones, which Down leaves alone.
func ownMounts(cfg Config, l mountLedger, mounts []mountEntry) (own, foreign []mountEntry) {
	for _, m := range mountsUnder(mounts, mountRoots(cfg)...) {
		mine := slices.Contains(l.Mounted, m.MountPoint)
		for _, area := range mountAreas(cfg) {
			if m.MountPoint != area && isUnder(m.MountPoint, area) {
				mine = true
			}
		}
		if mine {
			own = append(own, m)
		} else {
			foreign = append(foreign, m)
		}
	}
	return own, foreign
}
