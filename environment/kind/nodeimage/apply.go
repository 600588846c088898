package nodeimage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"k8s.io/klog/v2"

	"drakit.dev/drakit/cluster/images"
)

// Apply carries the plan out on rootfs, a debootstrapped root filesystem
// with Packages: it removes, copies, writes, links, builds the image
// archives, appends and writes the CRI base spec, in that order. It runs as root, so copied files
// are owned by root as in kind's image.
func (p *Plan) Apply(ctx context.Context, rootfs string) error {
	logger := klog.FromContext(ctx)
	for _, pattern := range p.Removes {
		matches, err := filepath.Glob(rootPath(rootfs, pattern))
		if err != nil {
			return fmt.Errorf("remove %s: %w", pattern, err)
		}
		for _, m := range matches {
			if err := os.Remove(m); err != nil {
				return fmt.Errorf("remove %s: %w", m, err)
			}
		}
	}
	for _, f := range p.Copies {
		if err := copyFile(f.Src, rootPath(rootfs, f.Dst), f.Mode); err != nil {
			return fmt.Errorf("copy %s to %s: %w", f.Src, f.Dst, err)
		}
	}
	for _, w := range p.Writes {
		if err := mkdirFor(rootfs, w.Dst); err != nil {
			return fmt.Errorf("write %s: %w", w.Dst, err)
		}
		if err := os.WriteFile(rootPath(rootfs, w.Dst), []byte(w.Content), w.Mode); err != nil {
			return fmt.Errorf("write %s: %w", w.Dst, err)
		}
	}
	for _, l := range p.Links {
		dst := rootPath(rootfs, l.Dst)
		if err := mkdirFor(rootfs, l.Dst); err != nil {
			return fmt.Errorf("link %s: %w", l.Dst, err)
		}
		if err := os.Remove(dst); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("link %s: %w", l.Dst, err)
		}
		if err := os.Symlink(l.Target, dst); err != nil {
			return fmt.Errorf("link %s: %w", l.Dst, err)
		}
	}
	for _, i := range p.Images {
		if err := mkdirFor(rootfs, i.Dst); err != nil {
			return fmt.Errorf("build image %s: %w", i.Spec.Name, err)
		}
		if err := images.Build(ctx, i.Spec, rootPath(rootfs, i.Dst)); err != nil {
			return fmt.Errorf("build image %s: %w", i.Spec.Name, err)
		}
		logger.V(2).Info("Built image archive", "image", i.Spec.Name, "path", i.Dst)
	}
	for _, a := range p.Appends {
		f, err := os.OpenFile(rootPath(rootfs, a.Dst), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("append to %s: %w", a.Dst, err)
		}
		_, err = io.WriteString(f, a.Content)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("append to %s: %w", a.Dst, err)
		}
	}
	spec, err := ociSpec(ctx, p.CRIBaseFrom)
	if err != nil {
		return fmt.Errorf("write %s: %w", CRIBaseSpec, err)
	}
	base, err := criBase(spec)
	if err != nil {
		return fmt.Errorf("write %s: %w", CRIBaseSpec, err)
	}
	if err := os.WriteFile(rootPath(rootfs, CRIBaseSpec), base, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", CRIBaseSpec, err)
	}
	return nil
}

// copyFile copies src to dst with mode, creating dst's directory.
func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}

// Import tars rootfs (numeric owners, as debootstrap made it) into
// `docker import` with the plan's changes, as image. The two run as a
// shell pipeline would: neither end of the pipe stays open here, so tar
// stops when docker import fails.
func (p *Plan) Import(ctx context.Context, rootfs, image string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("import node image %s: %w", image, err)
	}
	var tarErr, importOut bytes.Buffer
	tarCmd := exec.CommandContext(ctx, "tar", "-C", rootfs, "--numeric-owner", "-c", ".")
	tarCmd.Stdout, tarCmd.Stderr = w, &tarErr
	importCmd := exec.CommandContext(ctx, "docker", p.ImportArgs(image)...)
	importCmd.Stdin, importCmd.Stdout, importCmd.Stderr = r, &importOut, &importOut
	tarStart := tarCmd.Start()
	importStart := importCmd.Start()
	r.Close()
	w.Close()
	if tarStart != nil || importStart != nil {
		if tarStart == nil {
			_ = tarCmd.Wait()
		}
		if importStart == nil {
			_ = importCmd.Wait()
		}
		return fmt.Errorf("import node image %s: %w", image, errors.Join(tarStart, importStart))
	}
	importErr := importCmd.Wait()
	tarWaitErr := tarCmd.Wait()
	if importErr != nil {
		return fmt.Errorf("import node image %s: docker import: %w: %s", image, importErr, bytes.TrimSpace(importOut.Bytes()))
	}
	if tarWaitErr != nil {
		return fmt.Errorf("import node image %s: tar: %w: %s", image, tarWaitErr, bytes.TrimSpace(tarErr.Bytes()))
	}
	return nil
}
