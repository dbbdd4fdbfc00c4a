package node

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	"github.com/virtkit/virtkit/virt/network"
)

// SecondaryNetwork is one network a pod joins besides its own, as Multus
// attaches it: a NetworkAttachmentDefinition's CNI configuration run for
// the pod's interface.
type SecondaryNetwork struct {
	// Interface is the pod's interface (net1, ...).
	Interface string `json:"interface"`
	// Network is the attachment, NAMESPACE/NAME.
	Network string `json:"network"`
	// Config is the attachment's spec.config: a CNI network configuration
	// or configuration list.
	Config json.RawMessage `json:"config"`
}

// ParseMultusNetworks reads a pod's network.MultusNetworksAnnotation, in
// its JSON form (a list of network.MultusSelection) or its short form
// ([NAMESPACE/]NAME[@INTERFACE], comma-separated). A network without a
// namespace is in namespace; one without an interface gets net1, net2, ...
// by its place, as Multus names them.
func ParseMultusNetworks(value, namespace string) ([]network.MultusSelection, error) {
	value = strings.TrimSpace(value)
	if value == "" {
		return nil, nil
	}
	var out []network.MultusSelection
	if strings.HasPrefix(value, "[") {
		if err := json.Unmarshal([]byte(value), &out); err != nil {
			return nil, fmt.Errorf("annotation %s: %w", network.MultusNetworksAnnotation, err)
		}
	} else {
		for _, item := range strings.Split(value, ",") {
			item = strings.TrimSpace(item)
			var s network.MultusSelection
			s.Name, s.Interface, _ = strings.Cut(item, "@")
			if ns, name, found := strings.Cut(s.Name, "/"); found {
				s.Namespace, s.Name = ns, name
			}
			out = append(out, s)
		}
	}
	for i := range out {
		s := &out[i]
		if s.Namespace == "" {
			s.Namespace = namespace
		}
		if s.Interface == "" {
			s.Interface = "net" + strconv.Itoa(i+1)
		}
		if s.Name == "" {
			return nil, fmt.Errorf("annotation %s: network %d names no NetworkAttachmentDefinition", network.MultusNetworksAnnotation, i)
		}
		if !validIfName(s.Interface) || s.Interface == podIfName || s.Interface == "lo" {
			return nil, fmt.Errorf("annotation %s: network %s/%s: interface %q is not a free interface name", network.MultusNetworksAnnotation, s.Namespace, s.Name, s.Interface)
		}
	}
	return out, nil
}

// validIfName reports whether name can name a Linux interface: 1 to 15
// characters, none of them a slash, a colon or a space.
func validIfName(name string) bool {
	return name != "" && len(name) <= 15 && !strings.ContainsAny(name, "/: \t\n") && name != "." && name != ".."
}

// resolveMultus reads the NetworkAttachmentDefinitions the selections
// name: their CNI configurations, for the pod's interfaces.
func resolveMultus(ctx context.Context, client kubernetes.Interface, sel []network.MultusSelection) ([]SecondaryNetwork, error) {
	out := make([]SecondaryNetwork, 0, len(sel))
	for _, s := range sel {
		key := s.Namespace + "/" + s.Name
		raw, err := client.CoreV1().RESTClient().Get().
			AbsPath("/apis/k8s.cni.cncf.io/v1/namespaces", s.Namespace, "network-attachment-definitions", s.Name).DoRaw(ctx)
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("network-attachment-definition %s not found", key)
		}
		if err != nil {
			return nil, fmt.Errorf("network-attachment-definition %s: %w", key, err)
		}
		var nad struct {
			Spec struct {
				Config string `json:"config"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(raw, &nad); err != nil {
			return nil, fmt.Errorf("network-attachment-definition %s: %w", key, err)
		}
		if !json.Valid([]byte(nad.Spec.Config)) {
			return nil, fmt.Errorf("network-attachment-definition %s: spec.config is not a JSON CNI configuration", key)
		}
		out = append(out, SecondaryNetwork{Interface: s.Interface, Network: key, Config: json.RawMessage(nad.Spec.Config)})
	}
	return out, nil
}
