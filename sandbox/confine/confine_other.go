//go:build !linux

package confine

const supported = false

// ABI returns 0 outside Linux: there is no Landlock.
func ABI() int { return 0 }

// Main returns at once outside Linux: [Wrap] makes no launcher there.
func Main() {}
