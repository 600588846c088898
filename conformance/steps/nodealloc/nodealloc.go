package nodealloc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// nodeAllocState is what the KEP-5517 steps remember: the capacity of the
// driver's devices that maps onto node allocatable cpu.
type nodeAllocState struct {
	cpuKey resourceapi.QualifiedName
}

// expectedNodeAlloc is what 1.37.2's scheduler computes for one claim
// (pkg/scheduler/framework/plugins/dynamicresources,
// buildNodeAllocatableDRAInfo): per node allocatable resource, the sum over
// the claim's results of consumedCapacity[capacityKey] x capacityMultiplier
// (a result without that key adds nothing), or deviceMultiplier per
// device; and the overheads summed per resource.
func expectedNodeAlloc(results []resourceapi.DeviceRequestAllocationResult, device func(resourceapi.DeviceRequestAllocationResult) (*resourceapi.Device, error)) (map[corev1.ResourceName]resource.Quantity, map[corev1.ResourceName]corev1.NodeAllocatableOverheadResources, error) {
	mapped := map[corev1.ResourceName]resource.Quantity{}
	overhead := map[corev1.ResourceName]corev1.NodeAllocatableOverheadResources{}
	for _, r := range results {
		d, err := device(r)
		if err != nil {
			return nil, nil, err
		}
		for name, nar := range d.NodeAllocatableResources {
			if m := nar.Mapping; m != nil {
				switch {
				case m.CapacityKey != nil:
					if c, ok := r.ConsumedCapacity[*m.CapacityKey]; ok {
						c = c.DeepCopy() // AsDec and Mul would change the claim's quantity otherwise
						amount := c.AsDec()
						if m.CapacityMultiplier != nil {
							amount.Mul(amount, m.CapacityMultiplier.AsDec())
						}
						q := mapped[name]
						q.Add(*resource.NewDecimalQuantity(*amount, c.Format))
						mapped[name] = q
					}
				case m.DeviceMultiplier != nil:
					q := mapped[name]
					q.Add(*m.DeviceMultiplier)
					mapped[name] = q
				}
			}
			if o := nar.Overhead; o != nil {
				cur := overhead[name]
				cur.Name = name
				cur.PerPod = addOptional(cur.PerPod, o.PerPod)
				cur.PerContainer = addOptional(cur.PerContainer, o.PerContainer)
				overhead[name] = cur
			}
		}
	}
	return mapped, overhead, nil
}

func addOptional(sum, q *resource.Quantity) *resource.Quantity {
	if q == nil {
		return sum
	}
	if sum == nil {
		c := q.DeepCopy()
		return &c
	}
	sum.Add(*q)
	return sum
}

// podCPURequestMilli is what the scheduler counts of a pod's cpu: its
// containers' requests (the larger of their sum and the largest init
// container's), its overhead, and what the scheduler wrote into
// status.nodeAllocatableResourceClaimStatuses (mapping, perPod, and
// perContainer once per container it names).
func podCPURequestMilli(pod *corev1.Pod) int64 {
	var sum, initMax int64
	for _, c := range pod.Spec.Containers {
		sum += c.Resources.Requests.Cpu().MilliValue()
	}
	for _, c := range pod.Spec.InitContainers {
		initMax = max(initMax, c.Resources.Requests.Cpu().MilliValue())
	}
	total := max(sum, initMax) + pod.Spec.Overhead.Cpu().MilliValue()
	for _, s := range pod.Status.NodeAllocatableResourceClaimStatuses {
		total += mappedMilli(s, corev1.ResourceCPU)
		for _, o := range s.Overhead {
			if o.Name != corev1.ResourceCPU {
				continue
			}
			if o.PerPod != nil {
				total += o.PerPod.MilliValue()
			}
			if o.PerContainer != nil {
				total += o.PerContainer.MilliValue() * int64(len(s.Containers))
			}
		}
	}
	return total
}

// mappedMilli is a status entry's mapped amount of resource, in milli-units.
func mappedMilli(s corev1.NodeAllocatableResourceClaimStatus, name corev1.ResourceName) int64 {
	var total int64
	for _, m := range s.Mapping {
		if m.Name == name && m.Quantity != nil {
			total += m.Quantity.MilliValue()
		}
	}
	return total
}

// freeCPUMilli is the node's allocatable cpu less what its pods that have
// not ended ask for (podCPURequestMilli), as the scheduler's NodeInfo
// counts it.
func (w *world) freeCPUMilli(ctx context.Context) (int64, string, error) {
	node, err := w.NodeName(ctx)
	if err != nil {
		return 0, "", err
	}
	n, err := w.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return 0, "", fmt.Errorf("get node %s: %w", node, err)
	}
	pods, err := w.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return 0, "", fmt.Errorf("list pods of node %s: %w", node, err)
	}
	free := n.Status.Allocatable.Cpu().MilliValue()
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		free -= podCPURequestMilli(p)
	}
	return free, node, nil
}

// cpuShares is the kubelet's MilliCPUToShares (pkg/kubelet/cm): 1024 per
// cpu, at least 2.
func cpuShares(milli int64) int64 {
	return max(milli*1024/1000, 2)
}

// findPodCgroup finds the directory of the pod's cgroup below root (the
// cgroup v1 cpu hierarchy, or the v2 unified one): named pod<uid> (the
// kubelet's cgroupfs driver) or ending in pod<uid with _ for ->.slice
// (systemd driver), at most 5 levels down.
func findPodCgroup(root string, uid string) (string, error) {
	names := []string{"pod" + uid}
	systemd := "pod" + strings.ReplaceAll(uid, "-", "_") + ".slice"
	var found string
	base := strings.Count(filepath.Clean(root), string(filepath.Separator))
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		// A kind node's pod cgroups nest below the node container's
		// (docker/<id>/kubelet.slice/kubelet-kubepods.slice/…/…pod<uid>.slice,
		// 6 deep on cgroup v1): 8 leaves room for another level of nesting.
		if strings.Count(p, string(filepath.Separator))-base > 8 {
			return filepath.SkipDir
		}
		if n := d.Name(); n == names[0] || strings.HasSuffix(n, systemd) {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("search %s for the cgroup of pod %s: %w", root, uid, err)
	}
	if found == "" {
		return "", fmt.Errorf("no cgroup of pod %s below %s", uid, root)
	}
	return found, nil
}

// readPodCPUWeight reads what the kubelet set as the pod cgroup's cpu
// weight below cgroupRoot: cpu.shares on cgroup v1 (the cpu hierarchy,
// <root>/cpu), cpu.weight on v2. want converts the expected shares into
// the file's unit.
func readPodCPUWeight(cgroupRoot, uid string) (file string, value int64, toUnit func(int64) int64, err error) {
	root, file, toUnit := filepath.Join(cgroupRoot, "cpu"), "cpu.shares", func(s int64) int64 { return s }
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		// cgroup v2: the kubelet converts shares to weight (libcontainer
		// ConvertCPUSharesToCgroupV2Value).
		root, file, toUnit = cgroupRoot, "cpu.weight", func(s int64) int64 { return 1 + ((s-2)*9999)/262142 }
	}
	dir, err := findPodCgroup(root, uid)
	if err != nil {
		return "", 0, nil, err
	}
	path := filepath.Join(dir, file)
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", 0, nil, fmt.Errorf("read %s: %w", path, err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		return "", 0, nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return path, v, toUnit, nil
}
