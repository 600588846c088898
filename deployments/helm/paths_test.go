package helm

import (
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

// TestChartsRefuseSystemPathsAsDeployDoes: the TPU chart's hostRoot and
// the plain chart's stateDir render exactly where reference/deploy accepts
// the path.
func TestChartsRefuseSystemPathsAsDeployDoes(t *testing.T) {
	for _, p := range systemPathProbes() {
		tpu := deploy.DefaultTPUOptions()
		tpu.HostRoot = p
		plain := deploy.DefaultPlainOptions()
		plain.StateDir = p
		for _, tc := range []struct {
			chart, set string
			deployErr  error
		}{
			{tpuChart, "hostRoot=" + p, tpu.Validate()},
			{plainChart, "stateDir=" + p, plain.Validate()},
		} {
			_, err := render(tc.chart, tc.set)
			switch {
			case tc.deployErr == nil && err != nil:
				t.Errorf("%s with %s: reference/deploy accepts it, the chart refuses: %v", tc.chart, tc.set, err)
			case tc.deployErr != nil && err == nil:
				t.Errorf("%s with %s: reference/deploy refuses it (%v), the chart renders", tc.chart, tc.set, tc.deployErr)
			}
		}
	}
}
