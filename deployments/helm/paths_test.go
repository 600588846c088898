package helm_test

import (
	"strings"
	"testing"

	"drakit.dev/drakit/reference/deploy"
)

// systemPathProbes are host paths on either side of reference/deploy's
// system directory rule: every directory it names, and a directory below
// each (refused below the system trees, such as /usr, accepted elsewhere,
// such as /var/lib).
func systemPathProbes() []string {
	dirs := []string{
		"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media", "/mnt",
		"/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var",
		"/var/cache", "/var/lib", "/var/local", "/var/lock", "/var/log", "/var/mail", "/var/opt", "/var/run",
		"/var/spool", "/var/tmp",
		"/etc/containerd", "/etc/kubernetes", "/run/containerd", "/var/lib/containerd", "/var/lib/etcd",
		"/binaries", "/usrlocal",
	}
	probes := append([]string{}, dirs...)
	for _, d := range dirs {
		if d == "/" {
			d = ""
		}
		probes = append(probes, d+"/drakit-probe")
	}
	return probes
}

// driverPaths are, by chart, each driver's own host path values and how
// reference/deploy validates its default options with that value, the
// kubelet's root and the CDI directory set.
var driverPaths = []struct {
	chart, value string
	validate     func(own, kubeletRootDir, cdiDir string) error
}{
	{gpuChart, "hostRoot", func(own, k, c string) error {
		o := deploy.DefaultOptions(deploy.KindGPU)
		o.HostRoot, o.KubeletRootDir, o.CDIDir = own, k, c
		return o.Validate()
	}},
	{nicChart, "hostRoot", func(own, k, c string) error {
		o := deploy.DefaultOptions(deploy.KindNIC)
		o.HostRoot, o.KubeletRootDir, o.CDIDir = own, k, c
		return o.Validate()
	}},
	{cpuChart, "hostRoot", func(own, k, c string) error {
		o := deploy.DefaultOptions(deploy.KindCPU)
		o.HostRoot, o.KubeletRootDir, o.CDIDir = own, k, c
		return o.Validate()
	}},
	{cpuChart, "stateDir", func(own, k, c string) error {
		o := deploy.DefaultOptions(deploy.KindCPU)
		o.StateDir, o.KubeletRootDir, o.CDIDir = own, k, c
		return o.Validate()
	}},
	{tpuChart, "hostRoot", func(own, k, c string) error {
		o := deploy.DefaultOptions(deploy.KindTPU)
		o.HostRoot, o.KubeletRootDir, o.CDIDir = own, k, c
		return o.Validate()
	}},
	{plainChart, "stateDir", func(own, k, c string) error {
		o := deploy.DefaultOptions(deploy.KindPlain)
		o.StateDir, o.KubeletRootDir, o.CDIDir = own, k, c
		return o.Validate()
	}},
}

// TestChartsRefuseSystemPathsAsDeployDoes: each driver's own host path
// value renders exactly where reference/deploy accepts the path.
func TestChartsRefuseSystemPathsAsDeployDoes(t *testing.T) {
	for _, d := range driverPaths {
		for _, p := range systemPathProbes() {
			deployErr := d.validate(p, "/var/lib/kubelet", "/var/run/cdi")
			_, err := render(d.chart, d.value+"="+p)
			switch {
			case deployErr == nil && err != nil:
				t.Errorf("%s with %s=%s: reference/deploy accepts it, the chart refuses: %v", d.chart, d.value, p, err)
			case deployErr != nil && err == nil:
				t.Errorf("%s with %s=%s: reference/deploy refuses it (%v), the chart renders", d.chart, d.value, p, deployErr)
			}
		}
	}
}

// TestChartsRefuseOverlapsAndLongSocketsAsDeployDoes: a driver's own host
// path inside the kubelet's root or the CDI directory inside it, and a
// kubelet root too long for the driver's sockets, fail in every chart as
// in reference/deploy, with deploy's reason.
func TestChartsRefuseOverlapsAndLongSocketsAsDeployDoes(t *testing.T) {
	longRoot := "/var/lib/" + strings.Repeat("k", 70)
	for _, d := range driverPaths {
		for _, tc := range []struct {
			own, kubeletRootDir, cdiDir string
			reason                      string
		}{
			{"/var/lib/kubelet/drakit", "/var/lib/kubelet", "/var/run/cdi", "overlap"},
			{"/var/lib/drakit-probe", "/var/lib/kubelet", "/var/lib/drakit-probe/cdi", "overlap"},
			{"/var/lib/drakit-probe", longRoot, "/var/run/cdi", "AF_UNIX"},
		} {
			set := []string{d.value + "=" + tc.own, "kubeletRootDir=" + tc.kubeletRootDir, "cdiDir=" + tc.cdiDir}
			t.Run(d.chart+" "+strings.Join(set, ","), func(t *testing.T) {
				if err := d.validate(tc.own, tc.kubeletRootDir, tc.cdiDir); err == nil || !strings.Contains(err.Error(), tc.reason) {
					t.Fatalf("reference/deploy: got %v, want an error saying %s", err, tc.reason)
				}
				_, err := render(d.chart, set...)
				if err == nil || !strings.Contains(err.Error(), tc.reason) {
					t.Errorf("chart: got %v, want an error saying %s", err, tc.reason)
				}
			})
		}
	}
}
