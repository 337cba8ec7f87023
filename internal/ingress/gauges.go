package ingress

// UpdateGauges sets the inbound side's gauge, ingress.in_flight (the
// requests tracked in flight), registered on the scope m was made with. It
// is called off the request path, by errown's one gauge ticker.
func (m *Middleware) UpdateGauges() {
	m.inFlightGauge.Update(float64(m.InFlight()))
}
