package subresources

import (
	"encoding/json"
	"net/http"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VersionInfo is what GET .../v1/version answers: the fields of KubeVirt's
// kubevirt.io/client-go/version.Info, which `virtctl version` prints.
type VersionInfo struct {
	GitVersion   string `json:"gitVersion"`
	GitCommit    string `json:"gitCommit"`
	GitTreeState string `json:"gitTreeState"`
	BuildDate    string `json:"buildDate"`
	GoVersion    string `json:"goVersion"`
	Compiler     string `json:"compiler"`
	Platform     string `json:"platform"`
}

// BuildVersion reads the running binary's version from its build
// information: what virt-api answers on .../v1/version and what virtctl
// version prints as the client's.
func BuildVersion() VersionInfo {
	v := VersionInfo{GitVersion: "v0.0.0-unknown", GitTreeState: "unknown", GoVersion: runtime.Version(),
		Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.GitVersion = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.GitCommit = s.Value
		case "vcs.time":
			v.BuildDate = s.Value
		case "vcs.modified":
			v.GitTreeState = map[string]string{"true": "dirty", "false": "clean"}[s.Value]
		}
	}
	return v
}

// serveDiscovery answers the endpoints anyone may read (the aggregator reads
// them to mark the APIService available and to build discovery) and reports
// whether it did.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	gv := metav1.GroupVersionForDiscovery{GroupVersion: Group + "/" + Version, Version: Version}
	group := metav1.APIGroup{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
		Name:     Group, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv,
	}
	switch path {
	case "/healthz", Prefix + "/healthz":
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok"))
	case "/apis":
		writeJSON(w, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{group}})
	case "/apis/" + Group:
		writeJSON(w, group)
	case Prefix:
		writeJSON(w, s.resourceList())
	case Prefix + "/version":
		writeJSON(w, s.version)
	default:
		return false
	}
	return true
}

// resourceList is the discovery document of the group version: one entry
// per subresource, with its verb.
func (s *Server) resourceList() metav1.APIResourceList {
	list := metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: Group + "/" + Version,
	}
	for name, rt := range s.routes {
		kind := "VirtualMachine"
		if strings.HasPrefix(name, "virtualmachineinstances/") {
			kind = "VirtualMachineInstance"
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: name, Namespaced: true, Kind: kind, Verbs: metav1.Verbs{rbacVerb(rt.method)},
		})
	}
	sort.Slice(list.APIResources, func(i, j int) bool { return list.APIResources[i].Name < list.APIResources[j].Name })
	return list
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
