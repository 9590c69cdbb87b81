package wire

import (
	"encoding/base64"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"
)

// Handles. A handle names one hold, so that another process, or this one
// later, can resume it: "uh1." and, base64url without padding, the
// hold's fields, each ending in a newline: the kind of lock (as package
// inspection names it), the prefix, the lock's name, the hold's token
// (its secret), its fence, its lease in milliseconds and, of a permit,
// the Semaphore's permits; then the CRC-32 (IEEE) of those lines, in hex.
// It is safe in a URL, an environment variable and a shell argument, and
// whoever has it can release the hold: it is a capability.
const handlePrefix = "uh1."

// A Handle is what a handle carries.
type Handle struct {
	Kind    string // inspection.KindMutex, KindRWMutex (its writer) or KindSemaphore
	Prefix  string
	Name    string // the lock's name, as its keys have it
	Token   string
	Fence   uint64
	Lease   time.Duration // the hold's lease, 0 for none
	Permits int           // a permit's Semaphore's; 0 for the others
}

// String returns h as a handle.
func (h Handle) String() string {
	body := strings.Join([]string{h.Kind, h.Prefix, h.Name, h.Token,
		strconv.FormatUint(h.Fence, 10), strconv.FormatInt(h.Lease.Milliseconds(), 10),
		strconv.Itoa(h.Permits)}, "\n") + "\n"
	body += strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 16)
	return handlePrefix + base64.RawURLEncoding.EncodeToString([]byte(body))
}

// ParseHandle reads a handle. Anything else (garbled, truncated, another
// library's) is an error wrapping ErrInvalidArgument that shows none of it.
func ParseHandle(s string) (Handle, error) {
	bad := func(why string) (Handle, error) {
		return Handle{}, fmt.Errorf("%w: not a handle of a hold (%s)", sentinel.ErrInvalidArgument, why)
	}
	enc, ok := strings.CutPrefix(s, handlePrefix)
	if !ok {
		return bad("it does not begin with " + handlePrefix)
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return bad("not base64url")
	}
	i := strings.LastIndexByte(string(raw), '\n')
	if i < 0 {
		return bad("truncated")
	}
	body, sum := string(raw[:i+1]), string(raw[i+1:])
	if strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 16) != sum {
		return bad("its checksum does not match: garbled or truncated")
	}
	f := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	if len(f) != 7 {
		return bad("wrong number of fields")
	}
	fence, err1 := strconv.ParseUint(f[4], 10, 64)
	lease, err2 := strconv.ParseInt(f[5], 10, 64)
	permits, err3 := strconv.Atoi(f[6])
	if err1 != nil || err2 != nil || err3 != nil || lease < 0 || permits < 0 || f[0] == "" || f[1] == "" || f[3] == "" ||
		!strings.HasPrefix(f[2], f[1]+":") || !FromClock(fence) && fence != 0 {
		return bad("a field out of range")
	}
	return Handle{Kind: f[0], Prefix: f[1], Name: f[2], Token: f[3], Fence: fence,
		Lease: time.Duration(lease) * time.Millisecond, Permits: permits}, nil
}
