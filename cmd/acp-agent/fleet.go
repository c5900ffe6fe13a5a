package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"regexp"
	"strings"

	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
	"github.com/seed02d3eb6b/acp-agent/session/store/postgres"
	"github.com/seed02d3eb6b/acp-agent/session/store/sqlite"
)

// tenantName is the rule for a name (a gateway's tenant, an mcp-server's
// client) in a --tokens-file.
var tenantName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// readTokensFile reads a --tokens-file: one "NAME TOKEN" pair a line ('#'
// starts a comment line; blank lines are skipped), mapping each token to
// the name of who holds it, a who ("tenant" for the gateway, "client" for
// mcp-server). A name may have several tokens (to rotate them); a token
// belongs to one name. Each token must be as strong as a listener's
// (checkTokenStrength), and the file must not be readable by group or
// others (chmod 600), since it holds secrets.
func readTokensFile(path, who string) (map[string]string, error) {
	upper := strings.ToUpper(who)
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("--tokens-file: %w", err)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("--tokens-file %s is readable or writable by group or others (mode %04o): it holds secrets; chmod 600 it", path, perm)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--tokens-file: %w", err)
	}
	tokens := make(map[string]string)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("--tokens-file %s line %d: want \"%s TOKEN\" (two fields), got %d fields", path, n, upper, len(f))
		}
		tenant, token := f[0], f[1]
		if !tenantName.MatchString(tenant) {
			return nil, fmt.Errorf("--tokens-file %s line %d: %s %q: a name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", path, n, who, tenant)
		}
		if err := checkTokenStrength(token); err != nil {
			return nil, fmt.Errorf("--tokens-file %s line %d: %s %s: %w", path, n, who, tenant, err)
		}
		if _, dup := tokens[token]; dup {
			return nil, fmt.Errorf("--tokens-file %s line %d: this token is already given to %s %s: each token names one %s", path, n, who, tokens[token], who)
		}
		tokens[token] = tenant
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--tokens-file %s: %w", path, err)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("--tokens-file %s names no %s", path, who)
	}
	return tokens, nil
}

// openGatewayStore opens the store a gateway keeps its sessions in:
// --store (flag), else config store.url or store.path, else the default
// SQLite file; "memory" is one in memory, a postgres:// URL the fleet's
// database (its leases are fleet-wide), anything else a SQLite file
// (several gateway processes may share one, each with its own leases).
func openGatewayStore(flag string, cfg StoreConfig, log *slog.Logger) (store.Store, error) {
	path := storeSetting(flag, cfg)
	switch {
	case path == "memory":
		return memory.New(), nil
	case postgres.IsURL(path):
		return openStoreURL(context.Background(), path, log)
	case path == "":
		var err error
		if path, err = sqlite.DefaultPath(); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeOpenTimeout)
	defer cancel()
	st, err := sqlite.Open(ctx, path)
	switch {
	case errors.Is(err, store.ErrDamaged):
		return nil, storeErr(openFailure(err, false))
	case err != nil:
		return nil, fmt.Errorf("--store: %w", openFailure(err, false))
	}
	log.Info("session store: SQLite", "path", path)
	return st, nil
}

// replicaName is a gateway's default --replica-name: host name and listen
// port: its affinity cookie's value, and how busy errors name it on other
// replicas.
func replicaName(listen string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "gateway"
	}
	if _, port, err := net.SplitHostPort(listen); err == nil {
		return host + ":" + port
	}
	return host
}
