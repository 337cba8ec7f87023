package wire

// Storm is what one call cost in the subtree below a caller, for one
// request, in errown's two worlds: with errown's decisions (Served,
// Radius) and blind to claims, every hop retrying per its policy (Blind,
// BlindRadius). Enforce mode makes the first real, observe mode the
// second; Blind - Served is what errown prevents or would prevent.
// Counts include the callee's request and every retry below; a radius is
// the most hops on one call path that spent a retry.
type Storm struct {
	Served  uint64
	Blind   uint64
	Retries uint64 // the retries among Served
	Radius  uint8
	// BlindRadius is the radius in the blind world.
	BlindRadius uint8
}

// Prevented returns the requests errown's decisions prevented (or would
// prevent, in observe mode).
func (s Storm) Prevented() uint64 { return s.Blind - s.Served }

// Trivial reports whether s says nothing a caller could not assume: one
// request, no retry, nothing prevented.
func (s Storm) Trivial() bool { return s == Storm{Served: 1, Blind: 1} }
