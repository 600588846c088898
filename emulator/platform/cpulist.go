package platform

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxCPUs bounds CPU ids in a cpulist (ids are 0..MaxCPUs-1), like the
// kernel's NR_CPUS on large x86 configurations.
const MaxCPUs = 8192

// ParseCPUList parses the kernel's list format ("0-3,8,10-11") into sorted,
// distinct CPU ids. The empty string is the empty list.
func ParseCPUList(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	seen := make(map[int]bool)
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := parseCPU(lo)
		if err != nil {
			return nil, err
		}
		last := first
		if isRange {
			if last, err = parseCPU(hi); err != nil {
				return nil, err
			}
			if last < first {
				return nil, fmt.Errorf("range %q runs backwards", part)
			}
		}
		for c := first; c <= last; c++ {
			if seen[c] {
				return nil, fmt.Errorf("CPU %d listed twice", c)
			}
			seen[c] = true
			cpus = append(cpus, c)
		}
	}
	slices.Sort(cpus)
	return cpus, nil
}

func parseCPU(s string) (int, error) {
	if s == "" || len(s) > 5 || strings.TrimLeft(s, "0123456789") != "" || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("%q is not a CPU number", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n >= MaxCPUs {
		return 0, fmt.Errorf("CPU %s is out of range 0..%d", s, MaxCPUs-1)
	}
	return n, nil
}

// FormatCPUList writes sorted, distinct CPU ids in the kernel's list format
// with maximal ranges, as /sys/devices/system/node/node<N>/cpulist shows them.
func FormatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if i == j {
			fmt.Fprintf(&b, "%d", cpus[i])
		} else {
			fmt.Fprintf(&b, "%d-%d", cpus[i], cpus[j])
		}
		i = j + 1
	}
	return b.String()
}

// FormatCPUMask writes CPU ids as the kernel's cpumask format (local_cpus,
// cpumap): comma-separated 32-bit hex words, most significant first, covering
// nrCPUs bits.
func FormatCPUMask(cpus []int, nrCPUs int) string {
	words := make([]uint32, max(1, (nrCPUs+31)/32))
	for _, c := range cpus {
		if c/32 < len(words) {
			words[c/32] |= 1 << (c % 32)
		}
	}
	parts := make([]string, len(words))
	for i, w := range words {
		parts[len(words)-1-i] = fmt.Sprintf("%08x", w)
	}
	return strings.Join(parts, ",")
}
