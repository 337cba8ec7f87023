package chaos

import (
	"encoding/binary"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
)

// EchoHeader is the response header in which a Leaf echoes the request it
// answered.
const EchoHeader = "chaos-echo"

// AltSuffix names the procedure a Fallback falls back to: the
// procedure's name with AltSuffix.
const AltSuffix = "-alt"

// Alt returns the procedure a Fallback of procedure falls back to.
func Alt(procedure string) string { return procedure + AltSuffix }

// Body returns the request body of request id: 8 bytes, little-endian,
// the fault mesh's convention.
func Body(id uint64) []byte {
	return binary.LittleEndian.AppendUint64(make([]byte, 0, 8), id)
}

// ID returns the ID a request body carries, false when it carries none.
func ID(body []byte) (uint64, bool) {
	if len(body) != 8 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(body), true
}

// Echo returns the echo of request id to procedure, as a Leaf puts it in
// its answer's body, EchoHeader and error message.
func Echo(id uint64, procedure string) string {
	return "chaos-id=" + strconv.FormatUint(id, 10) + " proc=" + procedure + ";"
}

var _echoRE = regexp.MustCompile(`chaos-id=(\d+) proc=([^;]*);`)

// echoes returns every echo s holds.
func echoes(s string) []echoed {
	var out []echoed
	for _, m := range _echoRE.FindAllStringSubmatch(s, -1) {
		id, _ := strconv.ParseUint(m[1], 10, 64)
		out = append(out, echoed{id, m[2]})
	}
	return out
}

type echoed struct {
	id        uint64
	procedure string
}

// _samples bounds the cross deliveries a Ledger describes.
const _samples = 10

// Ledger checks answers against the requests they are handed to. It is
// safe for concurrent use.
type Ledger struct {
	checked atomic.Int64
	cross   atomic.Int64

	mu      sync.Mutex
	samples []string
}

// Answer is what a caller got: a body (nil if none), a header's echo ("" if
// none), and an error (nil if none).
type Answer struct {
	Body  []byte
	Echo  string
	Err   error
	Empty bool // a success may carry no body: a gRPC reply left unset
}

// Check checks that the answer a, handed on at where, is one for request
// id to one of procedures: every echo its body, EchoHeader and error
// message hold names them, and a success's body holds one. It counts
// and describes a cross delivery, and returns false, when not.
func (l *Ledger) Check(where string, id uint64, procedures []string, a Answer) bool {
	l.checked.Add(1)
	var found []echoed
	found = append(found, echoes(string(a.Body))...)
	found = append(found, echoes(a.Echo)...)
	if a.Err != nil {
		found = append(found, echoes(a.Err.Error())...)
	}
	bad := a.Err == nil && !a.Empty && len(echoes(string(a.Body))) == 0
	for _, e := range found {
		if e.id != id || !slices.Contains(procedures, e.procedure) {
			bad = true
		}
	}
	if !bad {
		return true
	}
	l.cross.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.samples) < _samples {
		l.samples = append(l.samples, fmt.Sprintf("%s: request %d to %q got body %q, echo header %q, error %v", where, id, procedures, a.Body, a.Echo, a.Err))
	}
	return false
}

// Checked returns how many answers l checked.
func (l *Ledger) Checked() int64 { return l.checked.Load() }

// Cross returns how many answers were delivered to a request (or a
// procedure) they were not for.
func (l *Ledger) Cross() int64 { return l.cross.Load() }

// Samples describes the first cross deliveries.
func (l *Ledger) Samples() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.samples)
}
