package retrypeer

import (
	"reflect"

	"go.uber.org/yarpc/api/peer"
	"go.uber.org/yarpc/peer/pendingheap"
	"go.uber.org/yarpc/peer/randpeer"
	"go.uber.org/yarpc/peer/roundrobin"
	"go.uber.org/yarpc/peer/tworandomchoices"
	"go.uber.org/yarpc/yarpcconfig"
)

// Spec returns s with every peer list it builds wrapped in a Chooser, under
// s's name: registered on a yarpcconfig.Configurator in place of s, the
// same YAML builds outbounds whose errown retries go to another instance.
//
//	configurator.MustRegisterPeerList(retrypeer.Spec(roundrobin.Spec()))
//
// A spec whose BuildPeerList is not a function returning a
// peer.ChooserList and an error is returned as it is, for the
// Configurator to reject.
func Spec(s yarpcconfig.PeerListSpec) yarpcconfig.PeerListSpec {
	s.BuildPeerList = wrapBuild(s.BuildPeerList, reflect.TypeFor[peer.ChooserList]())
	return s
}

// RegisterPeerLists registers on c yarpc's own peer lists, round-robin,
// fewest-pending-requests, random and two-random-choices, each wrapped by
// Spec, in place of any list of those names registered before: the one
// line that gives outbounds declared in yarpc's YAML retries that go to
// another instance. yarpc's hashring32 routes by shard key, and is left
// to the application (Spec wraps it too, where a retry may go to another
// shard owner).
func RegisterPeerLists(c *yarpcconfig.Configurator) {
	for _, s := range []yarpcconfig.PeerListSpec{
		roundrobin.Spec(),
		pendingheap.Spec(),
		randpeer.Spec(),
		tworandomchoices.Spec(),
	} {
		c.MustRegisterPeerList(Spec(s))
	}
}

// wrapBuild returns build, a func(C, peer.Transport, *yarpcconfig.Kit)
// (T, error) with T the type out, as a function of the same type whose
// result, when it has no error, is wrapped in a Chooser (unless it is
// one); build itself when it has another shape.
func wrapBuild(build any, out reflect.Type) any {
	fn := reflect.ValueOf(build)
	if fn.Kind() != reflect.Func {
		return build
	}
	t := fn.Type()
	if t.NumOut() != 2 || t.Out(0) != out || t.Out(1) != reflect.TypeFor[error]() {
		return build
	}
	return reflect.MakeFunc(t, func(args []reflect.Value) []reflect.Value {
		res := fn.Call(args)
		if !res[1].IsNil() || res[0].IsNil() {
			return res
		}
		if _, ok := res[0].Interface().(*Chooser); ok {
			return res
		}
		wrapped := reflect.ValueOf(New(res[0].Interface().(peer.Chooser)))
		return []reflect.Value{wrapped.Convert(out), res[1]}
	}).Interface()
}
