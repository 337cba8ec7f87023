package errown

import (
	"cmp"
	"errors"
	"fmt"
	"sort"

	"github.com/errown/errown/retrypeer"
	"go.uber.org/multierr"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/peer"
	"go.uber.org/yarpc/api/transport"
	yarpcpeer "go.uber.org/yarpc/peer"
)

// ErrRetriesNotSteered is the start error of an application whose retry
// policy covers an outbound that chooses among several instances through
// a peer list errown cannot steer: its retries would often go back to the
// instance that just failed them, while the callers above, seeing the
// error unclaimed, retry it no more. Its message names each outbound and
// what to write.
var ErrRetriesNotSteered = errors.New("errown: retries of an outbound with several instances may go back to the instance that failed")

// unsteered is an outbound, found in the yarpc.Config Apply decorated,
// whose unary outbound chooses through a peer list errown's retries
// cannot steer to another instance.
type unsteered struct {
	key, service string
	list         string // the list's type
}

// unsteeredOutbounds returns the outbounds of cfg whose unary outbound
// chooses through a peer.List that is not a retrypeer.Chooser. A single
// peer, or a chooser that is not a list, is left as it is, and so is an
// outbound that exposes no chooser.
func unsteeredOutbounds(cfg yarpc.Config) []unsteered {
	var out []unsteered
	for key, o := range cfg.Outbounds {
		if o.Unary == nil {
			continue
		}
		if list, ok := unsteerable(o.Unary); ok {
			out = append(out, unsteered{key: key, service: cmp.Or(o.ServiceName, key), list: list})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// unsteerable reports whether o chooses through a peer list errown cannot
// steer, and the list's type.
func unsteerable(o transport.UnaryOutbound) (string, bool) {
	withChooser, ok := o.(interface{ Chooser() peer.Chooser })
	if !ok {
		return "", false
	}
	chooser := withChooser.Chooser()
	if bound, ok := chooser.(*yarpcpeer.BoundChooser); ok {
		chooser = bound.ChooserList()
	}
	switch chooser.(type) {
	case *retrypeer.Chooser, *yarpcpeer.Single:
		return "", false
	case peer.List:
		return fmt.Sprintf("%T", chooser), true
	}
	return "", false
}

// unsteeredPolicies reports each outbound found by Apply that a retry
// policy may retry and whose retries cannot go to another instance.
func (m *Middleware) unsteeredPolicies() error {
	found := m.unsteered.Load()
	if found == nil {
		return nil
	}
	retried := make(map[string]bool)
	for _, p := range m.cfg.Retry.Policies {
		if p.MaxAttempts != 1 && (p.Idempotent == nil || *p.Idempotent) {
			retried[p.Service] = true
		}
	}
	var err error
	for _, u := range *found {
		if !retried[u.service] {
			continue
		}
		err = multierr.Append(err, fmt.Errorf("outbound %q (service %q) chooses through %s: "+
			"wrap its chooser in retrypeer.New (transport.NewOutbound(retrypeer.New(list))), "+
			"or, for outbounds in yarpc's YAML, call retrypeer.RegisterPeerLists on the yarpcconfig.Configurator",
			u.key, u.service, u.list))
	}
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w%s", ErrRetriesNotSteered, err, _orWarn)
}
