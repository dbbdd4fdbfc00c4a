package uploadapi_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	uploadv1beta1 "kubevirt.io/containerized-data-importer-api/pkg/apis/upload/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virt/storage/dvspec"
	"github.com/virtkit/virtkit/virt/storage/importer/contract"
	"github.com/virtkit/virtkit/virt/storage/upload"
	"github.com/virtkit/virtkit/virtapi/frontproxy"
	"github.com/virtkit/virtkit/virtapi/subresources"
	"github.com/virtkit/virtkit/virtapi/uploadapi"
)

type user string

func (u user) Authenticate(*http.Request) (frontproxy.User, error) {
	if u == "" {
		return frontproxy.User{}, errors.New("no front-proxy certificate")
	}
	return frontproxy.User{Name: string(u)}, nil
}

// rbac allows alice to create upload tokens in ns, and asks nothing else.
type rbac struct{ asked *subresources.Attributes }

func (r rbac) Authorize(_ context.Context, u frontproxy.User, a subresources.Attributes) (bool, string, error) {
	*r.asked = a
	return u.Name == "alice" && a.Namespace == "ns", "", nil
}

func TestTokenServer(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, tc := range []struct {
		name, user, path, method, body string
		wantCode                       int
		wantIn                         string
	}{
		{name: "discovery", path: uploadapi.Prefix, method: "GET", wantCode: 200, wantIn: `"uploadtokenrequests"`},
		{name: "group", path: "/apis/" + uploadapi.Group, method: "GET", wantCode: 200, wantIn: `"preferredVersion"`},
		{name: "anonymous", path: uploadapi.Prefix + "/namespaces/ns/uploadtokenrequests", method: "POST", body: `{"spec":{"pvcName":"d"}}`, wantCode: 401},
		{name: "not allowed", user: "bob", path: uploadapi.Prefix + "/namespaces/ns/uploadtokenrequests", method: "POST", body: `{"spec":{"pvcName":"d"}}`,
			wantCode: 403, wantIn: `cannot create resource \"uploadtokenrequests\"`},
		{name: "no claim", user: "alice", path: uploadapi.Prefix + "/namespaces/ns/uploadtokenrequests", method: "POST", body: `{"spec":{}}`,
			wantCode: 422, wantIn: "spec.pvcName"},
		{name: "bad claim name", user: "alice", path: uploadapi.Prefix + "/namespaces/ns/uploadtokenrequests", method: "POST", body: `{"spec":{"pvcName":"../x"}}`,
			wantCode: 422, wantIn: "spec.pvcName"},
		{name: "not json", user: "alice", path: uploadapi.Prefix + "/namespaces/ns/uploadtokenrequests", method: "POST", body: `{`, wantCode: 400},
		{name: "other resource", user: "alice", path: uploadapi.Prefix + "/namespaces/ns/pods", method: "POST", wantCode: 404},
		{name: "GET", user: "alice", path: uploadapi.Prefix + "/namespaces/ns/uploadtokenrequests", method: "GET", wantCode: 405},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked subresources.Attributes
			s := uploadapi.NewTokenServer(func() (crypto.Signer, error) { return key, nil }, user(tc.user), rbac{&asked})
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
			if rec.Code != tc.wantCode || !strings.Contains(rec.Body.String(), tc.wantIn) {
				t.Fatalf("%s %s: %d %s, want %d containing %q", tc.method, tc.path, rec.Code, rec.Body, tc.wantCode, tc.wantIn)
			}
			if tc.user == "bob" && (asked.Group != uploadapi.Group || asked.Resource != "uploadtokenrequests" || asked.Verb != "create") {
				t.Errorf("authorized %+v, want create on uploadtokenrequests in %s", asked, uploadapi.Group)
			}
		})
	}
}

// TestTokenServerIssues: the answer is the request with a token for the
// claim and namespace it names, which the key's public half verifies.
func TestTokenServerIssues(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	var asked subresources.Attributes
	s := uploadapi.NewTokenServer(func() (crypto.Signer, error) { return key, nil }, user("alice"), rbac{&asked})
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("POST", uploadapi.Prefix+"/namespaces/ns/uploadtokenrequests",
		strings.NewReader(`{"apiVersion":"upload.cdi.kubevirt.io/v1beta1","kind":"UploadTokenRequest","metadata":{"generateName":"token-"},"spec":{"pvcName":"disk"}}`)))
	if rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	var got uploadv1beta1.UploadTokenRequest
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	c, err := upload.Verify(key.Public(), got.Status.Token, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if c.Namespace != "ns" || c.Claim != "disk" || got.Spec.PvcName != "disk" || got.Kind != "UploadTokenRequest" {
		t.Errorf("token for %+v, answer %+v: want claim ns/disk", c, got)
	}
}

func TestClaimBackends(t *testing.T) {
	certPEM, _, err := upload.NewServerCert("cdi-upload-disk", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	claim := func(ann map[string]string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "disk", UID: "pvc-uid", Annotations: ann}}
	}
	pod := func(owner string, ready bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cdi-upload-disk",
			Annotations: map[string]string{contract.AnnUploadServerCert: string(certPEM)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "cdi.kubevirt.io/v1beta1", Kind: "DataVolume", Name: owner, UID: "u",
				Controller: ptr.To(true)}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.88.0.7"}}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		return p
	}
	uploading := map[string]string{dvspec.AnnUploadRequest: ""}
	for _, tc := range []struct {
		name    string
		objs    []client.Object
		want    error
		wantURL string
	}{
		{name: "no claim", want: upload.ErrNoUpload},
		{name: "claim takes no upload", objs: []client.Object{claim(nil), pod("disk", true)}, want: upload.ErrNoUpload},
		{name: "already filled", objs: []client.Object{claim(map[string]string{dvspec.AnnUploadRequest: "", dvspec.AnnPodPhase: "Succeeded"})}, want: upload.ErrNoUpload},
		{name: "no pod yet", objs: []client.Object{claim(uploading)}, want: upload.ErrNotReady},
		{name: "pod not ready", objs: []client.Object{claim(uploading), pod("disk", false)}, want: upload.ErrNotReady},
		{name: "someone else's pod", objs: []client.Object{claim(uploading), pod("other", true)}, want: upload.ErrNoUpload},
		{name: "ready", objs: []client.Object{claim(uploading), pod("disk", true)}, wantURL: "https://10.88.0.7:8444"},
		{name: "a bare claim's", objs: []client.Object{claim(uploading), func() *corev1.Pod {
			p := pod("disk", true)
			p.OwnerReferences[0].APIVersion, p.OwnerReferences[0].Kind, p.OwnerReferences[0].UID = "v1", "PersistentVolumeClaim", "pvc-uid"
			return p
		}()}, wantURL: "https://10.88.0.7:8444"},
		{name: "another claim's of that name", objs: []client.Object{claim(uploading), func() *corev1.Pod {
			p := pod("disk", true)
			p.OwnerReferences[0].APIVersion, p.OwnerReferences[0].Kind, p.OwnerReferences[0].UID = "v1", "PersistentVolumeClaim", "old-uid"
			return p
		}()}, want: upload.ErrNoUpload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := uploadapi.ClaimBackends{Reader: fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(tc.objs...).Build(),
				TLS: func() (*tls.Config, error) { return &tls.Config{}, nil }}
			be, err := b.Backend(context.Background(), "ns", "disk")
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("Backend: %v, want %v", err, tc.want)
			}
			if tc.wantURL != "" && (be.URL.String() != tc.wantURL || be.TLS == nil || be.TLS.VerifyPeerCertificate == nil) {
				t.Errorf("backend %v, want %s with the pod's certificate pinned", be.URL, tc.wantURL)
			}
		})
	}
}

// TestRBAC: CDI's role names, aggregated as CDI aggregates them.
func TestRBAC(t *testing.T) {
	roles, binding := uploadapi.RBAC()
	if binding.RoleRef.Name != uploadapi.ConfigReaderClusterRoleName || binding.Subjects[0].Name != "system:authenticated" {
		t.Errorf("binding %+v, want the config reader for every authenticated user", binding)
	}
	got := map[string]map[string]string{}
	for _, r := range roles {
		got[r.Name] = r.Labels
	}
	if got[uploadapi.EditClusterRoleName]["rbac.authorization.k8s.io/aggregate-to-edit"] != "true" ||
		got[uploadapi.ViewClusterRoleName]["rbac.authorization.k8s.io/aggregate-to-view"] != "true" ||
		got[uploadapi.ViewClusterRoleName]["rbac.authorization.k8s.io/aggregate-to-edit"] != "" {
		t.Errorf("role labels %v", got)
	}
}
