package testidl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/errown/errown/internal/testidl/proto/echopb"
	"github.com/errown/errown/internal/testidl/thrift/echo"
	"github.com/errown/errown/internal/testidl/thrift/echo/echoclient"
	"github.com/errown/errown/internal/testidl/thrift/echo/echoserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/encoding/protobuf"
	"go.uber.org/yarpc/transport/grpc"
	"go.uber.org/yarpc/transport/http"
	"go.uber.org/yarpc/transport/tchannel"
	"go.uber.org/yarpc/yarpcerrors"
)

// The probe: a client dispatcher calls a server dispatcher over HTTP, gRPC
// and TChannel, with the Thrift and the protobuf Echo service, whose
// handlers fail as the request's fail field says. A unary inbound
// middleware on the server and a unary outbound middleware on the client
// record what yarpc v1.81.0 hands them, and the test asserts it: it fails
// when yarpc changes how application errors reach middleware. FACTS.md
// writes the findings up.

const (
	_server = "probe-server"
	_client = "probe-client"

	// _caseHeader carries the case ID so that the middleware can file
	// what they see under it.
	_caseHeader = "probe-case"
	// _bareHeader asks the inbound probe for a ResponseWriter wrapper that
	// does not implement transport.ApplicationErrorMetaSetter.
	_bareHeader = "probe-bare"

	// _claimHeader is the response header the inbound probe adds before it
	// calls the handler, as errown does with its claim.
	_claimHeader = "errown-claim"
	// _lateHeader is the response header the inbound probe adds after the
	// handler returned.
	_lateHeader = "errown-late"
)

// Transports and encodings of the probe.
const (
	_http     = "http"
	_grpc     = "grpc"
	_tchannel = "tchannel"

	_thrift = "thrift"
	_proto  = "proto"
)

var _transports = []string{_http, _grpc, _tchannel}

// Error kinds: the fail field of the request, which the handlers switch on.
const (
	_ok = "ok" // no error

	// Thrift exceptions declared by echo.thrift.
	_notFoundEx    = "NotFoundError"    // rpc.code NOT_FOUND
	_unavailableEx = "UnavailableError" // rpc.code UNAVAILABLE
	_plainEx       = "PlainError"       // no rpc.code

	// Either encoding.
	_goError          = "errors.New"
	_yarpcUnavailable = "yarpcerrors.UnavailableErrorf"

	// protobuf.NewError.
	_pbUnavailableDetails = "protobuf.NewError(Unavailable,details)"
	_pbNotFound           = "protobuf.NewError(NotFound)"
)

var (
	_thriftKinds = []string{_ok, _notFoundEx, _unavailableEx, _plainEx, _goError, _yarpcUnavailable}
	_protoKinds  = []string{_ok, _pbUnavailableDetails, _pbNotFound, _goError, _yarpcUnavailable}
)

// thriftHandler implements echoserver.Interface.
type thriftHandler struct{}

func (thriftHandler) Call(_ context.Context, req *echo.EchoRequest) (*echo.EchoResponse, error) {
	msg := "boom"
	switch req.GetFail() {
	case "", _ok:
		return &echo.EchoResponse{Key: req.Key}, nil
	case _notFoundEx:
		return nil, &echo.NotFoundError{Message: &msg}
	case _unavailableEx:
		return nil, &echo.UnavailableError{Message: &msg}
	case _plainEx:
		return nil, &echo.PlainError{Message: &msg}
	case _goError:
		return nil, errors.New(msg)
	case _yarpcUnavailable:
		return nil, yarpcerrors.UnavailableErrorf("%s", msg)
	default:
		return nil, yarpcerrors.InvalidArgumentErrorf("unknown fail %q", req.GetFail())
	}
}

// protoHandler implements echopb.EchoYARPCServer.
type protoHandler struct{}

func (protoHandler) Call(_ context.Context, req *echopb.EchoRequest) (*echopb.EchoResponse, error) {
	switch req.Fail {
	case "", _ok:
		return &echopb.EchoResponse{Key: req.Key}, nil
	case _pbUnavailableDetails:
		return nil, protobuf.NewError(yarpcerrors.CodeUnavailable, "boom",
			protobuf.WithErrorDetails(&echopb.ErrorDetail{Reason: "overloaded"}))
	case _pbNotFound:
		return nil, protobuf.NewError(yarpcerrors.CodeNotFound, "boom")
	case _goError:
		return nil, errors.New("boom")
	case _yarpcUnavailable:
		return nil, yarpcerrors.UnavailableErrorf("boom")
	default:
		return nil, yarpcerrors.InvalidArgumentErrorf("unknown fail %q", req.Fail)
	}
}

// meta is a transport.ApplicationErrorMeta, comparable.
type meta struct {
	Name    string
	Code    string // "" for a nil Code
	Details string
}

func (m *meta) String() string {
	if m == nil {
		return "nil"
	}
	code := m.Code
	if code == "" {
		code = "nil"
	}
	return fmt.Sprintf("{Name:%q Code:%s Details:%q}", m.Name, code, m.Details)
}

func seeMeta(m *transport.ApplicationErrorMeta) *meta {
	if m == nil {
		return nil
	}
	s := &meta{Name: m.Name, Details: m.Details}
	if m.Code != nil {
		s.Code = m.Code.String()
	}
	return s
}

// code returns the yarpcerrors code of err as a string, "" for nil.
func code(err error) string {
	if err == nil {
		return ""
	}
	return yarpcerrors.FromError(err).Code().String()
}

// inboundSeen is what the inbound middleware saw.
type inboundSeen struct {
	// Err is the code of the error the handler returned, "" for nil.
	Err string
	// AppErr: the encoding called SetApplicationError.
	AppErr bool
	// Meta is what the encoding passed to SetApplicationErrorMeta, nil if
	// it did not call it.
	Meta *meta
}

// outboundSeen is what the outbound middleware saw.
type outboundSeen struct {
	// Err is the code of the error next.Call returned, "" for nil.
	Err string
	// Res: next.Call returned a non-nil response.
	Res bool
	// AppErr is res.ApplicationError.
	AppErr bool
	// Meta is res.ApplicationErrorMeta.
	Meta *meta
	// Claim and Late: res.Headers has the header the inbound middleware
	// added before, and after, the handler.
	Claim, Late bool
}

// callerSeen is what the generated client returned to its caller.
type callerSeen struct {
	// Err is the code of the error, "" for nil; Type its Go type.
	Err, Type string
	// Details is how many details protobuf.GetErrorDetails finds in it.
	Details int
	// Claim and Late: the response headers (yarpc.ResponseHeaders) have
	// the headers of the inbound middleware.
	Claim, Late bool
}

// seen is everything one call shows.
type seen struct {
	In   inboundSeen
	Out  outboundSeen
	Call callerSeen
}

// inboundProbe is the unary inbound middleware of the server.
type inboundProbe struct {
	mu   sync.Mutex
	seen map[string]inboundSeen
	// setter records, per transport, whether the ResponseWriter the
	// middleware gets implements transport.ApplicationErrorMetaSetter.
	setter map[string]bool
}

func (p *inboundProbe) Handle(ctx context.Context, req *transport.Request, resw transport.ResponseWriter, h transport.UnaryHandler) error {
	w := &probeWriter{ResponseWriter: resw}
	var next transport.ResponseWriter = w
	if _, bare := req.Headers.Get(_bareHeader); bare {
		next = bareWriter{w}
	}
	resw.AddHeaders(transport.NewHeaders().With(_claimHeader, "claimed"))
	err := h.Handle(ctx, req, next)
	resw.AddHeaders(transport.NewHeaders().With(_lateHeader, "late"))

	_, setter := resw.(transport.ApplicationErrorMetaSetter)
	id, _ := req.Headers.Get(_caseHeader)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[id] = inboundSeen{Err: code(err), AppErr: w.appErr, Meta: seeMeta(w.meta)}
	p.setter[req.Transport] = setter
	return err
}

func (p *inboundProbe) get(id string) inboundSeen {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[id]
}

// probeWriter records the application error the encoding reports, and
// passes it on. It implements transport.ApplicationErrorMetaSetter:
// without it the encodings do not report the error's name, code and
// details (see bareWriter).
type probeWriter struct {
	transport.ResponseWriter
	appErr bool
	meta   *transport.ApplicationErrorMeta
}

var _ transport.ApplicationErrorMetaSetter = (*probeWriter)(nil)

func (w *probeWriter) SetApplicationError() {
	w.appErr = true
	w.ResponseWriter.SetApplicationError()
}

func (w *probeWriter) SetApplicationErrorMeta(m *transport.ApplicationErrorMeta) {
	w.meta = m
	if s, ok := w.ResponseWriter.(transport.ApplicationErrorMetaSetter); ok {
		s.SetApplicationErrorMeta(m)
	}
}

// bareWriter hides every method of the probeWriter but those of
// transport.ResponseWriter, as a careless wrapper would.
type bareWriter struct{ transport.ResponseWriter }

// outboundProbe is the unary outbound middleware of the client.
type outboundProbe struct {
	mu   sync.Mutex
	seen map[string]outboundSeen
}

func (p *outboundProbe) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	res, err := out.Call(ctx, req)
	s := outboundSeen{Err: code(err), Res: res != nil}
	if res != nil {
		s.AppErr = res.ApplicationError
		s.Meta = seeMeta(res.ApplicationErrorMeta)
		_, s.Claim = res.Headers.Get(_claimHeader)
		_, s.Late = res.Headers.Get(_lateHeader)
	}
	id, _ := req.Headers.Get(_caseHeader)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[id] = s
	return res, err
}

func (p *outboundProbe) get(id string) outboundSeen {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[id]
}

// probe is a started server and client.
type probe struct {
	in     *inboundProbe
	out    *outboundProbe
	client *yarpc.Dispatcher
}

// startProbe starts the server, with an inbound per transport, and the
// client, with an outbound to each, named after the transport.
func startProbe(t *testing.T) *probe {
	t.Helper()
	p := &probe{
		in:  &inboundProbe{seen: map[string]inboundSeen{}, setter: map[string]bool{}},
		out: &outboundProbe{seen: map[string]outboundSeen{}},
	}

	httpIn := http.NewTransport().NewInbound("127.0.0.1:0")
	grpcListener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err, "listen")
	grpcIn := grpc.NewTransport().NewInbound(grpcListener)
	tchServer, err := tchannel.NewTransport(tchannel.ServiceName(_server), tchannel.ListenAddr("127.0.0.1:0"))
	require.NoError(t, err, "tchannel transport")
	server := yarpc.NewDispatcher(yarpc.Config{
		Name:              _server,
		Inbounds:          yarpc.Inbounds{httpIn, grpcIn, tchServer.NewInbound()},
		InboundMiddleware: yarpc.InboundMiddleware{Unary: p.in},
	})
	server.Register(echoserver.New(thriftHandler{}))
	server.Register(echopb.BuildEchoYARPCProcedures(protoHandler{}))
	start(t, server)

	tchClient, err := tchannel.NewTransport(tchannel.ServiceName(_client))
	require.NoError(t, err, "tchannel transport")
	p.client = yarpc.NewDispatcher(yarpc.Config{
		Name: _client,
		Outbounds: yarpc.Outbounds{
			_http:     {ServiceName: _server, Unary: http.NewTransport().NewSingleOutbound("http://" + httpIn.Addr().String())},
			_grpc:     {ServiceName: _server, Unary: grpc.NewTransport().NewSingleOutbound(grpcListener.Addr().String())},
			_tchannel: {ServiceName: _server, Unary: tchClient.NewSingleOutbound(tchServer.ListenAddr())},
		},
		OutboundMiddleware: yarpc.OutboundMiddleware{Unary: p.out},
	})
	start(t, p.client)
	return p
}

func start(t *testing.T, d *yarpc.Dispatcher) {
	t.Helper()
	require.NoError(t, d.Start(), "start %s", d.Name())
	t.Cleanup(func() {
		assert.NoError(t, d.Stop(), "stop %s", d.Name())
	})
}

// call makes one call with the generated client of encoding over
// transport, failing as kind says, and returns what everyone saw.
func (p *probe) call(t *testing.T, tr, encoding, kind string, opts ...yarpc.CallOption) seen {
	t.Helper()
	id := strings.Join([]string{tr, encoding, kind, fmt.Sprint(len(opts))}, "/")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var headers map[string]string
	opts = append(opts, yarpc.WithHeader(_caseHeader, id), yarpc.ResponseHeaders(&headers))

	var err error
	switch encoding {
	case _thrift:
		fail := kind
		_, err = echoclient.New(p.client.ClientConfig(tr)).Call(ctx, &echo.EchoRequest{Key: "k", Fail: &fail}, opts...)
	case _proto:
		_, err = echopb.NewEchoYARPCClient(p.client.ClientConfig(tr)).Call(ctx, &echopb.EchoRequest{Key: "k", Fail: kind}, opts...)
	}
	var s seen
	s.In = p.in.get(id)
	s.Out = p.out.get(id)
	s.Call = callerSeen{Err: code(err)}
	if err != nil {
		s.Call.Type = fmt.Sprintf("%T", err)
	}
	s.Call.Details = len(protobuf.GetErrorDetails(err))
	_, s.Call.Claim = headers[_claimHeader]
	_, s.Call.Late = headers[_lateHeader]
	return s
}

func (s seen) String() string {
	return fmt.Sprintf("in{err:%q appErr:%v meta:%v} out{err:%q res:%v appErr:%v meta:%v claim:%v late:%v} caller{err:%q type:%s details:%d claim:%v late:%v}",
		s.In.Err, s.In.AppErr, s.In.Meta,
		s.Out.Err, s.Out.Res, s.Out.AppErr, s.Out.Meta, s.Out.Claim, s.Out.Late,
		s.Call.Err, s.Call.Type, s.Call.Details, s.Call.Claim, s.Call.Late)
}

// probeCase is one call of the probe.
type probeCase struct {
	Transport, Encoding, Kind string
	// Bare: the inbound middleware hands the encoding a ResponseWriter
	// wrapper that does not implement transport.ApplicationErrorMetaSetter.
	Bare bool
}

func (c probeCase) String() string {
	s := c.Transport + "/" + c.Encoding + "/" + c.Kind
	if c.Bare {
		s += "/bare"
	}
	return s
}

// TestProbe asserts what yarpc v1.81.0 hands middleware, and the caller,
// for every transport, encoding and kind of error. FACTS.md reads it.
func TestProbe(t *testing.T) {
	p := startProbe(t)
	for _, tr := range _transports {
		cases := make([]probeCase, 0, len(_thriftKinds)+len(_protoKinds)+2)
		for _, k := range _thriftKinds {
			cases = append(cases, probeCase{tr, _thrift, k, false})
		}
		cases = append(cases, probeCase{tr, _thrift, _notFoundEx, true})
		for _, k := range _protoKinds {
			cases = append(cases, probeCase{tr, _proto, k, false})
		}
		cases = append(cases, probeCase{tr, _proto, _pbUnavailableDetails, true})
		for _, c := range cases {
			t.Run(c.String(), func(t *testing.T) {
				want, ok := _facts[c]
				require.True(t, ok, "no fact for %v", c)
				var opts []yarpc.CallOption
				if c.Bare {
					opts = append(opts, yarpc.WithHeader(_bareHeader, "1"))
				}
				got := p.call(t, c.Transport, c.Encoding, c.Kind, opts...)
				assert.Equal(t, want.String(), got.String(), "yarpc's behaviour changed; update FACTS.md and _facts")
			})
		}
	}

	// The ResponseWriter a unary inbound middleware gets implements
	// transport.ApplicationErrorMetaSetter on every transport.
	p.in.mu.Lock()
	defer p.in.mu.Unlock()
	for _, tr := range _transports {
		assert.True(t, p.in.setter[tr], "%s: the inbound middleware's ResponseWriter does not implement transport.ApplicationErrorMetaSetter", tr)
	}
}

// TestHTTPProtobufErrorBreaksResponse pins down why protobuf.NewError over
// HTTP reaches the outbound middleware as an unknown error with no
// response: yarpc's HTTP inbound writes the marshaled google.rpc.Status
// raw into the Grpc-Status-Details-Bin response header, and Go's HTTP
// client rejects the control bytes in it, so the whole response is lost:
// code, application error flag and headers.
func TestHTTPProtobufErrorBreaksResponse(t *testing.T) {
	p := startProbe(t)
	for _, kind := range []string{_pbUnavailableDetails, _pbNotFound} {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := echopb.NewEchoYARPCClient(p.client.ClientConfig(_http)).Call(ctx, &echopb.EchoRequest{Key: "k", Fail: kind})
			require.Error(t, err, "got no error")
			for _, want := range []string{"malformed MIME header line", "Grpc-Status-Details-Bin"} {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}

// _facts is what TestProbe observed with yarpc v1.81.0 and Go 1.26.
var _facts = map[probeCase]seen{
	{_http, _thrift, _ok, false}: {
		In:   inboundSeen{},
		Out:  outboundSeen{Res: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Claim: true, Late: true},
	},
	{_http, _thrift, _notFoundEx, false}: {
		In:   inboundSeen{AppErr: true, Meta: &meta{Name: "NotFoundError", Code: "not-found", Details: "NotFoundError{Message: boom}"}},
		Out:  outboundSeen{Res: true, AppErr: true, Meta: &meta{Name: "NotFoundError", Code: "not-found", Details: "NotFoundError{Message: boom}"}, Claim: true, Late: true},
		Call: callerSeen{Err: "unknown", Type: "*echo.NotFoundError", Claim: true, Late: true},
	},
	{_http, _thrift, _unavailableEx, false}: {
		In:   inboundSeen{AppErr: true, Meta: &meta{Name: "UnavailableError", Code: "unavailable", Details: "UnavailableError{Message: boom}"}},
		Out:  outboundSeen{Res: true, AppErr: true, Meta: &meta{Name: "UnavailableError", Code: "unavailable", Details: "UnavailableError{Message: boom}"}, Claim: true, Late: true},
		Call: callerSeen{Err: "unknown", Type: "*echo.UnavailableError", Claim: true, Late: true},
	},
	{_http, _thrift, _plainEx, false}: {
		In:   inboundSeen{AppErr: true, Meta: &meta{Name: "PlainError", Details: "PlainError{Message: boom}"}},
		Out:  outboundSeen{Res: true, AppErr: true, Meta: &meta{Name: "PlainError", Details: "PlainError{Message: boom}"}, Claim: true, Late: true},
		Call: callerSeen{Err: "unknown", Type: "*echo.PlainError", Claim: true, Late: true},
	},
	{_http, _thrift, _goError, false}: {
		In:   inboundSeen{Err: "unknown"},
		Out:  outboundSeen{Err: "unknown", Res: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Err: "unknown", Type: "*yarpcerrors.Status"},
	},
	{_http, _thrift, _yarpcUnavailable, false}: {
		In:   inboundSeen{Err: "unavailable"},
		Out:  outboundSeen{Err: "unavailable", Res: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Err: "unavailable", Type: "*yarpcerrors.Status"},
	},
	{_http, _thrift, _notFoundEx, true}: {
		In:   inboundSeen{AppErr: true},
		Out:  outboundSeen{Res: true, AppErr: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Err: "unknown", Type: "*echo.NotFoundError", Claim: true, Late: true},
	},
	{_http, _proto, _ok, false}: {
		In:   inboundSeen{},
		Out:  outboundSeen{Res: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Claim: true, Late: true},
	},
	{_http, _proto, _pbUnavailableDetails, false}: {
		In:   inboundSeen{Err: "unavailable", AppErr: true, Meta: &meta{Name: "ErrorDetail", Details: "[]{ ErrorDetail{reason:\"overloaded\" } }"}},
		Out:  outboundSeen{Err: "unknown"},
		Call: callerSeen{Err: "unknown", Type: "*yarpcerrors.Status"},
	},
	{_http, _proto, _pbNotFound, false}: {
		In:   inboundSeen{Err: "not-found", AppErr: true, Meta: &meta{Details: "[]{  }"}},
		Out:  outboundSeen{Err: "unknown"},
		Call: callerSeen{Err: "unknown", Type: "*yarpcerrors.Status"},
	},
	{_http, _proto, _goError, false}: {
		In:   inboundSeen{Err: "unknown", AppErr: true},
		Out:  outboundSeen{Err: "unknown", Res: true, AppErr: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Err: "unknown", Type: "*yarpcerrors.Status", Claim: true, Late: true},
	},
	{_http, _proto, _yarpcUnavailable, false}: {
		In:   inboundSeen{Err: "unavailable", AppErr: true},
		Out:  outboundSeen{Err: "unavailable", Res: true, AppErr: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Err: "unavailable", Type: "*yarpcerrors.Status", Claim: true, Late: true},
	},
	{_http, _proto, _pbUnavailableDetails, true}: {
		In:   inboundSeen{Err: "unavailable", AppErr: true},
		Out:  outboundSeen{Err: "unknown"},
		Call: callerSeen{Err: "unknown", Type: "*yarpcerrors.Status"},
	},
	{_grpc, _thrift, _ok, false}: {
		In:   inboundSeen{},
		Out:  outboundSeen{Res: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Claim: true, Late: true},
	},
	{_grpc, _thrift, _notFoundEx, false}: {
		In:   inboundSeen{AppErr: true, Meta: &meta{Name: "NotFoundError", Code: "not-found", Details: "NotFoundError{Message: boom}"}},
		Out:  outboundSeen{Res: true, AppErr: true, Meta: &meta{Name: "NotFoundError", Details: "NotFoundError{Message: boom}"}, Claim: true, Late: true},
		Call: callerSeen{Err: "unknown", Type: "*echo.NotFoundError", Claim: true, Late: true},
	},
	{_grpc, _thrift, _unavailableEx, false}: {
		In:   inboundSeen{AppErr: true, Meta: &meta{Name: "UnavailableError", Code: "unavailable", Details: "UnavailableError{Message: boom}"}},
		Out:  outboundSeen{Res: true, AppErr: true, Meta: &meta{Name: "UnavailableError", Details: "UnavailableError{Message: boom}"}, Claim: true, Late: true},
		Call: callerSeen{Err: "unknown", Type: "*echo.UnavailableError", Claim: true, Late: true},
	},
	{_grpc, _thrift, _plainEx, false}: {
		In:   inboundSeen{AppErr: true, Meta: &meta{Name: "PlainError", Details: "PlainError{Message: boom}"}},
		Out:  outboundSeen{Res: true, AppErr: true, Meta: &meta{Name: "PlainError", Details: "PlainError{Message: boom}"}, Claim: true, Late: true},
		Call: callerSeen{Err: "unknown", Type: "*echo.PlainError", Claim: true, Late: true},
	},
	{_grpc, _thrift, _goError, false}: {
		In:   inboundSeen{Err: "unknown"},
		Out:  outboundSeen{Err: "unknown", Res: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Err: "unknown", Type: "*yarpcerrors.Status"},
	},
	{_grpc, _thrift, _yarpcUnavailable, false}: {
		In:   inboundSeen{Err: "unavailable"},
		Out:  outboundSeen{Err: "unavailable", Res: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Err: "unavailable", Type: "*yarpcerrors.Status"},
	},
	{_grpc, _thrift, _notFoundEx, true}: {
		In:   inboundSeen{AppErr: true},
		Out:  outboundSeen{Res: true, AppErr: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Err: "unknown", Type: "*echo.NotFoundError", Claim: true, Late: true},
	},
	{_grpc, _proto, _ok, false}: {
		In:   inboundSeen{},
		Out:  outboundSeen{Res: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Claim: true, Late: true},
	},
	{_grpc, _proto, _pbUnavailableDetails, false}: {
		In:   inboundSeen{Err: "unavailable", AppErr: true, Meta: &meta{Name: "ErrorDetail", Details: "[]{ ErrorDetail{reason:\"overloaded\" } }"}},
		Out:  outboundSeen{Err: "unavailable", Res: true, AppErr: true, Meta: &meta{Name: "ErrorDetail", Details: "[]{ ErrorDetail{reason:\"overloaded\" } }"}, Claim: true, Late: true},
		Call: callerSeen{Err: "unavailable", Type: "*protobuf.pberror", Details: 1, Claim: true, Late: true},
	},
	{_grpc, _proto, _pbNotFound, false}: {
		In:   inboundSeen{Err: "not-found", AppErr: true, Meta: &meta{Details: "[]{  }"}},
		Out:  outboundSeen{Err: "not-found", Res: true, AppErr: true, Meta: &meta{Details: "[]{  }"}, Claim: true, Late: true},
		Call: callerSeen{Err: "not-found", Type: "*yarpcerrors.Status", Claim: true, Late: true},
	},
	{_grpc, _proto, _goError, false}: {
		In:   inboundSeen{Err: "unknown", AppErr: true},
		Out:  outboundSeen{Err: "unknown", Res: true, AppErr: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Err: "unknown", Type: "*yarpcerrors.Status", Claim: true, Late: true},
	},
	{_grpc, _proto, _yarpcUnavailable, false}: {
		In:   inboundSeen{Err: "unavailable", AppErr: true},
		Out:  outboundSeen{Err: "unavailable", Res: true, AppErr: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Err: "unavailable", Type: "*yarpcerrors.Status", Claim: true, Late: true},
	},
	{_grpc, _proto, _pbUnavailableDetails, true}: {
		In:   inboundSeen{Err: "unavailable", AppErr: true},
		Out:  outboundSeen{Err: "unavailable", Res: true, AppErr: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Err: "unavailable", Type: "*protobuf.pberror", Details: 1, Claim: true, Late: true},
	},
	{_tchannel, _thrift, _ok, false}: {
		In:   inboundSeen{},
		Out:  outboundSeen{Res: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Claim: true, Late: true},
	},
	{_tchannel, _thrift, _notFoundEx, false}: {
		In:   inboundSeen{AppErr: true, Meta: &meta{Name: "NotFoundError", Code: "not-found", Details: "NotFoundError{Message: boom}"}},
		Out:  outboundSeen{Res: true, AppErr: true, Meta: &meta{Name: "NotFoundError", Code: "not-found", Details: "NotFoundError{Message: boom}"}, Claim: true, Late: true},
		Call: callerSeen{Err: "unknown", Type: "*echo.NotFoundError", Claim: true, Late: true},
	},
	{_tchannel, _thrift, _unavailableEx, false}: {
		In:   inboundSeen{AppErr: true, Meta: &meta{Name: "UnavailableError", Code: "unavailable", Details: "UnavailableError{Message: boom}"}},
		Out:  outboundSeen{Res: true, AppErr: true, Meta: &meta{Name: "UnavailableError", Code: "unavailable", Details: "UnavailableError{Message: boom}"}, Claim: true, Late: true},
		Call: callerSeen{Err: "unknown", Type: "*echo.UnavailableError", Claim: true, Late: true},
	},
	{_tchannel, _thrift, _plainEx, false}: {
		In:   inboundSeen{AppErr: true, Meta: &meta{Name: "PlainError", Details: "PlainError{Message: boom}"}},
		Out:  outboundSeen{Res: true, AppErr: true, Meta: &meta{Name: "PlainError", Details: "PlainError{Message: boom}"}, Claim: true, Late: true},
		Call: callerSeen{Err: "unknown", Type: "*echo.PlainError", Claim: true, Late: true},
	},
	{_tchannel, _thrift, _goError, false}: {
		In:   inboundSeen{Err: "unknown"},
		Out:  outboundSeen{Err: "internal"},
		Call: callerSeen{Err: "internal", Type: "*yarpcerrors.Status"},
	},
	{_tchannel, _thrift, _yarpcUnavailable, false}: {
		In:   inboundSeen{Err: "unavailable"},
		Out:  outboundSeen{Err: "unavailable"},
		Call: callerSeen{Err: "unavailable", Type: "*yarpcerrors.Status"},
	},
	{_tchannel, _thrift, _notFoundEx, true}: {
		In:   inboundSeen{AppErr: true},
		Out:  outboundSeen{Res: true, AppErr: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Err: "unknown", Type: "*echo.NotFoundError", Claim: true, Late: true},
	},
	{_tchannel, _proto, _ok, false}: {
		In:   inboundSeen{},
		Out:  outboundSeen{Res: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Claim: true, Late: true},
	},
	{_tchannel, _proto, _pbUnavailableDetails, false}: {
		In:   inboundSeen{Err: "unavailable", AppErr: true, Meta: &meta{Name: "ErrorDetail", Details: "[]{ ErrorDetail{reason:\"overloaded\" } }"}},
		Out:  outboundSeen{Err: "unavailable", Res: true, AppErr: true, Meta: &meta{Name: "ErrorDetail", Details: "[]{ ErrorDetail{reason:\"overloaded\" } }"}, Claim: true, Late: true},
		Call: callerSeen{Err: "unavailable", Type: "*yarpcerrors.Status", Claim: true, Late: true},
	},
	{_tchannel, _proto, _pbNotFound, false}: {
		In:   inboundSeen{Err: "not-found", AppErr: true, Meta: &meta{Details: "[]{  }"}},
		Out:  outboundSeen{Err: "not-found", Res: true, AppErr: true, Meta: &meta{Details: "[]{  }"}, Claim: true, Late: true},
		Call: callerSeen{Err: "not-found", Type: "*yarpcerrors.Status", Claim: true, Late: true},
	},
	{_tchannel, _proto, _goError, false}: {
		In:   inboundSeen{Err: "unknown", AppErr: true},
		Out:  outboundSeen{Err: "unknown", Res: true, AppErr: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Err: "unknown", Type: "*yarpcerrors.Status", Claim: true, Late: true},
	},
	{_tchannel, _proto, _yarpcUnavailable, false}: {
		In:   inboundSeen{Err: "unavailable", AppErr: true},
		Out:  outboundSeen{Err: "unavailable", Res: true, AppErr: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Err: "unavailable", Type: "*yarpcerrors.Status", Claim: true, Late: true},
	},
	{_tchannel, _proto, _pbUnavailableDetails, true}: {
		In:   inboundSeen{Err: "unavailable", AppErr: true},
		Out:  outboundSeen{Err: "unavailable", Res: true, AppErr: true, Meta: &meta{}, Claim: true, Late: true},
		Call: callerSeen{Err: "unavailable", Type: "*yarpcerrors.Status", Claim: true, Late: true},
	},
}
