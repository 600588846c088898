package clusterprofile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"

	"drakit.dev/drakit/emulator/render"
)

// RenderNode renders node name of c into opts.Root (render.Render).
func RenderNode(ctx context.Context, c *Cluster, name string, opts render.Options) error {
	n, ok := c.Node(name)
	if !ok {
		return fmt.Errorf("render node %s of cluster profile %s: %w (nodes: %s)", name, c.Name, ErrUnknownNode, c.nodeList())
	}
	if err := render.Render(ctx, n.Profile, opts); err != nil {
		return fmt.Errorf("render node %s of cluster profile %s: %w", name, c.Name, err)
	}
	return nil
}

// RenderAll renders every node of c into <out>/<node name>/, one after the
// other, with opts (its Root is replaced per node), and returns how long
// it took and the bytes the files take (sizes of regular files).
func RenderAll(ctx context.Context, c *Cluster, out string, opts render.Options) (time.Duration, int64, error) {
	logger := klog.FromContext(ctx)
	start := time.Now()
	for i := range c.Nodes {
		if err := ctx.Err(); err != nil {
			return time.Since(start), 0, fmt.Errorf("render cluster profile %s: %w", c.Name, err)
		}
		opts.Root = filepath.Join(out, c.Nodes[i].Name)
		if err := RenderNode(ctx, c, c.Nodes[i].Name, opts); err != nil {
			return time.Since(start), 0, err
		}
		logger.V(2).Info("Rendered node", "node", c.Nodes[i].Name, "root", opts.Root)
	}
	took := time.Since(start)
	var size int64
	err := filepath.WalkDir(out, func(_ string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			size += info.Size()
		}
		return err
	})
	if err != nil {
		return took, 0, fmt.Errorf("measure %s: %w", out, err)
	}
	return took, size, nil
}

// nodeList names the first nodes of c for an error message.
func (c *Cluster) nodeList() string {
	const shown = 8
	s := ""
	for i, n := range c.Nodes {
		if i == shown {
			return s + fmt.Sprintf(", … %d more", len(c.Nodes)-shown)
		}
		if i > 0 {
			s += ", "
		}
		s += n.Name
	}
	return s
}
