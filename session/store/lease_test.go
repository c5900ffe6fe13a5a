package store

import (
	"errors"
	"testing"
)

func TestLocalLeases_OneHolderAndGrowingTokens(t *testing.T) {
	var ll LocalLeases
	ctx := t.Context()
	a, err := ll.Acquire(ctx, "s", "replica-1")
	if err != nil {
		t.Fatal(err)
	}
	var le *LeasedError
	if _, err := ll.Acquire(ctx, "s", "replica-2"); !errors.As(err, &le) || le.Owner != "replica-1" || le.ID != "s" {
		t.Fatalf("second Acquire = %v, want LeasedError naming replica-1", err)
	}
	if _, err := ll.Acquire(ctx, "other", "replica-2"); err != nil {
		t.Fatalf("another session: %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	_ = a.Release(ctx) // twice: nothing
	b, err := ll.Acquire(ctx, "s", "replica-2")
	if err != nil || b.Token <= a.Token || ll.Latest("s") != b.Token {
		t.Fatalf("after Release: %+v, %v; want a greater token", b, err)
	}
	if err := a.Release(ctx); err != nil { // the old hold cannot free the new one
		t.Fatal(err)
	}
	if _, err := ll.Acquire(ctx, "s", "replica-3"); !errors.As(err, &le) {
		t.Fatalf("the old lease's Release freed the new hold: %v", err)
	}
}
