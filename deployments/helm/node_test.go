package helm_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"drakit.dev/drakit/reference/deploy"
)

// pinnedObjects are, by chart, the objects reference/deploy renders for
// its default options pinned to node, or why it refuses the node.
var pinnedObjects = map[string]func(node string) ([]runtime.Object, error){
	gpuChart: func(node string) ([]runtime.Object, error) {
		o := deploy.DefaultOptions(deploy.KindGPU)
		o.Node = node
		m, err := deploy.Objects(o)
		if err != nil {
			return nil, err
		}
		return m.List(), nil
	},
	nicChart: func(node string) ([]runtime.Object, error) {
		o := deploy.DefaultOptions(deploy.KindNIC)
		o.Node = node
		m, err := deploy.Objects(o)
		if err != nil {
			return nil, err
		}
		return m.List(), nil
	},
	cpuChart: func(node string) ([]runtime.Object, error) {
		o := deploy.DefaultOptions(deploy.KindCPU)
		o.Node = node
		m, err := deploy.Objects(o)
		if err != nil {
			return nil, err
		}
		return m.List(), nil
	},
	tpuChart: func(node string) ([]runtime.Object, error) {
		o := deploy.DefaultOptions(deploy.KindTPU)
		o.Node = node
		m, err := deploy.Objects(o)
		if err != nil {
			return nil, err
		}
		return m.List(), nil
	},
	plainChart: func(node string) ([]runtime.Object, error) {
		o := deploy.DefaultOptions(deploy.KindPlain)
		o.Node = node
		m, err := deploy.Objects(o)
		if err != nil {
			return nil, err
		}
		return m.List(), nil
	},
}

// TestChartsPerNodeReleases: a release per node, each named after its node
// with fullnameOverride the chart's name (as the README installs them),
// renders what reference/deploy renders pinned to that node.
func TestChartsPerNodeReleases(t *testing.T) {
	for chart, objects := range pinnedObjects {
		for _, node := range []string{"127.0.0.2", "127.0.0.3"} {
			release := releaseOf[chart] + "-" + strings.ReplaceAll(node, ".", "-")
			t.Run(release, func(t *testing.T) {
				want, err := objects(node)
				if err != nil {
					t.Fatalf("reference/deploy objects: %v", err)
				}
				got := renderReleaseObjects(t, chart, release, "fullnameOverride="+releaseOf[chart], "node="+node)
				if err := compare(want, got); err != nil {
					t.Errorf("release %s against reference/deploy with node %s:\n%v", release, node, err)
				}
			})
		}
	}
}

// TestChartsRefuseWhatDeployRefusesAsNode: every kind's node value is
// refused, naming the node, where reference/deploy refuses the node: not a
// node name (a DNS subdomain; the schema's error, at /node), or too long to
// name the kind's DaemonSet, <name>-<node>, after (at most 63 characters;
// the schema's error where it is longer than any kind allows, else the
// render's). The longest node deploy accepts renders.
func TestChartsRefuseWhatDeployRefusesAsNode(t *testing.T) {
	for chart, objects := range pinnedObjects {
		name := releaseOf[chart]
		longest := strings.Repeat("n", 62-len(name))
		dottedLongest := strings.Repeat("n.", (62-len(name))/2) + strings.Repeat("n", len(name)%2)
		for _, node := range []string{"Node_1", "node-1.", "-node", longest + "n", dottedLongest + "n"} {
			t.Run(chart+" "+node, func(t *testing.T) {
				if _, err := objects(node); err == nil {
					t.Fatalf("reference/deploy accepts node %q", node)
				}
				_, err := render(chart, "node="+node)
				if err == nil {
					t.Fatalf("chart renders with node=%s", node)
				}
				if !strings.Contains(err.Error(), "at '/node'") && !strings.Contains(err.Error(), "node \""+node+"\"") {
					t.Errorf("error does not name the node: %v", err)
				}
			})
		}
		for _, node := range []string{longest, dottedLongest} {
			t.Run(chart+" "+node, func(t *testing.T) {
				want, err := objects(node)
				if err != nil {
					t.Fatalf("reference/deploy refuses node %q: %v", node, err)
				}
				if err := compare(want, renderObjects(t, chart, "node="+node)); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// TestChartsRefuseADaemonSetNameOver63: a node the schema accepts, with a
// full name longer than the chart's, fails the render naming the node and
// the DaemonSet's length, not with an object the API server refuses.
func TestChartsRefuseADaemonSetNameOver63(t *testing.T) {
	for chart := range pinnedObjects {
		t.Run(chart, func(t *testing.T) {
			fullname := strings.Repeat("f", 50)
			_, err := render(chart, "fullnameOverride="+fullname, "node=node-1.example.com")
			want := `node "node-1.example.com": the DaemonSet ` + fullname + "-node-1-example-com has 69 characters"
			if err == nil {
				t.Fatalf("chart renders with fullnameOverride=%s and node=node-1.example.com", fullname)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error = %v, want %q", err, want)
			}
		})
	}
}
