//go:build uncomplicated_checkkeys

package lua

// CheckingKeys: built with the tag uncomplicated_checkkeys, every script
// runs after check_keys.lua, which fails it on a key not among its KEYS and
// lists it at UndeclaredKeys. Tests only: the check costs every call.
const CheckingKeys = true
