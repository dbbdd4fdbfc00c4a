package handler_test

import (
	"testing"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/virtkit/virtkit/internal/testenv"
)

func TestMain(m *testing.M) {
	// The managers of these tests log through their own logger; this only
	// quiets controller-runtime's notice about its unset global one.
	logf.SetLogger(logr.Discard())
	testenv.Main(m)
}
