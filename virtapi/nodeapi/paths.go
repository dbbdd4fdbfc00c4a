package nodeapi

import (
	"errors"
	"net/http"
	"net/url"
)

// The node API's paths, below the handler's base URL:
//
//	PUT /v1/namespaces/NS/virtualmachineinstances/NAME/{pause,unpause,softreboot,reset}
//	GET /v1/namespaces/NS/virtualmachineinstances/NAME/{console,vnc}   (websocket, plain.kubevirt.io)
//	GET /v1/namespaces/NS/virtualmachineinstances/NAME/vnc/screenshot  (image/png)
//	GET /v1/namespaces/NS/virtualmachineinstances/NAME/{guestosinfo,userlist,filesystemlist}  (JSON, KubeVirt's types)
//	PUT /v1/namespaces/NS/virtualmachineinstances/NAME/freeze?unfreezeTimeout=SECONDS, .../unfreeze
//
// Errors come back as an HTTP status (404, 409, 503, 500) with an [ErrorBody].
const (
	pathPrefix = "/v1/namespaces/"
	vmiSegment = "virtualmachineinstances"
)

// Verbs of the node API, the last path segment.
const (
	VerbPause          = "pause"
	VerbUnpause        = "unpause"
	VerbSoftReboot     = "softreboot"
	VerbReset          = "reset"
	VerbConsole        = "console"
	VerbVNC            = "vnc"
	VerbScreenshot     = "vnc/screenshot"
	VerbGuestOSInfo    = "guestosinfo"
	VerbUserList       = "userlist"
	VerbFilesystemList = "filesystemlist"
	VerbFreeze         = "freeze"
	VerbUnfreeze       = "unfreeze"
)

// ErrorBody is the JSON body of an error response.
type ErrorBody struct {
	// Reason is NotFound, Conflict, Unavailable or InternalError.
	Reason string `json:"reason"`
	// Message is the handler's error text.
	Message string `json:"message"`
}

// vmiPath is the path of verb for one VMI.
func vmiPath(namespace, name, verb string) string {
	return pathPrefix + url.PathEscape(namespace) + "/" + vmiSegment + "/" + url.PathEscape(name) + "/" + verb
}

// statusFor maps an Ops error to its HTTP status and reason.
func statusFor(err error) (int, string) {
	switch {
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound, "NotFound"
	case errors.Is(err, ErrConflict):
		return http.StatusConflict, "Conflict"
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable, "Unavailable"
	}
	return http.StatusInternalServerError, "InternalError"
}

// sentinelFor maps an HTTP status back to the sentinel it stands for, or nil.
func sentinelFor(code int) error {
	switch code {
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusConflict:
		return ErrConflict
	case http.StatusServiceUnavailable:
		return ErrUnavailable
	}
	return nil
}
