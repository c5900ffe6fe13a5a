package oauthtest_test

import (
	"fmt"
	"net/http"

	"github.com/seed02d3eb6b/acp-agent/internal/oauthtest"
)

// A request without a token is refused with a challenge that points the
// client at the protected resource metadata, and counted.
func ExampleStart() {
	s, err := oauthtest.Start(oauthtest.Options{})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	resp, err := http.Get(s.URL())
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("WWW-Authenticate") != "", s.Counts().Unauthorized)
	// Output: 401 true 1
}
