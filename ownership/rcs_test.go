package ownership

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/yarpc/yarpcerrors"
)

func TestRetryableByNature(t *testing.T) {
	retryable := map[yarpcerrors.Code]bool{
		yarpcerrors.CodeUnknown:           true,
		yarpcerrors.CodeDeadlineExceeded:  true,
		yarpcerrors.CodeResourceExhausted: true,
		yarpcerrors.CodeAborted:           true,
		yarpcerrors.CodeInternal:          true,
		yarpcerrors.CodeUnavailable:       true,
	}
	for c := yarpcerrors.CodeOK; c <= yarpcerrors.CodeUnauthenticated; c++ {
		assert.Equal(t, retryable[c], RetryableByNature(c), "%v", c)
	}
}

func TestRetryCriteriaSatisfied(t *testing.T) {
	unavailable := yarpcerrors.CodeUnavailable
	tests := []struct {
		name string
		give CallOutcome
		want bool
	}{
		{"retryable, one attempt, nothing refused", CallOutcome{Attempts: 1, Code: unavailable}, false},
		{"retryable, callee claimed, one attempt", CallOutcome{Attempts: 1, Callee: ClaimClaimed, Code: unavailable}, false},
		{"retry attempted", CallOutcome{Attempts: 2, Code: unavailable}, true},
		{"callee unclaimed", CallOutcome{Attempts: 1, Callee: ClaimUnclaimed, Code: unavailable}, true},
		{"refused by budget", CallOutcome{Attempts: 1, Refused: RefusedBudget, Code: unavailable}, true},
		{"refused by deadline", CallOutcome{Attempts: 1, Refused: RefusedDeadline, Code: unavailable}, true},
		{"refused by pushback", CallOutcome{Attempts: 1, Refused: RefusedPushback, Code: unavailable}, true},
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

func TestRefusalString(t *testing.T) {
	tests := []struct {
		give Refusal
		want string
	}{
		{RefusedNone, "none"},
		{RefusedBudget, "budget"},
		{RefusedDeadline, "deadline"},
		{RefusedPushback, "pushback"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.give.String())
	}
}
