package handler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/virt/accesscred"
	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/guestagent"
	"github.com/virtkit/virtkit/virt/storage"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

// How often the handler asks a guest's agent what it knows: often while
// none has answered yet, so AgentConnected shows soon after the guest
// starts its agent, less and less often (up to agentPollIdle) for a guest
// that runs none, and as KubeVirt's launcher polls it once one answers.
const (
	agentPollWaiting   = 3 * time.Second
	agentPollIdle      = 30 * time.Second
	agentPollConnected = 10 * time.Second
)

// nextAgentPoll is the wait before the next question to an agent after
// waiting prev: agentPollConnected while it answers; without an answer,
// twice prev from agentPollWaiting on, at most agentPollIdle.
func nextAgentPoll(prev time.Duration, connected bool) time.Duration {
	switch {
	case connected:
		return agentPollConnected
	case prev < agentPollWaiting || prev == agentPollConnected:
		return agentPollWaiting
	}
	return min(2*prev, agentPollIdle)
}

// AgentFacts are what a guest's agent last told the handler.
type AgentFacts struct {
	// Connected: the agent answered guest-info.
	Connected bool
	// Info is its version and commands, the guest's OS, host name and
	// time zone.
	Info virtv1.VirtualMachineInstanceGuestAgentInfo
	// Interfaces are the guest's NICs as the agent names them.
	Interfaces []guestagent.Interface
	// Credentials is how setting the VMI's access credentials through
	// the agent went; nil when it has none to set.
	Credentials *CredentialsResult
}

// CredentialsResult is how setting a guest's access credentials went:
// the AccessCredentialsSynchronized condition.
type CredentialsResult struct {
	Synced  bool
	Message string
}

// pollAgent asks g's agent what it knows (at the waits nextAgentPoll
// says), and has the VMI reconciled when the
// answer changes, so its status shows it. It returns when ctx ends.
func (r *Reconciler) pollAgent(ctx context.Context, g *guest) {
	wait := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		f := askAgent(ctx, g)
		old := g.agent.Load()
		f.Credentials = syncCredentials(ctx, g, g.dom, g.files, f.Connected, old)
		wait = nextAgentPoll(wait, f.Connected)
		if old != nil && equality.Semantic.DeepEqual(*old, f) {
			continue
		}
		g.agent.Store(&f)
		if g.target.Load() != nil {
			continue // a migration's target: its VMI is still the source's
		}
		r.log.V(1).Info("guest agent changed", "vmi", g.key.String(), "connected", f.Connected, "version", f.Info.GAVersion)
		select {
		case r.events <- event.TypedGenericEvent[types.NamespacedName]{Object: g.key}:
		case <-ctx.Done():
			return
		}
	}
}

// askAgent asks g's agent what the status reports of it.
func askAgent(ctx context.Context, g *guest) AgentFacts {
	callCtx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	f := AgentFacts{}
	if info, err := guestagent.Info(callCtx, g.dom, g.domain); err == nil {
		f.Connected, f.Info = true, info
		// A guest without the command still counts as connected.
		f.Interfaces, _ = guestagent.Interfaces(callCtx, g.dom, g.domain)
	}
	return f
}

// syncCredentials sets g's access credentials that the agent propagates
// in the guest, as KubeVirt's launcher does: when what the pod's Secrets
// hold changed since they were last set, and again whenever the agent
// (re)connects, since a guest that rebooted may have lost them. It says
// how that went (prev's result when nothing was to set), nil when the
// VMI has none. agent is g's agent, files the pod's file system.
func syncCredentials(ctx context.Context, g *guest, agent guestagent.Commander, files storage.FS, connected bool, prev *AgentFacts) *CredentialsResult {
	if !slices.ContainsFunc(g.creds, accesscred.ThroughAgent) {
		return nil
	}
	if !connected {
		g.credsSet = ""
		return &CredentialsResult{Message: "Guest agent is offline"}
	}
	callCtx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	w, err := accesscred.Read(callCtx, g.creds, func(ctx context.Context, dir string) (map[string][]byte, error) {
		return storage.ReadFolder(ctx, storage.FSInspector{FS: files}, files, dir)
	})
	if err != nil {
		g.credsSet = ""
		return &CredentialsResult{Message: err.Error()}
	}
	digest := w.Digest()
	if digest == g.credsSet && prev != nil && prev.Connected && prev.Credentials != nil && prev.Credentials.Synced {
		return prev.Credentials
	}
	if err := accesscred.Apply(callCtx, agent, g.domain, w); err != nil {
		g.credsSet = ""
		return &CredentialsResult{Message: err.Error()}
	}
	g.credsSet = digest
	return &CredentialsResult{Synced: true}
}

// agentFacts are g's agent facts for a status write. The write that makes
// the VMI Running asks the agent first when it has not answered yet, so an
// agent already up is reported in that write rather than in one more; an
// agent that is not up answers at once that it is not (libvirt knows its
// channel is closed).
func agentFacts(ctx context.Context, vmi *virtv1.VirtualMachineInstance, g *guest) *AgentFacts {
	if f := g.agent.Load(); vmi.Status.Phase != virtv1.Running && (f == nil || !f.Connected) {
		now := askAgent(ctx, g)
		g.agent.Store(&now)
	}
	return g.agent.Load()
}

// agentStatus reports the agent in st, as KubeVirt's handler does: the
// AgentConnected condition, the guest's OS, and the agent's view of the
// NICs (mergeGuestInterfaces). Without an agent all of it goes; before the
// handler asked (f nil) it stays as reported.
func agentStatus(st *virtv1.VirtualMachineInstanceStatus, vmi *virtv1.VirtualMachineInstance, f *AgentFacts, frozen bool, t metav1.Time) {
	st.FSFreezeStatus = ""
	if frozen {
		st.FSFreezeStatus = guestagent.Frozen
	}
	if f == nil {
		// Not asked yet (a restarted handler): what was reported stays.
		st.Interfaces = carryGuestInterfaces(st.Interfaces, vmi.Status.Interfaces)
		return
	}
	if c := f.Credentials; c != nil {
		// As KubeVirt's handler: the condition's status and message, no reason.
		synced := virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceAccessCredentialsSynchronized,
			Status: k8sv1.ConditionFalse, Message: c.Message}
		if c.Synced {
			synced.Status = k8sv1.ConditionTrue
		}
		conditions.VMI().Set(&st.Conditions, synced, t)
	}
	if !f.Connected {
		conditions.VMI().Remove(&st.Conditions, virtv1.VirtualMachineInstanceAgentConnected)
		st.GuestOSInfo = virtv1.VirtualMachineInstanceGuestOSInfo{}
		return
	}
	conditions.VMI().Set(&st.Conditions, virtv1.VirtualMachineInstanceCondition{
		Type: virtv1.VirtualMachineInstanceAgentConnected, Status: k8sv1.ConditionTrue}, t)
	st.GuestOSInfo = f.Info.OS
	st.Interfaces = mergeGuestInterfaces(st.Interfaces, f.Interfaces, vmi.Spec.Domain.Devices.Interfaces)
}

// agentError maps a failed agent call: no agent answering is the node
// API's ErrUnavailable.
func agentError(g *guest, what string, err error) error {
	if errors.Is(err, domain.ErrAgentUnavailable) {
		return fmt.Errorf("handler: %s of VMI %s: no guest agent answers: %w: %w", what, g.key, nodeapi.ErrUnavailable, err)
	}
	return opError(g, what, err)
}

// GuestOSInfo asks the guest's agent what KubeVirt's guestosinfo shows
// (nodeapi.Ops): version, OS, host name, time zone, users, file systems,
// and whether the handler froze it.
func (r *Reconciler) GuestOSInfo(ctx context.Context, namespace, name string) (virtv1.VirtualMachineInstanceGuestAgentInfo, error) {
	g, err := r.running(namespace, name)
	if err != nil {
		return virtv1.VirtualMachineInstanceGuestAgentInfo{}, err
	}
	info, err := guestagent.Info(ctx, g.dom, g.domain)
	if err != nil {
		return info, agentError(g, "guestosinfo", err)
	}
	info.UserList, _ = guestagent.Users(ctx, g.dom, g.domain)
	info.FSInfo.Filesystems, _ = guestagent.Filesystems(ctx, g.dom, g.domain)
	if g.frozen.Load() {
		info.FSFreezeStatus = guestagent.Frozen
	}
	return info, nil
}

// UserList is the guest's logged-in users, from its agent (nodeapi.Ops).
func (r *Reconciler) UserList(ctx context.Context, namespace, name string) (virtv1.VirtualMachineInstanceGuestOSUserList, error) {
	g, err := r.running(namespace, name)
	if err != nil {
		return virtv1.VirtualMachineInstanceGuestOSUserList{}, err
	}
	users, err := guestagent.Users(ctx, g.dom, g.domain)
	if err != nil {
		return virtv1.VirtualMachineInstanceGuestOSUserList{}, agentError(g, "userlist", err)
	}
	return virtv1.VirtualMachineInstanceGuestOSUserList{Items: users}, nil
}

// FilesystemList is the guest's mounted file systems, from its agent
// (nodeapi.Ops).
func (r *Reconciler) FilesystemList(ctx context.Context, namespace, name string) (virtv1.VirtualMachineInstanceFileSystemList, error) {
	g, err := r.running(namespace, name)
	if err != nil {
		return virtv1.VirtualMachineInstanceFileSystemList{}, err
	}
	fss, err := guestagent.Filesystems(ctx, g.dom, g.domain)
	if err != nil {
		return virtv1.VirtualMachineInstanceFileSystemList{}, agentError(g, "filesystemlist", err)
	}
	return virtv1.VirtualMachineInstanceFileSystemList{Items: fss}, nil
}

// Freeze freezes the guest's file systems through its agent (nodeapi.Ops)
// and thaws them by itself once unfreezeTimeout passes (zero: never), so a
// snapshot that never comes back cannot leave the guest frozen. Freezing a
// frozen guest only restarts the limit. The VMI's status says
// fsFreezeStatus: frozen meanwhile.
func (r *Reconciler) Freeze(ctx context.Context, namespace, name string, unfreezeTimeout time.Duration) error {
	g, err := r.running(namespace, name)
	if err != nil {
		return err
	}
	g.freezeMu.Lock()
	defer g.freezeMu.Unlock()
	st, err := guestagent.FreezeStatus(ctx, g.dom, g.domain)
	if err != nil {
		return agentError(g, "freeze", err)
	}
	if st != guestagent.Frozen {
		if _, err := guestagent.Freeze(ctx, g.dom, g.domain); err != nil {
			return agentError(g, "freeze", err)
		}
	}
	if g.thaw != nil {
		g.thaw.Stop()
		g.thaw = nil
	}
	if unfreezeTimeout > 0 {
		g.thaw = time.AfterFunc(unfreezeTimeout, func() {
			tctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			if err := r.Unfreeze(tctx, namespace, name); err != nil {
				r.log.Error(err, "thawing the guest after its unfreeze timeout", "vmi", g.key.String())
			} else {
				r.log.Info("thawed the guest: its unfreeze timeout passed", "vmi", g.key.String(), "timeout", unfreezeTimeout)
			}
		})
	}
	if !g.frozen.Swap(true) {
		r.changed(g)
	}
	return nil
}

// Unfreeze thaws the guest's file systems (nodeapi.Ops).
func (r *Reconciler) Unfreeze(ctx context.Context, namespace, name string) error {
	g, err := r.running(namespace, name)
	if err != nil {
		return err
	}
	g.freezeMu.Lock()
	defer g.freezeMu.Unlock()
	if g.thaw != nil {
		g.thaw.Stop()
		g.thaw = nil
	}
	if _, err := guestagent.Thaw(ctx, g.dom, g.domain); err != nil {
		return agentError(g, "unfreeze", err)
	}
	if g.frozen.Swap(false) {
		r.changed(g)
	}
	return nil
}

// changed has g's VMI reconciled, without waiting for the queue.
func (r *Reconciler) changed(g *guest) {
	select {
	case r.events <- event.TypedGenericEvent[types.NamespacedName]{Object: g.key}:
	default:
		go func() { r.events <- event.TypedGenericEvent[types.NamespacedName]{Object: g.key} }()
	}
}
