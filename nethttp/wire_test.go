package nethttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/encoding/raw"
	yhttp "go.uber.org/yarpc/transport/http"
	"go.uber.org/yarpc/yarpcerrors"
)

// codeFromStatus reads every error status as yarpc's own HTTP outbound
// does, asked through a real dispatcher.
func TestCodeFromStatusIsYARPCs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, _ := strconv.Atoi(r.URL.Query().Get("status"))
		w.WriteHeader(status)
	}))
	defer srv.Close()
	for status := 400; status < 600; status++ {
		tr := yhttp.NewTransport()
		out := tr.NewSingleOutbound(srv.URL + "/?status=" + strconv.Itoa(status))
		d := yarpc.NewDispatcher(yarpc.Config{Name: "caller", Outbounds: yarpc.Outbounds{"callee": {Unary: out}}})
		require.NoError(t, d.Start())
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := raw.New(d.ClientConfig("callee")).Call(ctx, "p", nil)
		cancel()
		require.NoError(t, d.Stop())
		assert.Equal(t, yarpcerrors.FromError(err).Code(), codeFromStatus(status), "status %d: codeFromStatus, against yarpc's reading", status)
	}
}

func TestStatusError(t *testing.T) {
	tests := []struct {
		status int
		header http.Header
		want   yarpcerrors.Code
	}{
		{503, nil, yarpcerrors.CodeUnavailable},
		{500, nil, yarpcerrors.CodeUnknown},
		// A yarpc service's exact code wins over the status.
		{500, http.Header{"Rpc-Error-Code": {"internal"}}, yarpcerrors.CodeInternal},
		{500, http.Header{"Rpc-Error-Code": {"data-loss"}}, yarpcerrors.CodeDataLoss},
		// Garbage or ok is ignored.
		{503, http.Header{"Rpc-Error-Code": {"nonsense"}}, yarpcerrors.CodeUnavailable},
		{503, http.Header{"Rpc-Error-Code": {"ok"}}, yarpcerrors.CodeUnavailable},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, yarpcerrors.FromError(StatusError(tt.status, tt.header)).Code(), "StatusError(%d, %v)", tt.status, tt.header)
	}
}

func TestParseTTL(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"1500", 1500 * time.Millisecond, true},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"99999999999999999999", 0, false},
		{"9223372036854775807", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseTTL(tt.in)
		assert.Equal(t, tt.want, got, "parseTTL(%q)", tt.in)
		assert.Equal(t, tt.ok, ok, "parseTTL(%q): ok", tt.in)
	}
}

// TestStatusReadsBack: the status Status gives a code reads back as the
// same code wherever yarpc's table gives the status one code, and as a
// failure or an answer as the code was, everywhere.
func TestStatusReadsBack(t *testing.T) {
	shared := map[yarpcerrors.Code]bool{ // statuses several codes share
		yarpcerrors.CodeFailedPrecondition: true, yarpcerrors.CodeOutOfRange: true,
		yarpcerrors.CodeAlreadyExists: true, yarpcerrors.CodeInternal: true, yarpcerrors.CodeDataLoss: true,
	}
	for c := yarpcerrors.CodeCancelled; c <= yarpcerrors.CodeUnauthenticated; c++ {
		status := Status(c)
		require.GreaterOrEqual(t, status, 400, "Status(%v) = %d: not an error status", c, status)
		got := yarpcerrors.FromError(StatusError(status, nil)).Code()
		if !shared[c] {
			assert.Equal(t, c, got, "Status(%v) = %d reads back", c, status)
		}
	}
	assert.Equal(t, 503, Status(yarpcerrors.CodeUnavailable), "Status(unavailable)")
	assert.Equal(t, 500, Status(yarpcerrors.CodeInternal), "Status(internal)")
}

// TestStatusTableRoundTrip: the two directions are one table. Every code
// yarpc knows but ok has a status, every status a code answers with reads
// back as a code that answers with it, the first the table lists for it,
// and each status's other codes answer with it too.
func TestStatusTableRoundTrip(t *testing.T) {
	first := map[int]yarpcerrors.Code{}
	for _, row := range _statusOfCode {
		if _, ok := first[row.status]; !ok {
			first[row.status] = row.code
		}
	}
	for c := yarpcerrors.CodeCancelled; c <= yarpcerrors.CodeUnauthenticated; c++ {
		status, ok := _statusByCode[c]
		if !assert.True(t, ok, "%v: no status", c) {
			continue
		}
		back := codeFromStatus(status)
		assert.Equal(t, first[status], back, "%v: status %d reads back", c, status)
		assert.Equal(t, status, Status(back), "%v: status %d reads back as %v, which answers with", c, status, back)
	}
	for status, code := range _codeOfStatus {
		if status == http.StatusUnprocessableEntity {
			continue // read, never answered with
		}
		assert.Equal(t, status, Status(code), "status %d reads as %v, which answers with", status, code)
	}
	assert.Equal(t, http.StatusInternalServerError, Status(yarpcerrors.CodeOK), "Status(ok)")
}
