// Package orders holds a domain type for tests of lock names.
package orders

// Order is an order, locked by its number.
type Order struct{ N int64 }

// ID returns the order number.
func (o Order) ID() int64 { return o.N }
