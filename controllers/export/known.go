package export

import (
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// knownServers remembers, per export (by UID: an export made again under
// the same name starts afresh), the certificate its current server pod was
// made with and the VM manifests last written, so that a reconcile of a
// steady export reads only the cache. It is forgotten with the export;
// after a restart the first reconcile reads the API again.
type knownServers struct {
	mu sync.Mutex
	m  map[types.UID]knownServer
}

type knownServer struct {
	name      types.NamespacedName
	pod       types.UID
	cert      served
	manifests map[string]string
}

func newKnownServers() *knownServers {
	return &knownServers{m: map[types.UID]knownServer{}}
}

// cert returns the certificate pod was made with, if it is known.
func (k *knownServers) cert(export types.UID, pod types.UID) (served, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s, ok := k.m[export]
	if !ok || s.pod != pod {
		return served{}, false
	}
	return s.cert, true
}

// servedBy records that export's server is pod, made with cert.
func (k *knownServers) servedBy(export types.UID, name types.NamespacedName, pod types.UID, cert served) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := k.m[export]
	s.name = name
	s.pod, s.cert = pod, cert
	k.m[export] = s
}

// sameManifests reports whether data is what was last written as
// export's manifests.
func (k *knownServers) sameManifests(export types.UID, data map[string]string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	s, ok := k.m[export]
	return ok && s.manifests != nil && maps.Equal(s.manifests, data)
}

// wroteManifests records that data is export's manifests.
func (k *knownServers) wroteManifests(export types.UID, name types.NamespacedName, data map[string]string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := k.m[export]
	s.name = name
	s.manifests = maps.Clone(data)
	k.m[export] = s
}

// forget drops what is known of the exports named name.
func (k *knownServers) forget(name types.NamespacedName) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for uid, s := range k.m {
		if s.name == name {
			delete(k.m, uid)
		}
	}
}
