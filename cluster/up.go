package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"drakit.dev/drakit/cluster/images"
)

// Sentinel errors of Up's preconditions.
var (
	// ErrNotRoot: the cluster needs root (mounts, cgroups, containers).
	ErrNotRoot = errors.New("the local cluster needs root")
	// ErrComponentsMissing: scripts/build-components.sh has not run.
	ErrComponentsMissing = errors.New("components not built: run scripts/build-components.sh")
	// ErrHostToolMissing: a host program (runc, unshare, mount) is missing.
	ErrHostToolMissing = errors.New("host tool missing: run scripts/install-deps.sh")
	// ErrPortInUse: another process listens on one of the cluster's ports.
	ErrPortInUse = errors.New("port in use")
	// ErrNotReady: a component or the Node did not become ready in time.
	ErrNotReady = errors.New("not ready")
	// ErrNotUp: an operation needs a running cluster.
	ErrNotUp = errors.New("cluster is not up: run drakit env up")
)

// PauseArchive is the pause image's file name in ImagesDir.
const PauseArchive = "pause.tar"

// checkPrerequisites verifies root, the built components and the host tools.
func checkPrerequisites(cfg Config) error {
	if os.Geteuid() != 0 {
		return ErrNotRoot
	}
	for _, c := range []string{"kubernetes-" + cfg.KubernetesVersion, "etcd-" + cfg.EtcdVersion,
		"containerd-" + cfg.ContainerdVersion, "crictl-" + cfg.CrictlVersion} {
		marker := filepath.Join(cfg.ComponentsDir, c, ".complete")
		if _, err := os.Stat(marker); err != nil {
			return fmt.Errorf("%w (%s is missing)", ErrComponentsMissing, marker)
		}
	}
	for _, b := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "etcd",
		"containerd", "ctr", "containerd-shim-runc-v2", "crictl"} {
		p, _ := BinaryPath(cfg, b)
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%w (%s: %v)", ErrComponentsMissing, b, err)
		}
	}
	for _, tool := range []string{"runc", "unshare", "mount", "sh"} {
		if _, err := lookPath(cfg, tool); err != nil {
			return fmt.Errorf("%w: %v", ErrHostToolMissing, err)
		}
	}
	return nil
}

// Up brings the cluster up, or confirms it is up. See the package doc.
func Up(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := checkPrerequisites(cfg); err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	began := time.Now()

	if err := prepareRunDir(ctx, cfg); err != nil {
		return err
	}
	// Find what runs already, and check the ports of everything else before
	// starting anything.
	stages := startStages(cfg)
	running := map[unit]*process{}
	for _, stage := range stages {
		for _, u := range stage {
			p, err := runningProcess(u.cfg, u.name)
			if err != nil {
				return err
			}
			if p != nil {
				if u.name == Kubelet {
					if err := checkKubeletRootDir(u.cfg, p); err != nil {
						return err
					}
				}
				running[u] = p
				continue
			}
			if err := portsFree(u.cfg, u.name); err != nil {
				return err
			}
		}
	}
	started := 0
	// Each node's images are imported once its containerd is ready, beside
	// the later stages: nothing but pods needs them, and up waits for them
	// before it reports the cluster up.
	imported := make(chan error, cfg.Nodes)
	importing := 0
	for _, stage := range stages {
		t0 := time.Now()
		var procs []unitProcess
		for _, u := range stage {
			p := running[u]
			if p != nil {
				logger.V(1).Info("Component already running", "component", u.name, "node", u.node(), "pid", p.ref.PID)
			} else {
				if err := beforeStart(ctx, u.cfg, u.name); err != nil {
					return err
				}
				argv, err := componentArgv(u.cfg, u.name)
				if err != nil {
					return err
				}
				if p, err = startProcess(u.cfg, u.name, argv); err != nil {
					return err
				}
				started++
				logger.Info("Started", "component", u.name, "node", u.node(), "pid", p.ref.PID)
			}
			procs = append(procs, unitProcess{u, p})
		}
		// The stage's components start together; each is waited for in
		// turn, and what needs it ready runs right after it.
		for _, up := range procs {
			u, p := up.unit, up.p
			if err := waitReady(ctx, u.cfg, p, probes(u.cfg)[u.name]); err != nil {
				return err
			}
			if p.done != nil {
				logger.Info("Ready", "component", u.name, "node", u.node(), "after", since(t0))
			}
			switch u.name {
			case APIServer:
				if err := ensureKubeletAPIAccess(ctx, cfg); err != nil {
					return err
				}
				if err := ensureRuntimeClasses(ctx, cfg); err != nil {
					return err
				}
			case Containerd:
				importing++
				startedNow := p.done != nil
				go func() {
					err := importImages(ctx, u.cfg)
					if startedNow {
						err = errors.Join(err, waitEmulatorNRIPlugin(ctx, u.cfg))
					}
					imported <- err
				}()
			}
		}
	}
	nodeErrs := make(chan error, cfg.Nodes)
	for _, n := range cfg.nodes() {
		go func() { nodeErrs <- waitNode(ctx, n) }()
	}
	var errs []error
	for range cfg.Nodes {
		errs = append(errs, <-nodeErrs)
	}
	for range importing {
		errs = append(errs, <-imported)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if importing > 0 {
		if err := recordImportedImages(cfg, imageArchives(cfg)); err != nil {
			return err
		}
	}
	if started == 0 {
		logger.Info("Cluster already up", "nodes", cfg.Nodes, "kubeconfig", KubeconfigPath(cfg))
		return nil
	}
	logger.Info("Cluster up", "nodes", cfg.Nodes, "took", since(began), "kubeconfig", KubeconfigPath(cfg))
	return nil
}

// unit is one component to run: a control plane component (cfg is the
// cluster's) or a node's containerd or kubelet (cfg narrowed to the node).
type unit struct {
	name string
	cfg  Config
}

// node names the node of a unit, for logs.
func (u unit) node() string { return nodeName(u.cfg) }

type unitProcess struct {
	unit
	p *process
}

// startStages groups the components in start order: each stage starts
// together once the stage before it is ready. etcd and every node's
// containerd depend on nothing; a kubelet needs its containerd and starts
// beside the apiserver, whose absence it retries until it registers its
// Node; the controller-manager and scheduler need the apiserver ready.
func startStages(cfg Config) [][]unit {
	stages := [][]unit{{{Etcd, cfg}}, {{APIServer, cfg}}, {{ControllerManager, cfg}, {Scheduler, cfg}}}
	for _, n := range cfg.nodes() {
		stages[0] = append(stages[0], unit{Containerd, n})
		stages[1] = append(stages[1], unit{Kubelet, n})
	}
	return stages
}

func since(t time.Time) string { return time.Since(t).Round(10 * time.Millisecond).String() }

// prepareRunDir claims the run dir (claimRunDir) and creates its layout,
// PKI, configuration files, host path ledger and pause image. Everything is rewritten from cfg on each
// Up except the PKI and the ledger, which are kept once complete.
func prepareRunDir(ctx context.Context, cfg Config) error {
	if _, err := claimRunDir(cfg); err != nil {
		return err
	}
	if err := ensureNodesRecord(cfg); err != nil {
		return err
	}
	for _, d := range []string{logDir(cfg), pidDir(cfg), etcdDataDir(cfg), cfg.ImagesDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("prepare run dir: %w", err)
		}
	}
	// etcd wants its data dir private.
	if err := os.Chmod(etcdDataDir(cfg), 0o700); err != nil {
		return fmt.Errorf("prepare run dir: %w", err)
	}
	if err := ensurePKI(cfg, time.Now()); err != nil {
		return err
	}
	if err := writeSchedulerConfig(cfg); err != nil {
		return err
	}
	for _, n := range cfg.nodes() {
		if err := prepareNodeDir(ctx, n); err != nil {
			return fmt.Errorf("prepare node %s: %w", nodeName(n), err)
		}
	}
	mounts, err := readMountInfo(mountInfoPath)
	if err != nil {
		return err
	}
	if err := ensureLedger(ledgerPath(cfg), hostPathCandidates(cfg, mounts), cgroupRootDirs(cfg, mounts)); err != nil {
		return err
	}
	pause := filepath.Join(cfg.ImagesDir, PauseArchive)
	if _, err := os.Stat(pause); isNotExist(err) {
		klog.FromContext(ctx).Info("Building pause image", "path", pause)
		if err := images.BuildPause(ctx, pause); err != nil {
			return err
		}
	}
	return nil
}

// writeSchedulerConfig writes the scheduler's KubeSchedulerConfiguration.
func writeSchedulerConfig(cfg Config) error {
	b, err := schedulerConfig(cfg)
	if err != nil {
		return fmt.Errorf("render scheduler config: %w", err)
	}
	path := schedulerConfigPath(cfg)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write scheduler config: %w", err)
	}
	if err := writeFileAtomic(path, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// prepareNodeDir creates a node's dirs and writes its containerd, CNI,
// kubelet, crictl and sysctl files, its MIG manager base spec and the
// emulator's NRI plugin.
func prepareNodeDir(ctx context.Context, cfg Config) error {
	for _, d := range []string{logDir(cfg), pidDir(cfg), containerdDir(cfg), kubeletDir(cfg),
		CDIDir(cfg), cniConfDir(cfg), cniBinDir(cfg)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	kubeletYAML, err := kubeletConfig(cfg)
	if err != nil {
		return fmt.Errorf("render kubelet config: %w", err)
	}
	files := []struct {
		path string
		data []byte
	}{
		{containerdConfigPath(cfg), []byte(containerdConfig(cfg, images.PauseImage))},
		{cniConfPath(cfg), []byte(cniConfig)},
		{kubeletConfigPath(cfg), kubeletYAML},
		{crictlConfigPath(cfg), []byte(crictlConfig(cfg))},
	}
	for _, f := range files {
		if err := writeFileAtomic(f.path, f.data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", f.path, err)
		}
	}
	if err := writeMIGManagerSpec(ctx, cfg); err != nil {
		return err
	}
	if err := writeEmulatorNRIPlugin(cfg); err != nil {
		return err
	}
	return writeSysctlFiles(cfg)
}

func crictlConfigPath(cfg Config) string { return filepath.Join(nodeDir(cfg), "crictl.yaml") }

// crictlConfig points crictl at the cluster's containerd.
func crictlConfig(cfg Config) string {
	ep := "unix://" + ContainerdSocket(cfg)
	return fmt.Sprintf("runtime-endpoint: %s\nimage-endpoint: %s\ntimeout: 30\n", strconv.Quote(ep), strconv.Quote(ep))
}

// componentArgv returns the full command line of a component. The kubelet
// is started through unshare and the sysctl wrapper; unshare and sh exec, so
// the PID is the kubelet's.
func componentArgv(cfg Config, name string) ([]string, error) {
	args := componentArgs(cfg)[name]
	bin, err := BinaryPath(cfg, name)
	if err != nil {
		return nil, err
	}
	if name != Kubelet {
		return append([]string{bin}, args...), nil
	}
	unshare, err := lookPath(cfg, "unshare")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrHostToolMissing, err)
	}
	return append([]string{unshare, "--mount", "--propagation", "unchanged", "sh", "-c", kubeletWrapper(),
		"drakit-kubelet", sysctlDir(cfg), bin}, args...), nil
}

// componentPorts returns the TCP ports a component listens on.
func componentPorts(cfg Config, name string) []int {
	switch name {
	case Etcd:
		return []int{cfg.EtcdClientPort, cfg.EtcdPeerPort, cfg.EtcdMetricsPort}
	case APIServer:
		return []int{cfg.APIServerPort}
	case ControllerManager:
		return []int{cfg.ControllerManagerPort}
	case Scheduler:
		return []int{cfg.SchedulerPort}
	case Kubelet:
		return []int{cfg.KubeletPort, cfg.KubeletHealthzPort}
	}
	return nil
}

// portFreeWait is how long portsFree waits for a port a killed process
// left: its sockets can hold the port briefly after it exited (FIN_WAIT2
// while a client keeps its end open).
const portFreeWait = 10 * time.Second

// portsFree checks that nothing holds a component's ports: the control
// plane's on 127.0.0.1, a kubelet's on its node's address.
func portsFree(cfg Config, name string) error {
	host := "127.0.0.1"
	if name == Kubelet {
		host = nodeName(cfg)
	}
	for _, port := range componentPorts(cfg, name) {
		if err := portFree(host, port, portFreeWait); err != nil {
			return fmt.Errorf("start %s: %w: %s:%d (is another cluster up?): %v", name, ErrPortInUse, host, port, err)
		}
	}
	return nil
}

// portFree tries to listen on host:port until it can or wait passes.
func portFree(host string, port int, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err == nil {
			return l.Close()
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// beforeStart prepares the host for a component: the kubelet needs its
// cgroup root and its root dir mounted.
func beforeStart(ctx context.Context, cfg Config, name string) error {
	if name == Containerd {
		return forgetEmulatorNRIPlugin(cfg)
	}
	if name != Kubelet {
		return nil
	}
	warnOtherKubelets(ctx, cfg)
	mounts, err := readMountInfo(mountInfoPath)
	if err != nil {
		return err
	}
	if err := ensureCgroupRoot(cfg, mounts); err != nil {
		return err
	}
	mounted, err := mountKubeletRoot(cfg)
	if err != nil {
		return err
	}
	if mounted {
		klog.FromContext(ctx).V(1).Info("Mounted the kubelet root dir", "path", KubeletRootDir(cfg), "store", kubeletRootStore(cfg))
	}
	return nil
}

// checkKubeletRootDir refuses a running kubelet whose --root-dir is not the
// node's KubeletRootDir (one an older drakit started, with the root dir in
// RunDir, or one started with another --kubelet-root-base): drivers
// deployed by the paths Status reports would register where that kubelet
// never looks.
func checkKubeletRootDir(cfg Config, p *process) error {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.ref.PID))
	if err != nil {
		return fmt.Errorf("read kubelet command line: %w", err)
	}
	want := "--root-dir=" + KubeletRootDir(cfg)
	for _, arg := range splitCmdline(raw) {
		if arg == want {
			return nil
		}
		if root, ok := strings.CutPrefix(arg, "--root-dir="); ok {
			return fmt.Errorf("kubelet of node %s (pid %d) runs with root dir %s, not %s: run drakit env down, then up",
				nodeName(cfg), p.ref.PID, root, KubeletRootDir(cfg))
		}
	}
	return fmt.Errorf("kubelet of node %s (pid %d) runs without %s: run drakit env down, then up", nodeName(cfg), p.ref.PID, want)
}

// warnOtherKubelets logs kubelets of other clusters on this host: every
// kubelet serves the device-plugin socket at the fixed path
// /var/lib/kubelet/device-plugins/kubelet.sock, so the last one started
// takes it over (DRA does not use it; device plugins would).
func warnOtherKubelets(ctx context.Context, cfg Config) {
	procs, err := listProcesses()
	if err != nil {
		return
	}
	for _, p := range procs {
		if filepath.Base(p.Exe) == "kubelet" && !p.references(cfg.RunDir) {
			klog.FromContext(ctx).Info("Another kubelet runs on this host; both use /var/lib/kubelet/device-plugins/kubelet.sock",
				"pid", p.PID, "cmdline", strings.Join(p.Cmdline, " "))
		}
	}
}

// waitReady polls a component's readiness until it passes, the process
// exits (an error with its exit status and log tail) or StartTimeout passes.
func waitReady(ctx context.Context, cfg Config, p *process, check probe) error {
	deadline := time.Now().Add(cfg.StartTimeout)
	var last error
	for {
		if gone, status := p.exited(); gone {
			return fmt.Errorf("%s (pid %d): %w: %v%s", p.name, p.ref.PID, ErrComponentExited, status, logTail(cfg, p.name))
		}
		if last = check(ctx); last == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("wait for %s: %w", p.name, ctx.Err())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s (pid %d): %w after %v: %v%s", p.name, p.ref.PID, ErrNotReady, cfg.StartTimeout, last, logTail(cfg, p.name))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// importImages imports every docker-archive in ImagesDir into a node's
// containerd, all at once.
func importImages(ctx context.Context, cfg Config) error {
	archives, err := filepath.Glob(filepath.Join(cfg.ImagesDir, "*.tar"))
	if err != nil {
		return fmt.Errorf("list images: %w", err)
	}
	sort.Strings(archives)
	t0 := time.Now()
	var g errgroup.Group
	for _, a := range archives {
		g.Go(func() error { return importImage(ctx, cfg, a) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Imported images", "node", nodeName(cfg), "count", len(archives), "dir", cfg.ImagesDir, "took", since(t0))
	return nil
}

// imageArchives lists the docker-archives of ImagesDir, sorted.
func imageArchives(cfg Config) []string {
	archives, _ := filepath.Glob(filepath.Join(cfg.ImagesDir, "*.tar"))
	sort.Strings(archives)
	return archives
}

// ImportImage imports a docker-archive tarball into every node's
// containerd, in its k8s.io namespace, where the kubelet finds it (pods must
// use imagePullPolicy Never or IfNotPresent). The nodes are those Up
// recorded in RunDir, else cfg.Nodes; they import at once.
func ImportImage(ctx context.Context, cfg Config, tarPath string) error {
	cfg, err := withRecordedNodes(cfg)
	if err != nil {
		return err
	}
	var g errgroup.Group
	for _, n := range cfg.nodes() {
		g.Go(func() error { return importImage(ctx, n, tarPath) })
	}
	return g.Wait()
}

// importImage imports a docker-archive tarball into one node's containerd.
func importImage(ctx context.Context, cfg Config, tarPath string) error {
	if p, err := runningProcess(cfg, Containerd); err != nil || p == nil {
		return fmt.Errorf("import image %s: %w (containerd of node %s in %s is not running)", tarPath, ErrNotUp, nodeName(cfg), cfg.RunDir)
	}
	ctr, err := BinaryPath(cfg, "ctr")
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, ctr, "--address", ContainerdSocket(cfg), "--namespace", "k8s.io", "images", "import", tarPath)
	cmd.Env = childEnv(cfg)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("import image %s: %w: %s", tarPath, err, strings.TrimSpace(string(out)))
	}
	klog.FromContext(ctx).V(1).Info("Imported image", "node", nodeName(cfg), "archive", tarPath, "output", strings.TrimSpace(string(out)))
	return nil
}

// waitNode waits until a node's Node is Ready, its not-ready taint is gone and
// the default ServiceAccount exists, so pods can be created and scheduled
// at once.
func waitNode(ctx context.Context, cfg Config) error {
	logger := klog.FromContext(ctx)
	client, err := Client(cfg)
	if err != nil {
		return err
	}
	t0 := time.Now()
	deadline := t0.Add(cfg.StartTimeout)
	reported := map[string]bool{}
	report := func(step string) {
		if !reported[step] {
			reported[step] = true
			logger.Info(step, "node", nodeName(cfg), "after", since(t0))
		}
	}
	for {
		state, err := nodeState(ctx, client, nodeName(cfg))
		switch {
		case err != nil:
		case state == nodeSchedulable:
			report("Node registered")
			report("Node ready")
			report("Node schedulable")
		case state == nodeReady:
			report("Node registered")
			report("Node ready")
		case state == nodeRegistered:
			report("Node registered")
		}
		if state == nodeSchedulable {
			if _, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{}); err == nil {
				return nil
			}
		}
		if gone, status := kubeletExited(cfg); gone {
			return fmt.Errorf("kubelet: %w: %v%s", ErrComponentExited, status, logTail(cfg, Kubelet))
		}
		if ctx.Err() != nil {
			return fmt.Errorf("wait for node %s: %w", nodeName(cfg), ctx.Err())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s: %w after %v (state %s, last error %v)%s", nodeName(cfg), ErrNotReady, cfg.StartTimeout, state, err, logTail(cfg, Kubelet))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// kubeletExited reports whether the kubelet's PID file names no live process.
func kubeletExited(cfg Config) (bool, error) {
	p, err := runningProcess(cfg, Kubelet)
	if err != nil {
		return true, err
	}
	return p == nil, nil
}

type nodeStateValue string

const (
	nodeAbsent      nodeStateValue = "absent"
	nodeRegistered  nodeStateValue = "registered"
	nodeReady       nodeStateValue = "ready"
	nodeSchedulable nodeStateValue = "schedulable"
)

// notReadyTaint is the taint the node-lifecycle controller removes once the
// Node is Ready.
const notReadyTaint = "node.kubernetes.io/not-ready"

func nodeState(ctx context.Context, client kubernetes.Interface, name string) (nodeStateValue, error) {
	node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nodeAbsent, err
	}
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		return nodeRegistered, nil
	}
	for _, t := range node.Spec.Taints {
		if t.Key == notReadyTaint {
			return nodeReady, nil
		}
	}
	return nodeSchedulable, nil
}
