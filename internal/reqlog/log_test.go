package reqlog

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestContext(t *testing.T) {
	assert.Nil(t, FromContext(context.Background()))
	l := &Log{Procedure: "p"}
	assert.Same(t, l, FromContext(NewContext(context.Background(), l)))

	n := &Node{Context: context.WithValue(context.Background(), otherKey{}, "v")}
	assert.Same(t, &n.Log, FromContext(n))
	assert.Equal(t, "v", n.Value(otherKey{}), "the parent's values")
}

func TestFlags(t *testing.T) {
	var l Log
	assert.False(t, l.NoRetry())
	assert.False(t, l.CallerFault())
	l.SetNoRetry()
	l.SetCallerFault()
	assert.True(t, l.NoRetry())
	assert.True(t, l.CallerFault())
}
