package connguard

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Closing reasons of leasehold_http2_connections_closed_total.
const (
	reasonRapidReset    = "rapid_reset"
	reasonHeaderTimeout = "header_timeout"
)

type metrics struct {
	refused prometheus.Counter
	closed  *prometheus.CounterVec
	h2Error *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, open func() float64, limit int) *metrics {
	m := &metrics{
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "leasehold_connections_refused_total",
			Help: "Connections closed as soon as accepted because --max-connections were open.",
		}),
		closed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "leasehold_http2_connections_closed_total",
			Help: "HTTP/2 connections answered with GOAWAY and closed by the server's guard, by reason (rapid_reset, header_timeout).",
		}, []string{"reason"}),
		h2Error: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "leasehold_http2_server_errors_total",
			Help: "Protocol errors Go's HTTP/2 server counted on client connections, by type.",
		}, []string{"type"}),
	}
	reg.MustRegister(m.refused, m.closed, m.h2Error,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "leasehold_connections_open",
			Help: "Client connections open, counted from accept to close.",
		}, open),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "leasehold_connections_limit",
			Help: "Client connections allowed open at once (--max-connections, bounded by RLIMIT_NOFILE minus the reserved descriptors).",
		}, func() float64 { return float64(limit) }),
	)
	for _, r := range []string{reasonRapidReset, reasonHeaderTimeout} {
		m.closed.WithLabelValues(r)
	}
	return m
}
