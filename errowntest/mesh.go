package errowntest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/internal/testmesh"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/yarpcerrors"
)

// OutsideCaller is the caller name of the requests Mesh.Call sends from
// outside the mesh, as the Recorder sees them.
const OutsideCaller = "outside"

// _callTimeout bounds a Mesh.Call whose context has no deadline (TChannel
// requires one).
const _callTimeout = 5 * time.Second

// MeshOption configures NewMesh.
type MeshOption interface {
	apply(*meshOptions)
}

type meshOptions struct {
	recorder RecorderConfig
}

type meshOptionFunc func(*meshOptions)

func (f meshOptionFunc) apply(o *meshOptions) { f(o) }

// WithRecorderConfig sets the header names the mesh's Recorder and
// Mesh.Call read. Use it when the services' errown.Config renames the
// claim or attempt header.
func WithRecorderConfig(cfg RecorderConfig) MeshOption {
	return meshOptionFunc(func(o *meshOptions) { o.recorder = cfg })
}

// Mesh is a set of yarpc services on 127.0.0.1 that call each other, with
// one Recorder on every outbound, the outside caller's included.
type Mesh struct {
	t        testing.TB
	recorder *Recorder
	claim    string // canonical claim header name

	mu       sync.Mutex
	services map[string]*meshService
}

type meshService struct {
	*Service
	outside *yarpc.Dispatcher // the outside caller's dispatcher for it
}

// NewMesh returns an empty Mesh. Everything it starts is stopped through
// t.Cleanup. Of t it calls Helper, Cleanup, Errorf and FailNow only.
func NewMesh(t testing.TB, opts ...MeshOption) *Mesh {
	var o meshOptions
	for _, opt := range opts {
		opt.apply(&o)
	}
	claim := o.recorder.ClaimHeader
	claim = cmp.Or(claim, defaults.ClaimHeader)
	return &Mesh{
		t:        t,
		recorder: NewRecorder(o.recorder),
		claim:    transport.CanonicalizeHeaderKey(claim),
		services: make(map[string]*meshService),
	}
}

// Recorder returns the Recorder on every outbound of the mesh.
func (m *Mesh) Recorder() *Recorder { return m.recorder }

// Service returns the started service called name, or nil.
func (m *Mesh) Service(name string) *Service {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.services[name]; ok {
		return s.Service
	}
	return nil
}

// Start starts a service as cfg describes and returns it once it is
// serving. It fails the test when cfg is invalid or the service cannot
// start.
func (m *Mesh) Start(cfg ServiceConfig) *Service {
	m.t.Helper()
	s, err := m.start(cfg)
	if err != nil {
		m.t.Errorf("errowntest: start service %q: %v", cfg.Name, err)
		m.t.FailNow()
	}
	return s
}

func (m *Mesh) start(cfg ServiceConfig) (*Service, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cfg.Name == "" {
		return nil, errors.New("a name is required")
	}
	if _, dup := m.services[cfg.Name]; dup {
		return nil, errors.New("already started")
	}
	if cfg.Handler == nil {
		cfg.Handler = Echo
	}

	callees := make([]testmesh.Callee, len(cfg.Callees))
	for i, name := range cfg.Callees {
		callee, ok := m.services[name]
		if !ok {
			return nil, fmt.Errorf("callee %q is not started", name)
		}
		callees[i] = callee.callee()
	}

	s := &Service{name: cfg.Name, transport: cfg.Transport}
	var client *Client
	n, err := testmesh.Start(testmesh.Config{
		Name:          cfg.Name,
		Kind:          cfg.Transport,
		Errown:        cfg.Errown,
		ErrownOptions: cfg.ErrownOptions,
		Transport:     testmesh.TransportOptions{Tracer: cfg.Tracer},
		Callees:       callees,
		Inbound:       cfg.ExtraInbound,
		Outbound:      yarpc.UnaryOutboundMiddleware(cfg.ExtraOutbound, m.recorder),
		Register: func(d *yarpc.Dispatcher, _ *errown.Middleware) error {
			client = newClient(d, cfg.Name, cfg.Callees)
			h := cfg.Handler
			d.Register(raw.Procedure(Procedure, func(ctx context.Context, body []byte) ([]byte, error) {
				s.served.Add(1)
				return h(ctx, client, body)
			}))
			d.Register(cfg.Procedures)
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	// Cleanups run last in, first out: services stop in the reverse
	// order of their start, callers before their callees, and each its
	// errown after its dispatcher, as Module does through fx.
	m.t.Cleanup(func() {
		if err := n.Stop(); err != nil {
			m.t.Errorf("errowntest: stop %q: %v", cfg.Name, err)
		}
	})
	s.dispatcher, s.middleware, s.addr = n.Dispatcher(), n.Middleware(), n.Addr()

	outside, err := m.outside(s)
	if err != nil {
		return nil, fmt.Errorf("outside caller: %w", err)
	}
	m.services[cfg.Name] = &meshService{Service: s, outside: outside}
	return s, nil
}

// newClient returns the Client a handler of service calls its callees
// with through d.
func newClient(d *yarpc.Dispatcher, service string, callees []string) *Client {
	c := &Client{service: service, callees: append([]string(nil), callees...), clients: make(map[string]raw.Client, len(callees))}
	for _, callee := range callees {
		c.clients[callee] = raw.New(d.ClientConfig(callee))
	}
	return c
}

// callee is s as a callee of another node.
func (s *Service) callee() testmesh.Callee {
	return testmesh.Callee{Name: s.name, Kind: s.transport, Addr: s.addr}
}

// outside starts the dispatcher Mesh.Call uses to reach s: no errown, the
// Recorder only. The test's cleanup stops it, before s.
func (m *Mesh) outside(s *Service) (*yarpc.Dispatcher, error) {
	d, err := testmesh.NewClient(OutsideCaller, testmesh.TransportOptions{}, m.recorder, s.callee())
	if err != nil {
		return nil, err
	}
	m.t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			m.t.Errorf("errowntest: stop %q: %v", d.Name(), err)
		}
	})
	return d, nil
}

// Reply is what a call from outside the mesh got back.
type Reply struct {
	// Body of the response; nil for most errors.
	Body []byte
	// Headers of the response, with lower-case names; empty when the
	// transport carried none with the error.
	Headers map[string]string
	// Claim is the claim header of the response, "" when absent.
	Claim string
	// Err is the error the call returned.
	Err error
}

// Code returns the code of r.Err, yarpcerrors.CodeOK when there is none.
func (r Reply) Code() yarpcerrors.Code {
	return yarpcerrors.FromError(r.Err).Code()
}

// Call calls Procedure on service from outside the mesh, as caller
// OutsideCaller with no errown, and returns the response with its headers.
// A ctx without deadline gets a 5s timeout.
func (m *Mesh) Call(ctx context.Context, service string, body []byte, opts ...yarpc.CallOption) Reply {
	oc, err := m.outboundConfig(service)
	if err != nil {
		return Reply{Err: err}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, _callTimeout)
		defer cancel()
	}
	var r Reply
	opts = append(opts[:len(opts):len(opts)], yarpc.ResponseHeaders(&r.Headers))
	r.Body, r.Err = raw.New(oc).Call(ctx, Procedure, body, opts...)
	r.Claim = r.Headers[m.claim]
	return r
}

// OutboundConfig returns the outside caller's outbound config for
// service, to make calls Mesh.Call does not cover: oneway calls over HTTP
// (Outbounds.Oneway), streams over gRPC (Outbounds.Stream), other
// encodings. It fails the test when service is not started.
func (m *Mesh) OutboundConfig(service string) *transport.OutboundConfig {
	m.t.Helper()
	oc, err := m.outboundConfig(service)
	if err != nil {
		m.t.Errorf("errowntest: %v", err)
		m.t.FailNow()
	}
	return oc
}

func (m *Mesh) outboundConfig(service string) (*transport.OutboundConfig, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.services[service]
	if !ok {
		return nil, yarpcerrors.InvalidArgumentErrorf("errowntest: service %q is not started", service)
	}
	return s.outside.MustOutboundConfig(service), nil
}

// Transports a Mesh can run services on: yarpc's transport names.
const (
	HTTP     = "http"
	GRPC     = "grpc"
	TChannel = "tchannel"
)
