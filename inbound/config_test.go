package inbound

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAdmissionModeValidate(t *testing.T) {
	tests := []struct {
		give    AdmissionMode
		wantErr string
	}{
		{give: ""},
		{give: AdmissionDisabled},
		{give: AdmissionObserve},
		{give: AdmissionEnforce},
		{give: "strict", wantErr: `mode: must be "disabled", "observe" or "enforce", got "strict"`},
		{give: "off", wantErr: `mode: must be "disabled", "observe" or "enforce", got "off"`},
	}
	for _, tt := range tests {
		t.Run(string(tt.give), func(t *testing.T) {
			err := tt.give.Validate()
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tt.wantErr)
		})
	}
}

// TestConfigValidateAdmissionMode: the mode's error names its key under
// admission, once.
func TestConfigValidateAdmissionMode(t *testing.T) {
	err := Config{Admission: AdmissionConfig{Mode: "strict"}}.Validate()
	assert.EqualError(t, err, `admission.mode: must be "disabled", "observe" or "enforce", got "strict"`)
	assert.Equal(t, AdmissionEnforce, DefaultConfig().Admission.Mode)
}
