package wire

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseToken(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123)
	since := strconv.FormatInt(at.UnixMilli(), 36)
	secret, id := strings.Repeat("s", SecretLen), strings.Repeat("c", ClientIDLen)
	cases := []struct {
		token string
		want  TokenInfo
	}{
		{secret + id + "." + since + ".1jk.web-1.example%3A42", TokenInfo{Client: id, Label: "web-1.example:42", Since: at, Timeout: 2 * time.Second}},
		{secret + id + "." + since + ".1jk.", TokenInfo{Client: id, Since: at, Timeout: 2 * time.Second}},
		{secret + "." + since + ".web%3A1", TokenInfo{Label: "web:1", Since: at}}, // the version before
		{secret, TokenInfo{}}, // the one before that
		{secret + id + "." + since + ".zzzzzzzzzzzzzz.x", TokenInfo{Client: id, Label: "x", Since: at}},
		{secret + id + "." + since, TokenInfo{}},
		{"short." + since + ".x", TokenInfo{}},
		{"", TokenInfo{}},
	}
	for _, tc := range cases {
		if got := ParseToken(tc.token); got != tc.want {
			t.Errorf("parseToken(%q) = %+v; want %+v", tc.token, got, tc.want)
		}
	}
}
