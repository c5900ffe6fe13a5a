package signin_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"golang.org/x/oauth2"

	"github.com/seed02d3eb6b/acp-agent/signin"
)

// The token source of a stored grant, as signin.Handler gives it to the
// MCP transport for a server signed in before.
func ExampleNewTokenSource() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "signin-example")
	defer os.RemoveAll(dir)
	st, err := signin.OpenFile(filepath.Join(dir, "acp-agent", "oauth-tokens.json"))
	if err != nil {
		log.Fatal(err)
	}
	err = st.Save(ctx, &signin.Record{
		ServerURL: "https://mcp.example.com/mcp",
		TokenURL:  "https://auth.example.com/token",
		ClientID:  "acp-agent",
		Token:     &oauth2.Token{AccessToken: "at-1", TokenType: "Bearer"}, // no expiry: never refreshed
	})
	if err != nil {
		log.Fatal(err)
	}

	rec, _ := st.Latest(ctx, "https://mcp.example.com/mcp")
	ts := signin.NewTokenSource(st, nil, rec) // nil: http.DefaultClient does the refreshes
	tok, err := ts.Token()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tok.Type(), tok.AccessToken)
	fmt.Println(rec) // records print without secrets
	// Output:
	// Bearer at-1
	// signin.Record{server=https://mcp.example.com/mcp tokenURL=https://auth.example.com/token expiry=none refresh=false}
}
