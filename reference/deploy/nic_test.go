package deploy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/kubernetes"
)

// localClusterNICOptions are the paths drakit's local cluster uses.
func localClusterNICOptions() Options {
	o := DefaultOptions(KindNIC)
	run := "/home/dev/.local/state/drakit/cluster"
	o.KubeletRootDir = run + "/kubelet/root"
	o.CDIDir = run + "/cdi"
	o.HostRoot = run + "/emulator"
	o.APIServerPort = 16443
	return o
}

func TestNICObjectsGolden(t *testing.T) {
	t.Parallel()
	m, err := Objects(DefaultOptions(KindNIC))
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, m.List(), "nic-default.yaml")
}

// TestNICObjectsLeastPrivilege pins the NIC driver pod's privileges (not
// privileged, no escalation, RuntimeDefault seccomp, a read-only root
// filesystem, no capability, exactly the four host directories it writes,
// each at its own path) and its RBAC: a kubelet plugin's rules plus, for
// the device status, patch on resourceclaims/status and
// associated-node:patch on resourceclaims/driver for its own name only.
func TestNICObjectsLeastPrivilege(t *testing.T) {
	t.Parallel()
	opts := localClusterNICOptions()
	m, err := Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	pod, c := leastPrivilegePod(t, &m.DriverObjects)
	if c.ImagePullPolicy != corev1.PullNever || c.Image != "drakit.dev/driver:dev" || len(c.Command) > 0 || c.Args[0] != "--kind=nic" {
		t.Errorf("image %s pulled %s, command %q, args %q; want drakit.dev/driver:dev never pulled, its entrypoint with --kind=nic", c.Image, c.ImagePullPolicy, c.Command, c.Args)
	}

	plugin := opts.KubeletRootDir + "/plugins/nic.drakit.dev"
	registrar := opts.KubeletRootDir + "/plugins_registry"
	sysfs := opts.HostRoot + "/sys"
	wantMounts := map[string]hostMount{
		"plugin-dir":    sameHostPath(plugin, corev1.HostPathDirectoryOrCreate, false),
		"registrar-dir": sameHostPath(registrar, corev1.HostPathDirectory, false),
		"cdi-dir":       sameHostPath(opts.CDIDir, corev1.HostPathDirectoryOrCreate, false),
		"sysfs":         sameHostPath(sysfs, corev1.HostPathDirectory, false),
	}
	if diff := cmp.Diff(wantMounts, hostMounts(t, pod, c)); diff != "" {
		t.Errorf("host mounts (-want +got):\n%s", diff)
	}
	wantArgs := []string{
		"--kind=nic",
		"--driver-name=nic.drakit.dev",
		"--host-root=" + opts.HostRoot,
		"--vfs-per-pf=4",
		"--cdi-dir=" + opts.CDIDir,
		"--kubelet-registrar-dir=" + registrar,
		"--kubelet-plugin-dir=" + plugin,
		"--v=4",
		"--http-endpoint=127.0.0.1:9471",
	}
	if diff := cmp.Diff(wantArgs, c.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}

	wantRules := []rbacv1.PolicyRule{
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceslices"}, Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims"}, Verbs: []string{"get"}},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims/driver"}, ResourceNames: []string{"nic.drakit.dev"},
			Verbs: []string{"associated-node:patch"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}},
	}
	if diff := cmp.Diff(wantRules, m.ClusterRole.Rules); diff != "" {
		t.Errorf("cluster role rules (-want +got):\n%s", diff)
	}
	if m.ClusterRole.AggregationRule != nil {
		t.Error("the cluster role aggregates other roles")
	}
	b := m.ClusterRoleBinding
	if b.RoleRef.Name != m.ClusterRole.Name || len(b.Subjects) != 1 || b.Subjects[0].Kind != "ServiceAccount" ||
		b.Subjects[0].Name != m.ServiceAccount.Name || b.Subjects[0].Namespace != m.ServiceAccount.Namespace {
		t.Errorf("cluster role binding %+v does not bind exactly the driver's service account to its role", b)
	}
}

// TestNICObjectsSubstitute: the driver name reaches the flags, the
// DeviceClasses, the status rule and the policy; the image, VFs and paths
// reach the pod.
func TestNICObjectsSubstitute(t *testing.T) {
	t.Parallel()
	opts := localClusterNICOptions()
	opts.DriverName, opts.Image, opts.VFsPerPF = "net.example.com", "example.com/driver:1", 0
	m, err := Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{
		"class":       m.DeviceClass.Name + ": " + m.DeviceClass.Spec.Selectors[0].CEL.Expression,
		"vf class":    m.Classes[0].Name + ": " + m.Classes[0].Spec.Selectors[0].CEL.Expression,
		"status rule": strings.Join(m.ClusterRole.Rules[3].ResourceNames, ","),
		"image":       m.DaemonSet.Spec.Template.Spec.Containers[0].Image,
		"args":        strings.Join(m.DaemonSet.Spec.Template.Spec.Containers[0].Args, " "),
	}
	for _, v := range m.Policy.Spec.Variables {
		if v.Name == "driverName" {
			got["policy"] = v.Expression
		}
	}
	want := map[string]string{
		"class":       `net.example.com: device.driver == "net.example.com" && device.attributes["net.example.com"].?type.orValue("") == "pf"`,
		"vf class":    `vf.net.example.com: device.driver == "net.example.com" && device.attributes["net.example.com"].?type.orValue("") == "vf"`,
		"status rule": "net.example.com",
		"image":       "example.com/driver:1",
		"args": "--kind=nic --driver-name=net.example.com --host-root=" + opts.HostRoot + " --vfs-per-pf=0 --cdi-dir=" + opts.CDIDir +
			" --kubelet-registrar-dir=" + opts.KubeletRootDir + "/plugins_registry --kubelet-plugin-dir=" + opts.KubeletRootDir +
			"/plugins/net.example.com --v=4 --http-endpoint=127.0.0.1:9471",
		"policy": `"net.example.com"`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("substitutions (-want +got):\n%s", diff)
	}
}

func TestNICOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		mutate   func(*Options)
		wantErrs []string
	}{
		{"valid-defaults", func(*Options) {}, nil},
		{"valid-local-cluster", func(o *Options) { *o = localClusterNICOptions() }, nil},
		{"vfs", func(o *Options) { o.VFsPerPF = 300 }, []string{"VFsPerPF (--vfs-per-pf) 300 is not between 0 and 256"}},
		{"real-node-root", func(o *Options) { o.HostRoot = "/" }, []string{
			`HostRoot (--host-root) "/" is a system directory: the driver pod would mount it from the host`,
		}},
		{"host-root-in-kubelet-root", func(o *Options) { o.HostRoot = o.KubeletRootDir + "/emulator" }, []string{
			`KubeletRootDir (--kubelet-root-dir) "/var/lib/kubelet" and HostRoot (--host-root) "/var/lib/kubelet/emulator" overlap: ` +
				`each is mounted with its own access, so neither may contain the other`,
		}},
		{"everything-at-once", func(o *Options) {
			o.DriverName, o.Image, o.HostRoot, o.APIServerPort, o.Timeout = strings.Repeat("n", 64), "", "emulator", 0, 0
		}, []string{
			`DriverName (--driver-name) "` + strings.Repeat("n", 64) + `" is longer than 63 characters`,
			"Image (--image) is required",
			`HostRoot (--host-root) "emulator" must be a clean absolute path`,
			"APIServerPort (--apiserver-port) 0 is not a port",
			"Timeout (--timeout) 0s must be positive",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := DefaultOptions(KindNIC)
			tc.mutate(&o)
			_, objErr := Objects(o)
			checkValidateErrors(t, o.Validate(), tc.wantErrs, objErr)
		})
	}
}

// TestApplyNICBesideTheReferenceDriver: ApplyNIC creates the NIC driver's
// deployment and waits for its slice, next to a deployed reference driver,
// and DeleteNIC removes it and leaves the reference driver alone.
func TestApplyNICBesideTheReferenceDriver(t *testing.T) {
	t.Parallel()
	opts := DefaultOptions(KindNIC)
	opts.Timeout = 10 * time.Second
	checkBesideTheReferenceDriver(t, besideTheReferenceDriver{
		w: nicWorkload, driverName: opts.DriverName, classes: []string{opts.DriverName, VFDeviceClassName(opts.DriverName)},
		apply:     func(ctx context.Context, client kubernetes.Interface) error { return Apply(ctx, client, opts) },
		remove:    func(ctx context.Context, client kubernetes.Interface) error { return Delete(ctx, client, opts) },
		applyName: "ApplyNIC", removeName: "DeleteNIC",
		objects: func() (*DriverObjects, error) {
			m, err := Objects(opts)
			if err != nil {
				return nil, err
			}
			return &m.DriverObjects, nil
		},
	})
}

// TestNICPolicyIsTheReferencePolicy: the NIC driver's admission policy is
// the reference driver's (policy_test.go checks its logic) for the NIC
// driver's service account and driver name.
func TestNICPolicyIsTheReferencePolicy(t *testing.T) {
	t.Parallel()
	nic, err := Objects(DefaultOptions(KindNIC))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := Objects(DefaultOptions(KindGPU))
	if err != nil {
		t.Fatal(err)
	}
	want := ref.Policy.Spec.DeepCopy()
	for i := range want.MatchConditions {
		want.MatchConditions[i].Expression = strings.ReplaceAll(want.MatchConditions[i].Expression,
			"system:serviceaccount:"+Namespace+":"+Name, "system:serviceaccount:"+NICNamespace+":"+NICName)
	}
	for i := range want.Variables {
		if want.Variables[i].Name == "driverName" {
			want.Variables[i].Expression = `"` + DefaultOptions(KindNIC).DriverName + `"`
		}
	}
	if diff := cmp.Diff(*want, nic.Policy.Spec); diff != "" {
		t.Errorf("NIC policy (-reference policy for the NIC driver +NIC policy):\n%s", diff)
	}
}
