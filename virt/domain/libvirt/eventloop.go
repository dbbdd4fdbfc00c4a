package libvirt

import (
	"sync"
	"time"

	"libvirt.org/go/libvirt"
)

// eventLoop is the package's only package-level state, and deliberately so:
// libvirt's event loop is process-wide. libvirt delivers domain events,
// connection-close notices, keepalives and stream data only to a process
// that registered an event loop implementation (once, before opening
// connections) and keeps running it. Registering twice, or running two
// loops, is an error in libvirt, so every Manager of the process shares one
// loop, started by the first New and running until the process exits.
var eventLoop struct {
	once sync.Once
	err  error
}

// startEventLoop registers libvirt's default event loop implementation and
// runs it on a goroutine, once per process.
func startEventLoop() error {
	eventLoop.once.Do(func() {
		if err := libvirt.EventRegisterDefaultImpl(); err != nil {
			eventLoop.err = err
			return
		}
		go func() {
			for {
				// Each run waits for and dispatches one round of events.
				// It fails only when misused (a second loop elsewhere in
				// the process); pause then rather than spin.
				if err := libvirt.EventRunDefaultImpl(); err != nil {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	})
	return eventLoop.err
}
