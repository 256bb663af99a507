//go:build dsa_noptp

package dsa

import (
	"errors"
	"fmt"
)

// ptpCompiled is false: Conduit.Recv has no timestamping branch at all (build tag dsa_noptp).
const ptpCompiled = false

var errNoPTP = fmt.Errorf("dsa: PTP timestamping is compiled out (-tags dsa_noptp): %w", errors.ErrUnsupported)
