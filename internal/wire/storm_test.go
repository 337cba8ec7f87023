package wire

import (
	"strconv"
	"strings"
	"testing"

	"github.com/errown/errown/internal/defaults"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
)

func TestFigures(t *testing.T) {
	var zero Figures
	assert.False(t, zero.Known, "the zero value is unknown")
	assert.Equal(t, Figures{Storm: One, Known: true}, KnownFigures(One))
	tests := []struct {
		name string
		give Figures
		want bool
	}{
		{"unknown", Figures{}, false},
		{"one", KnownFigures(One), true},
		{"one, but unknown", Figures{Storm: One}, false},
		{"a retry below", KnownFigures(Storm{Served: 2, Blind: 2, Retries: 1, Radius: 1, BlindRadius: 1}), false},
		{"a suppressed retry", KnownFigures(Storm{Served: 1, Blind: 2, BlindRadius: 1}), false},
		{"two quiet requests", KnownFigures(Storm{Served: 2, Blind: 2}), false},
		{"nothing served", KnownFigures(Storm{}), false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.give.Trivial(), tt.name)
	}
}

func TestParseStormAccepts(t *testing.T) {
	tests := []struct {
		give string
		want Storm
	}{
		{"1,1,0,0,0", One},
		{"9,18,1,1,2", Storm{Served: 9, Blind: 18, Retries: 1, Radius: 1, BlindRadius: 2}},
		{"8,8,1,1,1", Storm{Served: 8, Blind: 8, Retries: 1, Radius: 1, BlindRadius: 1}},
		{"2,5,1,0,3", Storm{Served: 2, Blind: 5, Retries: 1, Radius: 0, BlindRadius: 3}},
		{"10,10,9,0,0", Storm{Served: 10, Blind: 10, Retries: 9}},                                 // retries = served-1
		{"1,1125899906842624,0,0,255", Storm{Served: 1, Blind: MaxStormServed, BlindRadius: 255}}, // blind at its bound
		{"1125899906842624,1125899906842624,1125899906842623,255,255", Storm{Served: MaxStormServed, Blind: MaxStormServed, Retries: MaxStormServed - 1, Radius: 255, BlindRadius: 255}},
		{"100,100,0,7,7", Storm{Served: 100, Blind: 100, Radius: 7, BlindRadius: 7}}, // a radius without retries is a figure, not a contradiction
	}
	for _, tt := range tests {
		got := ParseStorm(tt.give)
		require.True(t, got.Known, "%q", tt.give)
		assert.Equal(t, tt.want, got.Storm, "%q", tt.give)
		assert.Equal(t, tt.give, FormatStorm(got.Storm), "%q is canonical", tt.give)
	}
}

func TestParseStormRejects(t *testing.T) {
	tests := []struct {
		name string
		give string
	}{
		{"unknown", StormUnknownValue},
		{"Unknown", "Unknown"},
		{"empty", ""},
		{"four fields", "1,1,0,0"},
		{"six fields", "1,1,0,0,0,0"},
		{"trailing comma", "1,1,0,0,0,"},
		{"leading comma", ",1,1,0,0,0"},
		{"empty field", "1,,0,0,0"},
		{"double comma", "1,1,,0,0,0"},
		{"leading zero served", "01,1,0,0,0"},
		{"leading zero blind", "1,01,0,0,0"},
		{"leading zero retries", "2,2,01,1,1"},
		{"leading zero radius", "2,2,1,01,1"},
		{"leading zero blind radius", "2,2,1,1,01"},
		{"double zero", "1,1,00,0,0"},
		{"plus sign", "+1,1,0,0,0"},
		{"minus sign", "1,1,-0,0,0"},
		{"negative", "-1,1,0,0,0"},
		{"leading space", " 1,1,0,0,0"},
		{"trailing space", "1,1,0,0,0 "},
		{"space after comma", "1, 1,0,0,0"},
		{"space before comma", "1 ,1,0,0,0"},
		{"tab", "1,1,0,0,\t0"},
		{"newline", "1,1,0,0,0\n"},
		{"semicolons", "1;1;0;0;0"},
		{"hex", "0x1,1,0,0,0"},
		{"decimal point", "1.0,1,0,0,0"},
		{"exponent", "1e0,1,0,0,0"},
		{"underscore", "1_0,10,0,0,0"},
		{"fullwidth digit", "１,1,0,0,0"},
		{"arabic-indic digit", "١,1,0,0,0"},
		{"NUL", "1,1,0,0,0\x00"},
		{"invalid UTF-8", "1,1,0,0,\xff"},
		{"served zero", "0,0,0,0,0"},
		{"served zero, blind one", "0,1,0,0,0"},
		{"retries equal served", "1,1,1,0,0"},
		{"retries above served", "2,3,5,1,1"},
		{"blind below served", "2,1,0,0,0"},
		{"blind zero", "1,0,0,0,0"},
		{"blind radius below radius", "3,3,1,2,1"},
		{"served past its bound", "1125899906842625,1125899906842625,0,0,0"},
		{"blind past its bound", "1,1125899906842625,0,0,0"},
		{"retries past the bound", "1,1,1125899906842625,0,0"},
		{"radius past its bound", "2,2,1,256,256"},
		{"blind radius past its bound", "1,1,0,0,256"},
		{"radius far past its bound", "1,1,0,1125899906842624,1125899906842624"},
		{"uint64 overflow", "18446744073709551616,18446744073709551616,0,0,0"},
		{"uint64 max", "18446744073709551615,18446744073709551615,0,0,0"},
		{"huge", strings.Repeat("9", 100) + ",1,0,0,0"},
		{"repeated", strings.Repeat("1,1,0,0,0", 2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseStorm(tt.give)
			assert.False(t, got.Known, "%q parsed as %+v", tt.give, got)
			assert.Equal(t, Figures{}, got, "a rejected value reads as unknown, with the zero Storm")
		})
	}
}

// TestParseStormBounds walks each field across its bound.
func TestParseStormBounds(t *testing.T) {
	top := strconv.FormatUint(MaxStormServed, 10)
	past := strconv.FormatUint(MaxStormServed+1, 10)
	for _, tt := range []struct {
		give string
		ok   bool
	}{
		{top + "," + top + ",0,0,0", true},
		{past + "," + past + ",0,0,0", false},
		{"1," + top + ",0,0,0", true},
		{"1," + past + ",0,0,0", false},
		{top + "," + top + "," + strconv.FormatUint(MaxStormServed-1, 10) + ",0,0", true},
		{top + "," + top + "," + top + ",0,0", false}, // retries = served
		{"1,1,0,255,255", true},
		{"1,1,0,254,255", true},
		{"1,1,0,255,254", false},
		{"1,1,0,0,255", true},
		{"1,1,0,0,256", false},
		{"1,1,0,256,256", false},
		{"1,1,0,0,0", true},
		{"2,2,1,0,0", true},
		{"2,2,2,0,0", false},
		{"2,1,0,0,0", false},
		{"2,2,0,0,0", true},
	} {
		assert.Equal(t, tt.ok, ParseStorm(tt.give).Known, "%q", tt.give)
	}
}

func TestStormRoundTrip(t *testing.T) {
	for _, s := range []Storm{
		One,
		{Served: 4, Blind: 4},
		{Served: 8, Blind: 8, Retries: 1, Radius: 1, BlindRadius: 1},
		{Served: 9, Blind: 18, Retries: 1, Radius: 1, BlindRadius: 2},
		{Served: 11, Blind: 39, Retries: 1, Radius: 1, BlindRadius: 3},
		{Served: 1, Blind: MaxStormServed, BlindRadius: MaxStormRadius},
		{Served: MaxStormServed, Blind: MaxStormServed, Retries: MaxStormServed - 1, Radius: MaxStormRadius, BlindRadius: MaxStormRadius},
	} {
		assert.Equal(t, KnownFigures(s), ParseStorm(FormatStorm(s)), "%+v", s)
	}
}

func TestResponseStorm(t *testing.T) {
	with := func(k, v string) *transport.Response {
		return &transport.Response{Headers: transport.NewHeaders().With(k, v)}
	}
	tests := []struct {
		name   string
		res    *transport.Response
		class  Class
		header string
		want   Figures
	}{
		{"no response, success: one", nil, ClassOK, defaults.StormHeader, KnownFigures(One)},
		{"no response, answer: unknown (cut short before the callee answered)", nil, ClassAnswer, defaults.StormHeader, Figures{}},
		{"no response, failure: unknown", nil, ClassFailure, defaults.StormHeader, Figures{}},
		{"no header, success: one", &transport.Response{}, ClassOK, defaults.StormHeader, KnownFigures(One)},
		{"no header, answer: one", with("x-other", "9,9,0,0,0"), ClassAnswer, defaults.StormHeader, KnownFigures(One)},
		{"no header, failure: unknown", with("x-other", "9,9,0,0,0"), ClassFailure, defaults.StormHeader, Figures{}},
		{"header on a success", with(defaults.StormHeader, "3,3,0,0,0"), ClassOK, defaults.StormHeader, KnownFigures(Storm{Served: 3, Blind: 3})},
		{"header on an answer", with(defaults.StormHeader, "5,9,1,1,2"), ClassAnswer, defaults.StormHeader, KnownFigures(Storm{Served: 5, Blind: 9, Retries: 1, Radius: 1, BlindRadius: 2})},
		{"header on a failure", with(defaults.StormHeader, "9,18,1,1,2"), ClassFailure, defaults.StormHeader, KnownFigures(Storm{Served: 9, Blind: 18, Retries: 1, Radius: 1, BlindRadius: 2})},
		{"one on a failure", with(defaults.StormHeader, "1,1,0,0,0"), ClassFailure, defaults.StormHeader, KnownFigures(One)},
		{"unknown on a success", with(defaults.StormHeader, StormUnknownValue), ClassOK, defaults.StormHeader, Figures{}},
		{"unknown on a failure", with(defaults.StormHeader, StormUnknownValue), ClassFailure, defaults.StormHeader, Figures{}},
		{"garbage on a success is unknown, not one", with(defaults.StormHeader, "lots"), ClassOK, defaults.StormHeader, Figures{}},
		{"empty value on a success is unknown", with(defaults.StormHeader, ""), ClassOK, defaults.StormHeader, Figures{}},
		{"header sent in another case", with("Errown-Storm", "3,3,0,0,0"), ClassOK, defaults.StormHeader, KnownFigures(Storm{Served: 3, Blind: 3})},
		{"custom header", with("x-storm", "2,2,1,1,1"), ClassFailure, "x-storm", KnownFigures(Storm{Served: 2, Blind: 2, Retries: 1, Radius: 1, BlindRadius: 1})},
		{"custom header, default one ignored", with(defaults.StormHeader, "2,2,1,1,1"), ClassFailure, "x-storm", Figures{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ResponseStorm(tt.res, tt.class, tt.header))
		})
	}
}

// TestResponseStormClasses: with a response, only a failure without the
// header is unknown, whatever the code that made it a failure; without a
// response, every error is.
func TestResponseStormClasses(t *testing.T) {
	for _, row := range Codes() {
		known := ResponseStorm(&transport.Response{}, row.Class, defaults.StormHeader).Known
		assert.Equal(t, row.Class != ClassFailure, known, "%v (%v), with a response", row.Code, row.Class)
		known = ResponseStorm(nil, row.Class, defaults.StormHeader).Known
		assert.Equal(t, row.Class == ClassOK, known, "%v (%v), without a response", row.Code, row.Class)
	}
}

func FuzzParseStorm(f *testing.F) {
	for _, s := range []string{
		"1,1,0,0,0",
		"9,18,1,1,2",
		"11,39,1,1,3",
		"1125899906842624,1125899906842624,1125899906842623,255,255",
		"1125899906842625,1125899906842625,0,0,0",
		"1,1,0,0,256",
		"1,1,1,0,0",
		"2,1,0,0,0",
		"3,3,1,2,1",
		"01,1,0,0,0",
		"0,0,0,0,0",
		"+1,1,0,0,0",
		" 1,1,0,0,0",
		"1,1,0,0,0,",
		"1,1,0,0",
		"unknown",
		"",
		"18446744073709551616,1,0,0,0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got := ParseStorm(v)
		if !got.Known {
			require.Equal(t, Figures{}, got, "ParseStorm(%q), unknown; want the zero Storm", v)
			return
		}
		s := got.Storm
		require.Equal(t, v, FormatStorm(s), "ParseStorm(%q) = %+v, whose HeaderValue is not canonical", v, s)
		require.Equal(t, got, ParseStorm(FormatStorm(s)), "ParseStorm(%q) = %+v, which reparses", v, s)
		require.GreaterOrEqual(t, s.Served, uint64(1), "ParseStorm(%q) = %+v breaks an invariant", v, s)
		require.Less(t, s.Retries, s.Served, "ParseStorm(%q) = %+v breaks an invariant", v, s)
		require.GreaterOrEqual(t, s.Blind, s.Served, "ParseStorm(%q) = %+v breaks an invariant", v, s)
		require.LessOrEqual(t, s.Blind, uint64(MaxStormServed), "ParseStorm(%q) = %+v breaks an invariant", v, s)
		require.GreaterOrEqual(t, s.BlindRadius, s.Radius, "ParseStorm(%q) = %+v breaks an invariant", v, s)
		require.LessOrEqual(t, s.Prevented(), s.Blind, "ParseStorm(%q) = %+v prevents too many", v, s)
		// A plain reading agrees.
		fields := strings.Split(v, ",")
		require.Len(t, fields, 5, "ParseStorm(%q) accepted fields", v)
		want := []uint64{s.Served, s.Blind, s.Retries, uint64(s.Radius), uint64(s.BlindRadius)}
		for i, f := range fields {
			n, err := strconv.ParseUint(f, 10, 64)
			require.NoError(t, err, "ParseStorm(%q) field %d = %d, strconv fails", v, i, want[i])
			require.Equal(t, want[i], n, "ParseStorm(%q) field %d, strconv", v, i)
		}
	})
}

func TestStormHeaderValue(t *testing.T) {
	tests := []struct {
		give Storm
		want string
	}{
		{Storm{Served: 1, Blind: 1}, "1,1,0,0,0"},
		{Storm{Served: 9, Blind: 18, Retries: 1, Radius: 1, BlindRadius: 2}, "9,18,1,1,2"},
		{Storm{Served: 12, Blind: 340, Retries: 7, Radius: 3, BlindRadius: 10}, "12,340,7,3,10"},
		{Storm{Served: MaxStormServed, Blind: MaxStormServed, Retries: MaxStormServed - 1, Radius: MaxStormRadius, BlindRadius: MaxStormRadius}, "1125899906842624,1125899906842624,1125899906842623,255,255"},
		// HeaderValue writes what it is given, valid or not: the bounds
		// are ParseStorm's.
		{Storm{}, "0,0,0,0,0"},
		{Storm{Served: 1<<64 - 1, Blind: 1<<64 - 1, Retries: 1<<64 - 1, Radius: 255, BlindRadius: 255}, "18446744073709551615,18446744073709551615,18446744073709551615,255,255"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, FormatStorm(tt.give), "%+v", tt.give)
	}
}

func TestFiguresStormy(t *testing.T) {
	assert.True(t, Figures{}.Stormy(), "unknown")
	assert.True(t, KnownFigures(Storm{Served: 2, Blind: 2, Retries: 1}).Stormy(), "a retry below")
	assert.True(t, KnownFigures(Storm{Served: 1, Blind: 2, BlindRadius: 1}).Stormy(), "a retry suppressed below")
	assert.False(t, KnownFigures(One).Stormy())
	assert.False(t, KnownFigures(Storm{Served: 40, Blind: 40}).Stormy(), "a quiet subtree")
}
