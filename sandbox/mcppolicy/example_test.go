package mcppolicy_test

import (
	"errors"
	"fmt"

	"github.com/seed02d3eb6b/acp-agent/sandbox/mcppolicy"
)

// Deny wins; a defined allowlist allows only what it lists; refusals name
// the server, the file and the entry or list that refused it.
func ExamplePolicy_Check() {
	policy, err := mcppolicy.Parse("/etc/acp-agent/managed.json", []byte(`{
	  "allowedMcpServers": [{"serverName": "github"}, {"serverName": "fs"}, {"serverUrl": "https://*.corp.example/*"}],
	  "deniedMcpServers": [{"serverName": "pastebin"}, {"serverCommand": ["npx", "*"]}]
	}`))
	if err != nil {
		panic(err)
	}
	for _, s := range []mcppolicy.Server{
		{Name: "fs", Transport: mcppolicy.TransportStdio, Command: []string{"mcp-fs", "/src"}},
		{Name: "github", Transport: mcppolicy.TransportStdio, Command: []string{"npx", "@acme/github-mcp"}},
		{Name: "wiki", Transport: mcppolicy.TransportHTTP, URL: "https://wiki.corp.example/mcp"},
		{Name: "github", Transport: mcppolicy.TransportHTTP, URL: "https://api.github.example/mcp"},
		{Name: "notes", Transport: mcppolicy.TransportACP},
	} {
		err := policy.Check(s)
		if err == nil {
			fmt.Println("allowed:", s.Name, s.Transport)
			continue
		}
		fmt.Println(errors.Is(err, mcppolicy.ErrRefused), err)
	}
	// Output:
	// allowed: fs stdio
	// true server "github" is refused by the managed policy /etc/acp-agent/managed.json: deniedMcpServers[1] {serverCommand: ["npx", "*"]}
	// allowed: wiki http
	// true server "github" is not in allowedMcpServers of the managed policy /etc/acp-agent/managed.json: its URL matches no serverUrl entry, and an http or sse server must match one when the list has any
	// true server "notes" is not in allowedMcpServers of the managed policy /etc/acp-agent/managed.json: no serverName entry names it
}
