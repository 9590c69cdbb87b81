//go:build !uncomplicated_checkkeys

package lua

// CheckingKeys is false: the scripts run as they are (see checkkeys_on.go).
const CheckingKeys = false
