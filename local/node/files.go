package node

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// volFile is one file of a written volume.
type volFile struct {
	path string // relative to the volume
	data []byte
	mode os.FileMode
}

const defaultFileMode = 0o644

// volumeFiles reads the files of a configMap, secret, downwardAPI or
// projected volume from the API.
func (r *podRun) volumeFiles(ctx context.Context, pod *corev1.Pod, src corev1.VolumeSource) ([]volFile, error) {
	mode := func(m *int32) os.FileMode {
		if m == nil {
			return defaultFileMode
		}
		return os.FileMode(*m) & 0o777
	}
	switch {
	case src.ConfigMap != nil:
		s := src.ConfigMap
		return r.configMapFiles(ctx, pod.Namespace, s.Name, s.Items, s.Optional, mode(s.DefaultMode))
	case src.Secret != nil:
		s := src.Secret
		return r.secretFiles(ctx, pod.Namespace, s.SecretName, s.Items, s.Optional, mode(s.DefaultMode))
	case src.DownwardAPI != nil:
		return downwardFiles(pod, src.DownwardAPI.Items, mode(src.DownwardAPI.DefaultMode))
	}
	var out []volFile
	p := src.Projected
	def := mode(p.DefaultMode)
	for i, s := range p.Sources {
		var files []volFile
		var err error
		switch {
		case s.ConfigMap != nil:
			files, err = r.configMapFiles(ctx, pod.Namespace, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, def)
		case s.Secret != nil:
			files, err = r.secretFiles(ctx, pod.Namespace, s.Secret.Name, s.Secret.Items, s.Secret.Optional, def)
		case s.DownwardAPI != nil:
			files, err = downwardFiles(pod, s.DownwardAPI.Items, def)
		case s.ServiceAccountToken != nil:
			files, err = r.tokenFiles(ctx, pod, s.ServiceAccountToken, def)
		default:
			err = fmt.Errorf("projected source %d: only configMap, secret, downwardAPI and serviceAccountToken are supported by the local node", i)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, files...)
	}
	return out, nil
}

func (r *podRun) configMapFiles(ctx context.Context, ns, name string, items []corev1.KeyToPath, optional *bool, def os.FileMode) ([]volFile, error) {
	cm, err := r.p.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if isNotFound(err) && optional != nil && *optional {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("configMap %q: %w", name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyFiles("configMap", name, data, items, optional, def)
}

func (r *podRun) secretFiles(ctx context.Context, ns, name string, items []corev1.KeyToPath, optional *bool, def os.FileMode) ([]volFile, error) {
	s, err := r.p.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if isNotFound(err) && optional != nil && *optional {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("secret %q: %w", name, err)
	}
	data := map[string][]byte{}
	for k, v := range s.Data {
		data[k] = v
	}
	for k, v := range s.StringData {
		data[k] = []byte(v)
	}
	return keyFiles("secret", name, data, items, optional, def)
}

// keyFiles maps the keys of a configMap or secret to files: every key, or
// the items asked for.
func keyFiles(kind, name string, data map[string][]byte, items []corev1.KeyToPath, optional *bool, def os.FileMode) ([]volFile, error) {
	var out []volFile
	if len(items) == 0 {
		for k, v := range data {
			out = append(out, volFile{path: k, data: v, mode: def})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional != nil && *optional {
				continue
			}
			return nil, fmt.Errorf("%s %q has no key %q", kind, name, it.Key)
		}
		m := def
		if it.Mode != nil {
			m = os.FileMode(*it.Mode) & 0o777
		}
		out = append(out, volFile{path: it.Path, data: v, mode: m})
	}
	return out, nil
}

// tokenFiles requests a service account token bound to the pod.
func (r *podRun) tokenFiles(ctx context.Context, pod *corev1.Pod, s *corev1.ServiceAccountTokenProjection, def os.FileMode) ([]volFile, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: s.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if s.Audience != "" {
		req.Spec.Audiences = []string{s.Audience}
	}
	tr, err := r.p.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("service account token of %q: %w", sa, err)
	}
	return []volFile{{path: s.Path, data: []byte(tr.Status.Token), mode: def}}, nil
}

// downwardFiles writes the pod's own fields.
func downwardFiles(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, def os.FileMode) ([]volFile, error) {
	var out []volFile
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = fieldValue(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			v, err = resourceValue(pod, it.ResourceFieldRef)
		default:
			err = fmt.Errorf("downwardAPI item %q: no fieldRef or resourceFieldRef", it.Path)
		}
		if err != nil {
			return nil, err
		}
		m := def
		if it.Mode != nil {
			m = os.FileMode(*it.Mode) & 0o777
		}
		out = append(out, volFile{path: it.Path, data: []byte(v), mode: m})
	}
	return out, nil
}

// fieldValue is the value of a downward API field path.
func fieldValue(pod *corev1.Pod, path string) (string, error) {
	mapValue := func(m map[string]string) string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		lines := make([]string, 0, len(keys))
		for _, k := range keys {
			lines = append(lines, k+"="+strconv.Quote(m[k]))
		}
		return strings.Join(lines, "\n")
	}
	if key, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return mapValue(pod.Labels), nil
	case "metadata.annotations":
		return mapValue(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		return pod.Status.HostIP, nil
	case "status.podIP":
		return pod.Status.PodIP, nil
	}
	return "", fmt.Errorf("downward API field %q is not supported", path)
}

// subscript parses PREFIX['KEY'].
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok || !strings.HasSuffix(rest, "']") {
		return "", false
	}
	return strings.TrimSuffix(rest, "']"), true
}

// resourceValue is a container's request or limit divided by the divisor,
// rounded up.
func resourceValue(pod *corev1.Pod, ref *corev1.ResourceFieldSelector) (string, error) {
	var c *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == ref.ContainerName || (ref.ContainerName == "" && i == 0) {
			c = &pod.Spec.Containers[i]
			break
		}
	}
	if c == nil {
		return "", fmt.Errorf("downward API resource %q: no container %q", ref.Resource, ref.ContainerName)
	}
	kind, res, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("downward API resource %q is not supported", ref.Resource)
	}
	list := c.Resources.Requests
	if kind == "limits" {
		list = c.Resources.Limits
	}
	q, ok := list[corev1.ResourceName(res)]
	if !ok {
		return "0", nil
	}
	div := ref.Divisor
	if div.IsZero() {
		div = resource.MustParse("1")
	}
	return strconv.FormatInt(int64(math.Ceil(q.AsApproximateFloat64()/div.AsApproximateFloat64())), 10), nil
}

// writeFiles replaces dir's contents by files.
func writeFiles(dir string, files []volFile) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		clean := filepath.Clean(f.path)
		if f.path == "" || filepath.IsAbs(f.path) || clean == ".." || strings.HasPrefix(clean, "../") {
			return fmt.Errorf("file path %q: must be relative and inside the volume", f.path)
		}
		p := filepath.Join(dir, clean)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return err
		}
		if err := os.Chmod(p, f.mode); err != nil {
			return err
		}
	}
	return nil
}
