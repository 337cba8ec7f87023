package errown

import (
	"cmp"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/errown/errown/internal/configkey"
	"go.uber.org/multierr"
	"go.uber.org/yarpc"
)

// ErrUnknownService is the start error of an application whose errown
// configuration names, in a retry policy or a dependency declaration, a
// callee service that its yarpc dispatcher has no unary outbound for: the
// policy or declaration would never apply. Its message names each one and
// the services the dispatcher does call.
var ErrUnknownService = errors.New("errown: the configuration names services the dispatcher does not call")

// _maxListed bounds the services an error lists.
const _maxListed = 10

// unknownServices reports each retry policy and dependency declaration
// that names a callee service d has no unary outbound for: the service
// name of an outbound, its key when it sets none. Nothing is checked when
// d is not known, or an adapter took errown's middleware too (its
// clients' callees are not known).
func (m *Middleware) unknownServices(d *yarpc.Dispatcher) error {
	if d == nil || m.adapted.Load() {
		return nil
	}
	c := dispatcherCallees(d)
	var err error
	for i, p := range m.cfg.Retry.Policies {
		if problem, fix := c.check(p.Service); problem != "" {
			err = multierr.Append(err, fmt.Errorf("retry.policies[%d].service: %s: %s", i, problem, fix))
		}
	}
	for i, dep := range m.cfg.Dependencies {
		if dep.Recorded {
			continue
		}
		if problem, fix := c.check(dep.Service); problem != "" {
			err = multierr.Append(err, fmt.Errorf("dependencies[%d].service: %s: %s, "+
				"or, for a dependency the handlers report with outbound.Record, set recorded: true", i, problem, fix))
		}
	}
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w%s", ErrUnknownService, err, _orWarn)
}

// callees are the services a dispatcher calls.
type callees struct {
	dispatcher string
	unary      map[string]bool   // services with a unary outbound
	other      map[string]bool   // services with only oneway or stream outbounds
	renamed    map[string]string // outbound key → its service, where they differ
}

func dispatcherCallees(d *yarpc.Dispatcher) callees {
	c := callees{dispatcher: d.Name(), unary: map[string]bool{}, other: map[string]bool{}, renamed: map[string]string{}}
	for key, o := range d.Outbounds() {
		service := o.ServiceName
		service = cmp.Or(service, key)
		if o.Unary != nil {
			c.unary[service] = true
		} else {
			c.other[service] = true
		}
		if service != key {
			c.renamed[key] = service
		}
	}
	for s := range c.unary {
		delete(c.other, s)
	}
	return c
}

// check says what is wrong with service as a callee, and the fix; ""
// when nothing is.
func (c callees) check(service string) (problem, fix string) {
	if c.unary[service] {
		return "", ""
	}
	if to, ok := c.renamed[service]; ok && c.unary[to] {
		return fmt.Sprintf("%q is the key of an outbound whose requests go to service %q", service, to), "write service: " + to
	}
	if c.other[service] {
		return fmt.Sprintf("%q has only oneway or stream outbounds, and errown sees unary calls only", service), "remove it"
	}
	known := make([]string, 0, len(c.unary))
	for s := range c.unary {
		known = append(known, s)
	}
	if len(known) == 0 {
		return fmt.Sprintf("%q is not called: the dispatcher %q has no unary outbound", service, c.dispatcher), "remove it"
	}
	problem = fmt.Sprintf("%q is not called by the dispatcher %q, which calls %s", service, c.dispatcher, quoteList(known))
	if near := configkey.Closest(service, known); near != "" {
		return problem, "write service: " + near
	}
	return problem, "name one of those"
}

// quoteList writes names sorted and quoted, at most _maxListed of them.
func quoteList(names []string) string {
	sort.Strings(names)
	quoted := make([]string, 0, min(len(names), _maxListed))
	for _, n := range names[:min(len(names), _maxListed)] {
		quoted = append(quoted, fmt.Sprintf("%q", n))
	}
	s := strings.Join(quoted, ", ")
	if len(names) > _maxListed {
		s += fmt.Sprintf(" and %d more", len(names)-_maxListed)
	}
	return s
}
