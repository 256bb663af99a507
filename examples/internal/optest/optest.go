// Package optest holds what the examples' tests of the operator view share: fetching an endpoint
// and reading the Prometheus text exposition it serves.
package optest

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Get returns the body of url. A failed request or a status other than 200 is reported (t.Errorf,
// so it may be called from any goroutine) and gives nil.
func Get(t testing.TB, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %d %v\n%s", url, resp.StatusCode, err, b)
		return nil
	}
	return b
}

// Parse parses a text exposition; an error is reported (t.Errorf) and the result is then partial.
func Parse(t testing.TB, b []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Errorf("exposition: %v", err)
	}
	return mfs
}

// Sum adds the values (counter or gauge) of every series of family name whose labels include the
// name/value pairs given; found says whether any matched.
func Sum(mfs map[string]*dto.MetricFamily, name string, labels ...string) (sum float64, found bool) {
next:
	for _, m := range mfs[name].GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			if !hasLabel(m, labels[i], labels[i+1]) {
				continue next
			}
		}
		found = true
		sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return sum, found
}

func hasLabel(m *dto.Metric, k, v string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == k && l.GetValue() == v {
			return true
		}
	}
	return false
}

// Until scrapes url (a /metrics endpoint) until the exposition has series (a name with its labels,
// as exposed) with a value other than 0, at most 1000 times a millisecond apart, and returns the
// last body. A worker publishes its counters every so many busy rounds and whenever idle, so the
// first scrapes can show none or zero.
func Until(t testing.TB, url, series string) []byte {
	t.Helper()
	var b []byte
	present, zero := []byte(series+" "), []byte(series+" 0\n")
	for i := 0; i < 1000 && (!bytes.Contains(b, present) || bytes.Contains(b, zero)); i++ {
		if i > 0 {
			time.Sleep(time.Millisecond)
		}
		b = Get(t, url)
	}
	return b
}
