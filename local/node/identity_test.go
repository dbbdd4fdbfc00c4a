package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestIdentityOf(t *testing.T) {
	passwd := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(passwd, []byte("root:x:0:0:root:/root:/bin/sh\ndaemon:x:1:1::/:/bin/false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := func(v int64) *int64 { return &v }
	yes, no := true, false
	for _, tc := range []struct {
		name    string
		pod     *corev1.PodSecurityContext
		c       *corev1.SecurityContext
		want    *Identity
		wantErr string
	}{
		{name: "nothing asked: as the node", want: nil},
		{name: "pod's user, group, supplemental groups and fsGroup",
			pod:  &corev1.PodSecurityContext{RunAsUser: id(107), RunAsGroup: id(107), SupplementalGroups: []int64{5, 6}, FSGroup: id(107)},
			want: &Identity{UID: 107, GID: 107, Groups: []uint32{5, 6, 107}}},
		{name: "the container's win",
			pod:  &corev1.PodSecurityContext{RunAsUser: id(1000), RunAsGroup: id(1000)},
			c:    &corev1.SecurityContext{RunAsUser: id(107), RunAsGroup: id(108), AllowPrivilegeEscalation: &no},
			want: &Identity{UID: 107, GID: 108, NoNewPrivs: true}},
		{name: "a user without a group: the account's", c: &corev1.SecurityContext{RunAsUser: id(1)},
			want: &Identity{UID: 1, GID: 1}},
		{name: "a user without a group or an account: group 0", c: &corev1.SecurityContext{RunAsUser: id(4242)},
			want: &Identity{UID: 4242}},
		{name: "privilege escalation allowed: no flag", c: &corev1.SecurityContext{RunAsUser: id(7), RunAsGroup: id(7), AllowPrivilegeEscalation: &yes},
			want: &Identity{UID: 7, GID: 7}},
		{name: "no_new_privs alone: root that cannot gain more", c: &corev1.SecurityContext{AllowPrivilegeEscalation: &no},
			want: &Identity{NoNewPrivs: true}},
		{name: "runAsNonRoot without a user", pod: &corev1.PodSecurityContext{RunAsNonRoot: &yes},
			wantErr: "has runAsNonRoot and image will run as root"},
		{name: "runAsNonRoot with user 0", pod: &corev1.PodSecurityContext{RunAsNonRoot: &yes}, c: &corev1.SecurityContext{RunAsUser: id(0)},
			wantErr: "securityContext.runAsUser: 0"},
		{name: "the container lifts the pod's runAsNonRoot", pod: &corev1.PodSecurityContext{RunAsNonRoot: &yes},
			c: &corev1.SecurityContext{RunAsNonRoot: &no}, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: tc.pod}}
			got, err := identityOf(pod, &corev1.Container{Name: "compute", SecurityContext: tc.c}, passwd)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), `"compute"`) {
					t.Fatalf("error %v, want one naming the container and %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("identity (-want +got):\n%s", diff)
			}
		})
	}
}

// A user and a group the node's files lack get lines of their own, in
// files bound over /etc/passwd and /etc/group; known ones get none.
func TestAccountMounts(t *testing.T) {
	dir := t.TempDir()
	passwd, group := filepath.Join(dir, "passwd"), filepath.Join(dir, "group")
	if err := os.WriteFile(passwd, []byte("root:x:0:0:root:/root:/bin/sh"), 0o644); err != nil { // no final newline
		t.Fatal(err)
	}
	if err := os.WriteFile(group, []byte("root:x:0:\nkvm:x:107:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	scratch := filepath.Join(dir, "scratch")
	if err := os.Mkdir(scratch, 0o700); err != nil {
		t.Fatal(err)
	}
	got, err := accountMounts(&Identity{UID: 107, GID: 107}, passwd, group, scratch)
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{{Source: filepath.Join(scratch, "passwd"), Target: "/etc/passwd", ReadOnly: true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("mounts (-want +got):\n%s", diff)
	}
	b, err := os.ReadFile(got[0].Source)
	if err != nil {
		t.Fatal(err)
	}
	if want := "root:x:0:0:root:/root:/bin/sh\ncontainer-107:x:107:107:container user:/:/usr/sbin/nologin\n"; string(b) != want {
		t.Errorf("passwd = %q, want %q", b, want)
	}
	if got, err := accountMounts(&Identity{}, passwd, group, scratch); err != nil || len(got) != 0 {
		t.Errorf("root: mounts %v, %v; want none", got, err)
	}
	if got, err := accountMounts(nil, passwd, group, scratch); err != nil || len(got) != 0 {
		t.Errorf("no identity: mounts %v, %v; want none", got, err)
	}
}
