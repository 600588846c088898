package nvidiahw

// MIG capabilities are the character devices
// /dev/nvidia-caps/nvidia-cap<minor>. The NVIDIA driver fixes their minors
// in advance and lists them in /proc/driver/nvidia-caps/mig-minors (NVIDIA
// MIG User Guide, "Device Nodes and Capabilities"):
//
//	config 1
//	monitor 2
//	gpu0/gi0/access 3
//	gpu0/gi0/ci0/access 4
//	gpu0/gi0/ci1/access 5
//	...
//	gpu31/gi14/ci7/access 4322
//
// After config and monitor, each GPU, by its device minor (the N of
// /dev/nvidiaN), has 135 entries: for each GPU instance ID 0..14 the
// instance's access, followed by the access of each compute instance ID
// 0..7 inside it.
const (
	// ConfigCapMinor is the minor of the MIG "config" capability (create
	// and destroy MIG instances).
	ConfigCapMinor = 1
	// MonitorCapMinor is the minor of the MIG "monitor" capability.
	MonitorCapMinor = 2
	// MaxGIID and MaxCIID are the largest GPU instance ID (0..14) and
	// compute instance ID (0..7) the table has entries for.
	MaxGIID = 14
	MaxCIID = 7
)

// GIAccessMinor is the minor of the capability gpu<gpu>/gi<gi>/access of
// GPU instance gi on the GPU with device minor gpu: 3 + gpu·135 + gi·9.
func GIAccessMinor(gpu, gi int) int { return 3 + gpu*135 + gi*9 }

// CIAccessMinor is the minor of the capability gpu<gpu>/gi<gi>/ci<ci>/access
// of compute instance ci inside GPU instance gi: GIAccessMinor + 1 + ci.
func CIAccessMinor(gpu, gi, ci int) int { return GIAccessMinor(gpu, gi) + 1 + ci }
