//go:build !unix

package signin

import "context"

// lockFile has no cross-process lock on this system: a FileStore serializes
// only the writers of one process.
func lockFile(context.Context, string) (func(), error) { return func() {}, nil }
