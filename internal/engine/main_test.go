package engine

import (
	"testing"

	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }
