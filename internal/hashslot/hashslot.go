// Package hashslot computes Redis Cluster's hash slot of a key.
package hashslot

import "strings"

// Count is how many slots a Redis Cluster has.
const Count = 16384

// Of returns key's slot: the CRC16 (XMODEM) of its hash tag, the part
// between the first '{' and the next '}' when that is not empty, or else
// of the whole key, modulo Count.
func Of(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % Count
}
