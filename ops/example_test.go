package ops_test

import (
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/ops"
	"github.com/wirespeed/wirespeed/xmit"
)

// A port's counters as Prometheus scrapes them: register a Collector of the Source with a
// registry and serve it with promhttp.
func Example() {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 16})
	a, b := xmit.Pipe(pool, &xmit.PipeConfig{Names: [2]string{"eth0", "peer"}})
	defer a.Close()
	defer b.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(ops.NewCollector(&ops.Source{Ports: []ops.Port{ops.PortOf("eth0", a)}}))
	// A router serves this on its -metrics address: http.Handle("/metrics", h).
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})

	batch := frame.NewBatch(4)
	pool.Alloc(batch, 3)
	for i := range batch.Frames {
		batch.Frames[i].Resize(60)
	}
	b.Send(batch) // three frames to eth0
	a.Recv(batch)
	batch.Free()

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "wirespeed_port_receive_") || strings.HasPrefix(line, "wirespeed_port_up") {
			fmt.Println(line)
		}
	}
	// Output:
	// wirespeed_port_receive_bytes_total{port="eth0"} 180
	// wirespeed_port_receive_drops_total{port="eth0"} 0
	// wirespeed_port_receive_packets_total{port="eth0"} 3
	// wirespeed_port_up{port="eth0"} 1
}
