package debugpage_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strings"

	"github.com/errown/errown"
	"github.com/errown/errown/debugpage"
)

// Mount the page beside the service's other debug pages.
func ExampleHandler() {
	mw, err := errown.New(errown.Config{})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(debugpage.Handler(mw, "checkout"))
	defer srv.Close()

	res, err := srv.Client().Get(srv.URL + "/debug/errown?format=json")
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Println(res.Header.Get("Content-Type"))
	fmt.Println(strings.Contains(string(body), `"service": "checkout"`))
	fmt.Println(strings.Contains(string(body), `"storms": []`)) // no root request has met a storm yet
	// Output:
	// application/json
	// true
	// true
}
