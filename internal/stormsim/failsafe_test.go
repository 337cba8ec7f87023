package stormsim

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/api/transport/transporttest"
	"go.uber.org/yarpc/yarpcerrors"
)

// blockingHandler holds every request until release is closed.
type blockingHandler struct {
	entered chan struct{}
	release chan struct{}
}

func (h blockingHandler) Handle(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
	h.entered <- struct{}{}
	<-h.release
	return nil
}

// TestFailsafeInboundRefusesPastItsLimit: the failsafe-go arm's server
// side serves up to its adaptive limiter's limit at once and refuses the
// next request resource-exhausted, without running the handler; a
// permit comes back when a request ends.
func TestFailsafeInboundRefusesPastItsLimit(t *testing.T) {
	f := newFailsafeInbound()
	limit := f.limiter.Limit()
	require.Positive(t, limit)
	h := blockingHandler{entered: make(chan struct{}, limit+1), release: make(chan struct{})}
	req := &transport.Request{Service: "stormsim-d", Procedure: _procedure}
	var wg sync.WaitGroup
	for range limit {
		wg.Go(func() {
			assert.NoError(t, f.Handle(context.Background(), req, &transporttest.FakeResponseWriter{}, h))
		})
		<-h.entered
	}
	err := f.Handle(context.Background(), req, &transporttest.FakeResponseWriter{}, h)
	require.Error(t, err)
	assert.Equal(t, yarpcerrors.CodeResourceExhausted, yarpcerrors.FromError(err).Code())
	assert.Len(t, h.entered, 0, "the handler did not run")
	close(h.release)
	wg.Wait()
	assert.Equal(t, 0, f.limiter.Inflight())
	assert.NoError(t, f.Handle(context.Background(), req, &transporttest.FakeResponseWriter{}, h), "a permit again")
}
