// Package startclock holds the earliest moment the fixture's Go code runs:
// its only variable is set when the package is initialised, before the
// fixture's heavier imports (go-sdk, net/http) are, since it imports
// nothing but time and Go initialises ready packages in import-path order.
// What it misses is the kernel's exec and the Go runtime's bootstrap (well
// under a millisecond for a static binary).
package startclock

import "time"

// Exec is the time the process's Go code started running, taken at package
// initialisation.
var Exec = time.Now()
