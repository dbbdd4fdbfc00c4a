package node

import (
	"fmt"

	"github.com/go-logr/logr"
	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
)

// vkLogger passes virtual-kubelet's log lines to a logr.Logger: errors and
// warnings at level 0, information at level 1, debug at level 4.
type vkLogger struct{ l logr.Logger }

var _ vklog.Logger = vkLogger{}

func (v vkLogger) Debug(a ...any)                           { v.l.V(4).Info(fmt.Sprint(a...)) }
func (v vkLogger) Debugf(f string, a ...any)                { v.l.V(4).Info(fmt.Sprintf(f, a...)) }
func (v vkLogger) Info(a ...any)                            { v.l.V(1).Info(fmt.Sprint(a...)) }
func (v vkLogger) Infof(f string, a ...any)                 { v.l.V(1).Info(fmt.Sprintf(f, a...)) }
func (v vkLogger) Warn(a ...any)                            { v.l.Info(fmt.Sprint(a...)) }
func (v vkLogger) Warnf(f string, a ...any)                 { v.l.Info(fmt.Sprintf(f, a...)) }
func (v vkLogger) Error(a ...any)                           { v.l.Error(nil, fmt.Sprint(a...)) }
func (v vkLogger) Errorf(f string, a ...any)                { v.l.Error(nil, fmt.Sprintf(f, a...)) }
func (v vkLogger) Fatal(a ...any)                           { v.l.Error(nil, "fatal: "+fmt.Sprint(a...)) }
func (v vkLogger) Fatalf(f string, a ...any)                { v.l.Error(nil, "fatal: "+fmt.Sprintf(f, a...)) }
func (v vkLogger) WithField(k string, val any) vklog.Logger { return vkLogger{v.l.WithValues(k, val)} }
func (v vkLogger) WithError(err error) vklog.Logger {
	return vkLogger{v.l.WithValues("error", fmt.Sprint(err))}
}
func (v vkLogger) WithFields(fs vklog.Fields) vklog.Logger {
	kv := make([]any, 0, 2*len(fs))
	for k, val := range fs {
		kv = append(kv, k, val)
	}
	return vkLogger{v.l.WithValues(kv...)}
}
