package cdiconfig

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"

	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

// Name is the one CDIConfig CDI and virtkit read.
const Name = "config"

// Defaults are what the status says where the spec is silent.
type Defaults struct {
	// UploadProxyURL is where users reach the upload proxy (virt-api);
	// empty: unknown, and the status says none.
	UploadProxyURL string
}

// NextStatus is the status cfg's spec gives, with classes the names of
// the StorageClasses there are, and one error per value of the spec that
// cannot be used (left out of the status). The scratch space class is the
// spec's if that class exists, else none (a scratch claim then takes its
// claim's class), as CDI says it.
func NextStatus(cfg *cdiv1.CDIConfig, d Defaults, classes []string) (cdiv1.CDIConfigStatus, []error) {
	st := *cfg.Status.DeepCopy()
	st.UploadProxyURL = nil
	switch {
	case cfg.Spec.UploadProxyURLOverride != nil:
		st.UploadProxyURL = ptrTo(*cfg.Spec.UploadProxyURLOverride)
	case d.UploadProxyURL != "":
		st.UploadProxyURL = ptrTo(d.UploadProxyURL)
	}
	st.ScratchSpaceStorageClass = ""
	if c := cfg.Spec.ScratchSpaceStorageClass; c != nil && slices.Contains(classes, *c) {
		st.ScratchSpaceStorageClass = *c
	}
	st.DefaultPodResourceRequirements = PodResources(cfg.Spec.PodResourceRequirements)
	st.ImportProxy = cfg.Spec.ImportProxy.DeepCopy()
	st.Preallocation = cfg.Spec.Preallocation != nil && *cfg.Spec.Preallocation
	var errs []error
	fo := &cdiv1.FilesystemOverhead{Global: cdiv1.Percent(formatPercent(contract.DefaultFilesystemOverhead))}
	if spec := cfg.Spec.FilesystemOverhead; spec != nil {
		if spec.Global != "" {
			if _, err := parsePercent(spec.Global); err != nil {
				errs = append(errs, fmt.Errorf("spec.filesystemOverhead.global: %w", err))
			} else {
				fo.Global = spec.Global
			}
		}
		classes := make([]string, 0, len(spec.StorageClass))
		for c := range spec.StorageClass {
			classes = append(classes, c)
		}
		sort.Strings(classes)
		for _, c := range classes {
			v := spec.StorageClass[c]
			if _, err := parsePercent(v); err != nil {
				errs = append(errs, fmt.Errorf("spec.filesystemOverhead.storageClass[%s]: %w", c, err))
				continue
			}
			if fo.StorageClass == nil {
				fo.StorageClass = map[string]cdiv1.Percent{}
			}
			fo.StorageClass[c] = v
		}
	}
	st.FilesystemOverhead = fo
	return st, errs
}

// Overhead is the share of a file-system claim of StorageClass class kept
// for its file system, as cfg's status says (CDI's rule: the class's value,
// else the global one), or contract.DefaultFilesystemOverhead when cfg is
// nil or says nothing usable.
func Overhead(cfg *cdiv1.CDIConfig, class string) float64 {
	if cfg == nil || cfg.Status.FilesystemOverhead == nil {
		return contract.DefaultFilesystemOverhead
	}
	fo := cfg.Status.FilesystemOverhead
	if v, ok := fo.StorageClass[class]; ok && class != "" {
		if f, err := parsePercent(v); err == nil {
			return f
		}
	}
	if f, err := parsePercent(fo.Global); err == nil {
		return f
	}
	return contract.DefaultFilesystemOverhead
}

// percent is CDI's pattern of a Percent.
var percent = regexp.MustCompile(`^(0(\.\d{1,3})?|1)$`)

// parsePercent reads a CDI Percent: 0 to 1, with at most three decimals.
func parsePercent(p cdiv1.Percent) (float64, error) {
	if !percent.MatchString(string(p)) {
		return 0, fmt.Errorf("%q: must be a fraction from 0 to 1 with at most three decimals, such as 0.055", string(p))
	}
	return strconv.ParseFloat(string(p), 64)
}

func formatPercent(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func ptrTo[T any](v T) *T { return &v }
