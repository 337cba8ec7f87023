package wire_test

import (
	"fmt"

	"github.com/errown/errown/internal/wire"
)

func ExampleParseClaim() {
	for _, v := range []string{"claimed", "unclaimed", "Unclaimed", ""} {
		fmt.Printf("%q -> %v\n", v, wire.ParseClaim(v))
	}
	// Output:
	// "claimed" -> claimed
	// "unclaimed" -> unclaimed
	// "Unclaimed" -> missing
	// "" -> missing
}
