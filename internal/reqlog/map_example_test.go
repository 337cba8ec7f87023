package reqlog_test

import (
	"fmt"

	"github.com/errown/errown/internal/reqlog"
)

func ExampleMap() {
	logs, err := reqlog.NewMap(reqlog.Config{Shards: 16, MaxInFlight: 2})
	if err != nil {
		panic(err)
	}
	a := logs.Open("checkout")
	b := logs.Open("checkout")
	fmt.Println(a != b, logs.Len())
	fmt.Println("third request tracked:", logs.Open("checkout") != nil)
	logs.Remove(a)
	logs.Remove(b)
	fmt.Println(logs.Len())
	// Output:
	// true 2
	// third request tracked: false
	// 0
}
