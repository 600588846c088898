// Package images assembles container images as docker-archive tarballs on the
// local machine, with no registry and no Docker, for drakit's local cluster
// (which imports them with `ctr -n k8s.io images import` and never pulls).
//
// An archive holds manifest.json, the image config named after its own sha256
// (<hex>.json) and one uncompressed layer, layer.tar. The config's
// rootfs.diff_ids lists the layer's sha256, and manifest.json's RepoTags
// carries the image name. Archives are deterministic: entries are sorted,
// owned by 0:0 and carry a fixed modification time, so the same inputs always
// give the same bytes and the same image ID.
//
// Build copies host files to container paths. With Spec.WithSharedLibraries
// it also copies, at their own paths, the ELF interpreter and every shared
// library ldd reports for each dynamically linked file, so a cgo binary runs
// in an image that has no base layer. BuildPause compiles the kit's pause
// program (pause.c, embedded) with gcc -static and wraps it as PauseImage,
// the sandbox image the cluster's containerd is configured to use.
package images
