// Package orders is a second package named orders, for the test that shows
// two such packages share lock names unless WithPrefix separates them.
package orders

// Order is another package's order, with a string ID.
type Order struct{ Code string }

// ID returns the order code.
func (o Order) ID() string { return o.Code }
