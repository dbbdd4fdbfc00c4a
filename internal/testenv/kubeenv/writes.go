package kubeenv

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WriteCounter wraps a client and records every write made through it, as
// "verb Kind", so tests can assert how many API writes a controller makes
// (later issues hold controllers to a budget of writes per VMI). A write the
// apiserver refused counts too, since it cost a request, marked with the
// reason: "status VirtualMachine (Conflict)".
type WriteCounter struct {
	client.Client
	// Describe, when set, adds a detail to a write's entry, such as the
	// phase a status write sets.
	Describe func(verb string, obj client.Object) string

	mu  sync.Mutex
	log []string // "namespace|entry"
}

var _ client.Client = (*WriteCounter)(nil)

func (c *WriteCounter) record(verb string, obj client.Object, err error) {
	w := verb + " " + reflect.TypeOf(obj).Elem().Name()
	if err != nil {
		w += " (" + string(apierrors.ReasonForError(err)) + ")"
	}
	if c.Describe != nil {
		if d := c.Describe(verb, obj); d != "" {
			w += " " + d
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, obj.GetNamespace()+"|"+w)
}

// WritesAtLeast waits up to timeout until n writes to objects in namespace
// ns have returned, and returns the writes then. An object changes on the
// apiserver before its write returns to the client: a test that saw the
// change uses it so as not to miss the write still on its way back.
func (c *WriteCounter) WritesAtLeast(ns string, n int, timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	for {
		w := c.Writes(ns)
		if len(w) >= n || time.Now().After(deadline) {
			return w
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Writes returns the writes made so far to objects in namespace ns, in order.
func (c *WriteCounter) Writes(ns string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, w := range c.log {
		if rest, ok := strings.CutPrefix(w, ns+"|"); ok {
			out = append(out, rest)
		}
	}
	return out
}

func (c *WriteCounter) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	err := c.Client.Create(ctx, obj, opts...)
	c.record("create", obj, err)
	return err
}

func (c *WriteCounter) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	err := c.Client.Update(ctx, obj, opts...)
	c.record("update", obj, err)
	return err
}

func (c *WriteCounter) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
	err := c.Client.Patch(ctx, obj, p, opts...)
	c.record("patch", obj, err)
	return err
}

func (c *WriteCounter) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	err := c.Client.Delete(ctx, obj, opts...)
	c.record("delete", obj, err)
	return err
}

func (c *WriteCounter) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	err := c.Client.DeleteAllOf(ctx, obj, opts...)
	c.record("deleteallof", obj, err)
	return err
}

// Status records status writes as "status" and "status-patch".
func (c *WriteCounter) Status() client.SubResourceWriter {
	return &statusCounter{SubResourceWriter: c.Client.Status(), c: c}
}

type statusCounter struct {
	client.SubResourceWriter
	c *WriteCounter
}

func (s *statusCounter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	err := s.SubResourceWriter.Update(ctx, obj, opts...)
	s.c.record("status", obj, err)
	return err
}

func (s *statusCounter) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
	err := s.SubResourceWriter.Patch(ctx, obj, p, opts...)
	s.c.record("status-patch", obj, err)
	return err
}
