package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/yarpc/yarpcerrors"
)

func TestCodesFollowYARPCFaultTypes(t *testing.T) {
	// Every row's class is yarpc's fault type, except the rows that state
	// a deviation: the one table is anchored on yarpc's, and a departure
	// is deliberate and written down.
	rows := Codes()
	assert.Len(t, rows, int(yarpcerrors.CodeUnauthenticated)+1, "a row for every yarpc code")
	for i, row := range rows {
		assert.Equal(t, yarpcerrors.Code(i), row.Code, "rows in code order")
		var want Class
		switch yarpcerrors.GetFaultTypeFromCode(row.Code) {
		case yarpcerrors.ServerFault:
			want = ClassFailure
		case yarpcerrors.ClientFault:
			want = ClassAnswer
		default:
			want = ClassOK
		}
		if row.Deviation != "" {
			assert.NotEqual(t, want, row.Class, "%v states a deviation it does not make", row.Code)
			continue
		}
		assert.Equal(t, want, row.Class, "%v departs from yarpc without saying why", row.Code)
	}
}

func TestClassString(t *testing.T) {
	assert.Equal(t, "ok", ClassOK.String())
	assert.Equal(t, "failure", ClassFailure.String())
	assert.Equal(t, "answer", ClassAnswer.String())
}
