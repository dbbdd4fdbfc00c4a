package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit/virtapi/subresources"
)

// Kinds of the objects commands act on, as errors name them.
const (
	kindVM  = "VirtualMachine"
	kindVMI = "VirtualMachineInstance"
)

// op is what a command was doing, for messages: verb on kind name.
type op struct {
	verb string // the command: start, pause, addvolume, ...
	kind string // kindVM or kindVMI
	name string
}

// short is how KubeVirt's virtctl names the kind in its success lines.
func (o op) short() string {
	if o.kind == kindVMI {
		return "VMI"
	}
	return "VM"
}

// explained is an error of a command, with advice on what to do about it.
type explained struct {
	msg  string
	hint string
	err  error
}

func (e *explained) Error() string {
	if e.hint == "" {
		return e.msg
	}
	return e.msg + "\n" + e.hint
}

func (e *explained) Unwrap() error { return e.err }

// explain wraps an error of an API call made for o with what the user can
// do about it: whom to ask for which RBAC, how to list what exists, which
// kubeconfig pointed where.
func (s *session) explain(o op, err error) error {
	return &explained{
		msg:  fmt.Sprintf("cannot %s %s %s/%s: %v", o.verb, o.kind, s.ns, o.name, err),
		hint: s.hint(o, err),
		err:  err,
	}
}

// statusOf returns the Kubernetes Status an error carries, if any.
func statusOf(err error) *metav1.Status {
	var se *subresources.StatusError
	if errors.As(err, &se) {
		return &se.Status
	}
	var ae apierrors.APIStatus
	if errors.As(err, &ae) {
		st := ae.Status()
		return &st
	}
	return nil
}

func (s *session) hint(o op, err error) string {
	if st := statusOf(err); st != nil {
		switch st.Code {
		case http.StatusUnauthorized:
			return fmt.Sprintf("%s did not accept your credentials: refresh them, or point --kubeconfig or $KUBECONFIG at a current kubeconfig.", s.where())
		case http.StatusForbidden:
			return s.forbiddenHint(st)
		case http.StatusNotFound:
			return s.notFoundHint(o, st)
		case http.StatusServiceUnavailable:
			if !strings.Contains(st.Message, "virt-handler") {
				return "The subresources.kubevirt.io API does not answer: check that virt-api runs and that `kubectl get apiservice v1.subresources.kubevirt.io` says Available."
			}
		}
		return ""
	}
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	if errors.As(err, &unknownCA) || errors.As(err, &badHost) {
		return fmt.Sprintf("The certificate of %s does not match the kubeconfig's certificate-authority-data or server name: use the kubeconfig the cluster wrote.", s.where())
	}
	var opErr *net.OpError
	var dnsErr *net.DNSError
	if errors.As(err, &opErr) || errors.As(err, &dnsErr) {
		return fmt.Sprintf("Cannot reach %s: is the cluster running? With virt-local, `make run` starts it and prints the KUBECONFIG to use.", s.where())
	}
	return ""
}

// forbiddenRE reads the apiserver's (and virt-api's) 403 message.
var forbiddenRE = regexp.MustCompile(`User "([^"]*)" cannot (\S+) resource "([^"]+)" in API group "([^"]*)"`)

func (s *session) forbiddenHint(st *metav1.Status) string {
	m := forbiddenRE.FindStringSubmatch(st.Message)
	if m == nil {
		return fmt.Sprintf("Ask a cluster admin for the RBAC this needs; `kubectl auth can-i --list -n %s` shows what you may do.", s.ns)
	}
	user, verb, resource, group := m[1], m[2], m[3], m[4]
	res, sub, _ := strings.Cut(resource, "/")
	qualified := res
	if group != "" {
		qualified += "." + group
	}
	check := fmt.Sprintf("kubectl auth can-i %s %s -n %s", verb, qualified, s.ns)
	if sub != "" {
		check = fmt.Sprintf("kubectl auth can-i %s %s --subresource=%s -n %s", verb, qualified, sub, s.ns)
	}
	if group == subresources.Group && resource == "virtualmachines/migrate" {
		return fmt.Sprintf("You need verb %q on %q in API group %q (check: `%s`). Migration is not part of the edit role; a cluster admin can grant it in namespace %s with:\n"+
			"  kubectl create rolebinding %s-migrate --clusterrole=%s --user=%s -n %s",
			verb, resource, group, check, s.ns, user, subresources.MigrateClusterRoleName, user, s.ns)
	}
	if group == subresources.Group {
		return fmt.Sprintf("You need verb %q on %q in API group %q (check: `%s`). A cluster admin can grant every virtctl verb in namespace %s with:\n"+
			"  kubectl create rolebinding %s-virtctl --clusterrole=%s --user=%s -n %s",
			verb, resource, group, check, s.ns, user, subresources.EditClusterRoleName, user, s.ns)
	}
	return fmt.Sprintf("You need verb %q on %q in API group %q (check: `%s`); ask a cluster admin for a Role granting it.", verb, resource, group, check)
}

func (s *session) notFoundHint(o op, st *metav1.Status) string {
	kind := ""
	if st.Details != nil {
		kind = strings.ToLower(st.Details.Kind)
	}
	switch kind {
	case "":
		return "The API server does not serve subresources.kubevirt.io/v1: is virt-api installed (`virt-api --install` registers it)? `kubectl get apiservice v1.subresources.kubevirt.io` shows it."
	case "virtualmachine", "virtualmachines":
		return fmt.Sprintf("There is no VirtualMachine %q in namespace %s: `kubectl get vms -n %s` lists them; -n NAMESPACE picks another namespace.", o.name, s.ns, s.ns)
	case "virtualmachineinstance", "virtualmachineinstances":
		return fmt.Sprintf("VirtualMachineInstance %q does not run in namespace %s: `kubectl get vms,vmis -n %s` shows what exists; `virtctl start %s -n %s` starts a VM.", o.name, s.ns, s.ns, o.name, s.ns)
	}
	return ""
}
