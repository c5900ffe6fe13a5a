package acpclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// maxSignInRedirects bounds the redirects FollowSignIn follows.
const maxSignInRedirects = 10

// FollowSignIn does what a test "user" does with a sign-in link (an OAuth
// authorization URL the agent showed, such as one from
// internal/oauthtest): it GETs rawURL, follows up to 10 redirects (the
// authorization server's redirect to the agent's loopback callback) and
// returns nil only if the final response is 2xx. Only http and https URLs on
// loopback hosts (127.0.0.0/8, ::1, localhost) are fetched, the first and
// every redirect, so a test never reaches the network. Errors name the URL
// without its query (which carries the code and state). ctx bounds the whole
// exchange. Safe for concurrent use.
func FollowSignIn(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("sign-in link: not a URL: %w", err)
	}
	if err := checkLoopbackURL(u); err != nil {
		return fmt.Errorf("sign-in link: %w", err)
	}
	client := &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxSignInRedirects {
			return fmt.Errorf("stopped after %d redirects", maxSignInRedirects)
		}
		return checkLoopbackURL(req.URL)
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return fmt.Errorf("sign-in link %s: %w", redactURL(u), err)
	}
	resp, err := client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // its URL would show the query
		}
		return fmt.Errorf("sign-in link %s: %w", redactURL(u), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("sign-in link %s: %s answered %s, want 2xx: %s",
			redactURL(u), redactURL(resp.Request.URL), resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// checkLoopbackURL refuses a URL that is not http(s) on a loopback host.
func checkLoopbackURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%s: scheme must be http or https", redactURL(u))
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s: host %q is not loopback; tests only follow loopback sign-in links", redactURL(u), host)
}

// redactURL is u without its query and fragment.
func redactURL(u *url.URL) string {
	r := *u
	r.RawQuery, r.Fragment, r.User = "", "", nil
	return r.String()
}
