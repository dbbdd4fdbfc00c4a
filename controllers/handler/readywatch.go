package handler

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// readyWatch wakes the handler when a launcher it waits for becomes ready,
// instead of its next look readyPoll later: an inotify watch on the
// launcher's folder (the node's side of the pod's emptyDir) for the ready
// file's arrival, which the launcher publishes by a rename, or, before the
// node made that folder, on the nearest of its parents below the pods
// folder. A watch never follows a link the pod put in place of a folder,
// and goes when what it awaited came, the folder went, or the handler
// closed. Without inotify (or past the node's limit of watches) the
// handler polls as before.
type readyWatch struct {
	wake func(types.NamespacedName)

	mu sync.Mutex
	// file is the inotify instance, nil when unavailable or closed; fd is
	// its descriptor (File.Fd would make it blocking, and Close would no
	// longer end a Read).
	file *os.File
	fd   int
	// waits are, by watch, what each watched folder is awaited for.
	waits  map[int32][]awaited
	closed bool
}

// awaited is a VMI waiting for name to appear in a watched folder: the ready
// file in its launcher's folder, or, while that folder is not there yet, the
// next folder of its path below the pods folder.
type awaited struct {
	key  types.NamespacedName
	name string
}

// readyMask is what a launcher's folder is watched for: a file created or
// renamed into it, and the watch's end.
const readyMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW

func newReadyWatch(wake func(types.NamespacedName)) *readyWatch {
	return &readyWatch{wake: wake, waits: map[int32][]awaited{}}
}

// wait watches dir, the launcher folder of the VMI key, until its ready
// file comes; while dir is not there yet, its nearest folder that is, up to
// top (the pods folder), until the next folder of the path comes (the wake
// makes the handler look, and wait again deeper). It reports whether a
// watch is in place (the caller polls otherwise, and should look once more:
// the file may have come just before). The inotify instance lives while
// some folder is watched.
func (w *readyWatch) wait(key types.NamespacedName, dir, top string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	if w.file == nil {
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
		if err != nil {
			return false
		}
		// Non-blocking, so the runtime's poller serves Read and Close ends it.
		w.file, w.fd = os.NewFile(uintptr(fd), "inotify"), fd
		go w.read(w.file)
	}
	dir, top = filepath.Clean(dir), filepath.Clean(top)
	name := contract.ReadyFile
	for {
		wd, err := unix.InotifyAddWatch(w.fd, dir, readyMask)
		if err == nil {
			// The handler waits again at each look: one entry each.
			a := awaited{key: key, name: name}
			if !slices.Contains(w.waits[int32(wd)], a) {
				w.waits[int32(wd)] = append(w.waits[int32(wd)], a)
			}
			return true
		}
		if !errors.Is(err, unix.ENOENT) || dir == top || !strings.HasPrefix(dir, top+string(filepath.Separator)) {
			w.idleLocked()
			return false
		}
		dir, name = filepath.Dir(dir), filepath.Base(dir)
	}
}

// idleLocked closes the instance when no folder is watched; w.mu is held.
func (w *readyWatch) idleLocked() {
	if len(w.waits) == 0 && w.file != nil {
		_ = w.file.Close()
		w.file = nil
	}
}

// read turns the instance's events into wakes until it is closed.
func (w *readyWatch) read(f *os.File) {
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := f.Read(buf)
		if err != nil {
			return // closed (or broken: the handler polls)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : min(n, off+unix.SizeofInotifyEvent+int(ev.Len))]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			w.event(f, ev.Wd, ev.Mask, string(bytes.TrimRight(name, "\x00")))
		}
	}
}

// event handles one inotify event of instance f: what it brings wakes the
// VMIs awaiting it, and a watch awaited for nothing more ends; a watch the
// kernel ended (its folder went) is forgotten.
func (w *readyWatch) event(f *os.File, wd int32, mask uint32, name string) {
	w.mu.Lock()
	if f != w.file { // read from an instance closed since
		w.mu.Unlock()
		return
	}
	var wake []types.NamespacedName
	if mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
		rest := w.waits[wd][:0]
		for _, a := range w.waits[wd] {
			if a.name == name {
				wake = append(wake, a.key)
			} else {
				rest = append(rest, a)
			}
		}
		w.waits[wd] = rest
		if len(rest) == 0 {
			delete(w.waits, wd)
			_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
		}
	}
	if mask&unix.IN_IGNORED != 0 {
		delete(w.waits, wd)
	}
	w.idleLocked()
	w.mu.Unlock()
	for _, k := range wake {
		w.wake(k)
	}
}

// close ends every watch.
func (w *readyWatch) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed, w.waits = true, map[int32][]awaited{}
	if w.file == nil {
		return nil
	}
	err := w.file.Close()
	w.file = nil
	return err
}
