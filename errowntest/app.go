package errowntest

import (
	"errors"
	"fmt"

	"github.com/errown/errown"
	"github.com/errown/errown/internal/testmesh"
	"go.uber.org/fx"
	"go.uber.org/yarpc"
)

// AppOptions makes an fx application under test a service of the mesh,
// called name, served over the transport named: the options provide the
// yarpc.Config the application builds its dispatcher from (one inbound on
// 127.0.0.1, an outbound to each callee over the callee's own transport,
// the mesh's Recorder on every outbound) and, once the application has
// started, add it to the mesh, so that Mesh.Call reaches it and other
// services can call it. The application brings the rest, as in
// production: its dispatcher constructor, errown.Module (or
// errown.Grouped), its config.Provider, its handlers, registered under
// Procedure for Mesh.Call to reach them.
//
// Use it with fx's own go.uber.org/fx/fxtest (ExampleMesh_AppOptions).
// The callees must already be started. Served counts only what handlers
// the mesh registered served, so it stays zero for the application.
func (m *Mesh) AppOptions(name, transportName string, callees ...string) fx.Option {
	m.t.Helper()
	cfg, in, err := m.appConfig(name, transportName, callees)
	if err != nil {
		m.t.Errorf("errowntest: application %q: %v", name, err)
		m.t.FailNow()
	}
	type params struct {
		fx.In

		Lifecycle  fx.Lifecycle
		Dispatcher *yarpc.Dispatcher
		Middleware *errown.Middleware `optional:"true"`
	}
	return fx.Options(
		fx.Supply(cfg),
		// Depending on the dispatcher, the hook is appended after the
		// dispatcher's own: it runs once the dispatcher serves.
		fx.Invoke(func(p params) {
			p.Lifecycle.Append(fx.StartHook(func() error {
				return m.add(&Service{
					name: name, transport: transportName, addr: in.Addr(),
					dispatcher: p.Dispatcher, middleware: p.Middleware,
				})
			}))
		}),
		// An application that never starts leaves its listener behind.
		fx.Invoke(func(lc fx.Lifecycle) {
			started := false
			lc.Append(fx.StartHook(func() { started = true }))
			m.t.Cleanup(func() {
				if !started {
					in.Abort()
				}
			})
		}),
	)
}

// appConfig returns the yarpc.Config of an application joining the mesh,
// and its inbound.
func (m *Mesh) appConfig(name, transportName string, callees []string) (yarpc.Config, testmesh.Inbound, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if name == "" {
		return yarpc.Config{}, testmesh.Inbound{}, errors.New("a name is required")
	}
	if _, dup := m.services[name]; dup {
		return yarpc.Config{}, testmesh.Inbound{}, errors.New("already started")
	}
	e := testmesh.NewEndpoint(name, testmesh.TransportOptions{})
	outbounds := make(yarpc.Outbounds, len(callees))
	for _, callee := range callees {
		s, ok := m.services[callee]
		if !ok {
			return yarpc.Config{}, testmesh.Inbound{}, fmt.Errorf("callee %q is not started", callee)
		}
		outs, err := e.Outbounds(s.transport, s.addr)
		if err != nil {
			return yarpc.Config{}, testmesh.Inbound{}, err
		}
		outbounds[callee] = outs
	}
	in, err := e.Inbound(transportName, "")
	if err != nil {
		return yarpc.Config{}, testmesh.Inbound{}, err
	}
	return yarpc.Config{
		Name:               name,
		Inbounds:           yarpc.Inbounds{in},
		Outbounds:          outbounds,
		OutboundMiddleware: yarpc.OutboundMiddleware{Unary: m.recorder},
	}, in, nil
}

// add makes a started service part of the mesh: Mesh.Call reaches it.
func (m *Mesh) add(s *Service) error {
	outside, err := m.outside(s)
	if err != nil {
		return fmt.Errorf("errowntest: outside caller of %q: %w", s.name, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.services[s.name]; dup {
		return fmt.Errorf("errowntest: service %q already started", s.name)
	}
	m.services[s.name] = &meshService{Service: s, outside: outside}
	return nil
}
