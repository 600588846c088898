package helm

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// ChartName is the chart's name and its directory here.
const ChartName = "drakit-driver"

// files are the chart's files (all:, so that templates/_helpers.tpl is one).
//
//go:embed all:drakit-driver
var files embed.FS

// Chart returns the chart, loaded once from the files embedded in the
// binary: what `drakit driver deploy` renders is what `helm install
// deployments/helm/drakit-driver` renders. Callers must not change it.
var Chart = sync.OnceValues(func() (*chartv2.Chart, error) {
	var buffered []*archive.BufferedFile
	err := fs.WalkDir(files, ChartName, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := files.ReadFile(path)
		if err != nil {
			return err
		}
		buffered = append(buffered, &archive.BufferedFile{Name: strings.TrimPrefix(path, ChartName+"/"), Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read chart %s: %w", ChartName, err)
	}
	c, err := loader.LoadFiles(buffered)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", ChartName, err)
	}
	return c, nil
})
