package retry

// Modes says whether errown acts on its decisions: the mode of every call
// whose policy sets none, and the policies whose own mode differs.
type Modes struct {
	// Mode is the top-level mode, ModeEnforce when unset.
	Mode Mode `json:"mode"`
	// Overrides are the policies whose mode differs from Mode, in the
	// order of the configuration.
	Overrides []ModeOverride `json:"overrides"`
}

// ModeOverride is a policy whose own mode differs from the top-level one.
type ModeOverride struct {
	Service   string `json:"service"`
	Procedure string `json:"procedure,omitempty"`
	Mode      Mode   `json:"mode"`
}

// String writes o as service::procedure=mode, or service=mode for a
// policy of every procedure.
func (o ModeOverride) String() string {
	name := o.Service
	if o.Procedure != "" {
		name += "::" + o.Procedure
	}
	return name + "=" + string(o.Mode)
}
