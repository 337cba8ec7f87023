package wire

import (
	"testing"

	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"go.uber.org/yarpc/yarpcerrors"
)

func TestRetryCriteriaSatisfied(t *testing.T) {
	unavailable := yarpcerrors.CodeUnavailable
	tests := []struct {
		name string
		give CallOutcome
		want bool
	}{
		{"retryable, one attempt, nothing refused", CallOutcome{Attempts: 1, Code: unavailable}, false},
		{"retryable, callee claimed, one attempt", CallOutcome{Attempts: 1, Callee: ownership.ClaimClaimed, Code: unavailable}, false},
		{"retry attempted", CallOutcome{Attempts: 2, Code: unavailable}, true},
		{"callee unclaimed", CallOutcome{Attempts: 1, Callee: ownership.ClaimUnclaimed, Code: unavailable}, true},
		{"refused by budget", CallOutcome{Attempts: 1, Refused: RefusedBudget, Code: unavailable}, true},
		{"refused by deadline", CallOutcome{Attempts: 1, Refused: RefusedDeadline, Code: unavailable}, true},
		{"refused by pushback", CallOutcome{Attempts: 1, Refused: RefusedPushback, Code: unavailable}, true},
		{"refused: not idempotent", CallOutcome{Attempts: 1, Refused: RefusedNotIdempotent, Code: unavailable}, true},
		{"refused: code not in the policy", CallOutcome{Attempts: 1, Refused: RefusedCode, Code: yarpcerrors.CodeResourceExhausted}, true},
		{"refused: body over the cap", CallOutcome{Attempts: 1, Refused: RefusedBodyTooLarge, Code: unavailable}, true},
		{"resource exhausted, nobody could retry", CallOutcome{Attempts: 1, Code: yarpcerrors.CodeResourceExhausted}, false},
		{"data loss is not retryable", CallOutcome{Attempts: 1, Code: yarpcerrors.CodeDataLoss}, true},
		{"invalid argument", CallOutcome{Attempts: 1, Code: yarpcerrors.CodeInvalidArgument}, true},
		{"not found", CallOutcome{Attempts: 1, Code: yarpcerrors.CodeNotFound}, true},
		{"permission denied", CallOutcome{Attempts: 1, Code: yarpcerrors.CodePermissionDenied}, true},
		{"unauthenticated", CallOutcome{Attempts: 1, Code: yarpcerrors.CodeUnauthenticated}, true},
		{"failed precondition", CallOutcome{Attempts: 1, Code: yarpcerrors.CodeFailedPrecondition}, true},
		{"unimplemented", CallOutcome{Attempts: 1, Code: yarpcerrors.CodeUnimplemented}, true},
		{"internal, one attempt", CallOutcome{Attempts: 1, Code: yarpcerrors.CodeInternal}, false},
		{"zero attempts counted as one", CallOutcome{Code: unavailable}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, RetryCriteriaSatisfied(tt.give))
		})
	}
}
