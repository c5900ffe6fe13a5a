package urlpolicy_test

import (
	"errors"
	"fmt"

	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
)

// CheckURL applies the policy's static rules to an http or sse server's URL
// before any connection; the default policy (the zero value) allows https
// to public hosts and plain http only to loopback. Refusals wrap ErrRefused
// and name the rule; the URL in the message has its query redacted. A
// refusal that a setting of the configuration would lift names it in
// Error.Setting, for the front end to tell the user.
func ExamplePolicy_CheckURL() {
	var policy urlpolicy.Policy
	for _, raw := range []string{
		"https://mcp.example.com/mcp",
		"http://127.0.0.1:8080/mcp",
		"http://mcp.example.com/mcp",
		"https://10.0.0.7/mcp?token=secret",
		"http://169.254.169.254/latest/meta-data",
		"file:///etc/passwd",
	} {
		u, err := policy.CheckURL(raw)
		var pe *urlpolicy.Error
		if errors.As(err, &pe) {
			fmt.Printf("refused (%v): %v\n", errors.Is(err, urlpolicy.ErrRefused), err)
			if pe.Setting != "" {
				fmt.Println("  allowed by:", pe.Setting)
			}
			continue
		}
		fmt.Println("allowed:", u.Host)
	}

	private := urlpolicy.Policy{AllowHosts: []string{"10.0.0.7"}}
	if _, err := private.CheckURL("https://10.0.0.7/mcp"); err == nil {
		fmt.Println("allowed with AllowHosts: 10.0.0.7")
	}
	// Output:
	// allowed: mcp.example.com
	// allowed: 127.0.0.1:8080
	// refused (true): URL "http://mcp.example.com/mcp" refused: plain http only to loopback (localhost, 127.0.0.0/8, ::1)
	//   allowed by: sandbox.allowHosts
	// refused (true): URL "https://10.0.0.7/mcp?REDACTED" refused: private network address 10.0.0.7
	//   allowed by: sandbox.allowPrivateNetworks
	// refused (true): URL "http://169.254.169.254/latest/meta-data" refused: cloud metadata address 169.254.169.254
	// refused (true): URL "file:///etc/passwd" refused: scheme "file" not allowed (only http and https)
	// allowed with AllowHosts: 10.0.0.7
}
