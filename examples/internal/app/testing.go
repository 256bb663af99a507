package app

import (
	"bufio"
	"encoding/json"
	"strings"
	"sync"
)

// LogBuffer collects an example's event log (JSON lines) for its tests; it is safe for the log's
// goroutines.
type LogBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write implements io.Writer.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// Events returns the events logged so far (the JSON lines decoded; other lines left out).
func (l *LogBuffer) Events() []map[string]any {
	l.mu.Lock()
	s := l.b.String()
	l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		var e map[string]any
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// MetricsURL returns the endpoint's base URL (http://ADDR) from the "serving metrics" event, or
// "" if none was logged.
func (l *LogBuffer) MetricsURL() string {
	for _, e := range l.Events() {
		if u, ok := e["url"].(string); ok && e["msg"] == "serving metrics" {
			return strings.TrimSuffix(u, "/metrics")
		}
	}
	return ""
}
