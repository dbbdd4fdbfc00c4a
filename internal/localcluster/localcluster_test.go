package localcluster_test

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/virtkit/virtkit/internal/localcluster"
)

func TestStartRefusesIncompleteOptions(t *testing.T) {
	tests := []struct {
		name string
		o    localcluster.Options
		want string
	}{
		{name: "no checkout", o: localcluster.Options{Nodes: []string{"n"}}, want: "localcluster: Options.Repo: required"},
		{name: "no node", o: localcluster.Options{Repo: "/nonexistent"}, want: "localcluster: Options.Nodes: at least one node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := localcluster.Start(context.Background(), tt.o)
			assert.Error(t, err, tt.want)
			assert.Assert(t, c == nil)
		})
	}
}
