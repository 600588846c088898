package deploy

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// driverContainer renders the GPU driver's container for opts.
func driverContainer(t *testing.T, opts Options) corev1.Container {
	t.Helper()
	m, err := Objects(opts)
	if err != nil {
		t.Fatal(err)
	}
	return m.DaemonSet.Spec.Template.Spec.Containers[0]
}

// TestHTTPPort: the driver serves on 127.0.0.1:<HTTPPort> and the liveness
// probe asks /healthz there; 0 renders neither; a port out of range is
// refused naming --http-port.
func TestHTTPPort(t *testing.T) {
	t.Parallel()
	opts := localClusterOptions()
	opts.HTTPPort = 19470
	c := driverContainer(t, opts)
	if !slices.Contains(c.Args, "--http-endpoint=127.0.0.1:19470") {
		t.Errorf("args %q, want --http-endpoint=127.0.0.1:19470", c.Args)
	}
	if p := c.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Host != "127.0.0.1" || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.IntValue() != 19470 {
		t.Errorf("liveness probe %+v, want GET 127.0.0.1:19470/healthz", p)
	}

	opts.HTTPPort = 0
	c = driverContainer(t, opts)
	if c.LivenessProbe != nil || slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--http-endpoint") }) {
		t.Errorf("HTTPPort 0: probe %+v, args %q; want neither", c.LivenessProbe, c.Args)
	}

	for _, bad := range []int{-1, 65536} {
		opts.HTTPPort = bad
		if _, err := Objects(opts); err == nil || !strings.Contains(err.Error(), "HTTPPort (--http-port)") {
			t.Errorf("HTTPPort %d: error %v, want one naming --http-port", bad, err)
		}
	}
}

// TestDefaultHTTPPortsDistinct: the drivers run side by side on a node's
// loopback, each on a port of its own.
func TestDefaultHTTPPortsDistinct(t *testing.T) {
	t.Parallel()
	ports := map[int]string{}
	for name, port := range map[string]int{
		"gpu": DefaultOptions(KindGPU).HTTPPort, "nic": DefaultOptions(KindNIC).HTTPPort, "cpu": DefaultOptions(KindCPU).HTTPPort,
		"tpu": DefaultOptions(KindTPU).HTTPPort, "plain": DefaultOptions(KindPlain).HTTPPort,
	} {
		if port == 0 {
			t.Errorf("%s: no default HTTPPort", name)
		}
		if other, ok := ports[port]; ok {
			t.Errorf("%s and %s share the default HTTPPort %d", name, other, port)
		}
		ports[port] = name
	}
}
