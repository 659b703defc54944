package main

import (
	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold/internal/connguard"
)

// addConnectionFlags binds serve's connection limits (see package connguard).
func addConnectionFlags(cmd *cobra.Command, c *connguard.Config) {
	f := cmd.Flags()
	f.IntVar(&c.MaxConnections, "max-connections", 0, "maximum open client connections; more are closed as soon as accepted (0: RLIMIT_NOFILE minus --reserved-file-descriptors, also the upper bound)")
	f.IntVar(&c.ReservedFiles, "reserved-file-descriptors", 0, "file descriptors kept from clients for the store and the server's own files (0: the larger of 1280 and a tenth of RLIMIT_NOFILE, at most half of it)")
	f.DurationVar(&c.IdleTimeout, "idle-connection-timeout", connguard.DefaultIdleTimeout, "close HTTP/1.1 and HTTP/2 connections that have had no request in flight for this long")
	f.DurationVar(&c.ReadHeaderTimeout, "read-header-timeout", connguard.DefaultReadHeaderTimeout, "deadline for the TLS handshake, HTTP/1.1 request headers, the HTTP/2 preface and each HTTP/2 header block")
	f.IntVar(&c.HTTP2MaxStreamsPerConnection, "http2-max-streams-per-connection", connguard.DefaultHTTP2MaxStreamsPerConnection, "the limit that the server gives to clients for the maximum number of streams in an HTTP/2 connection")
	f.IntVar(&c.HTTP2MaxResetsPerSecond, "http2-max-resets-per-second", connguard.DefaultHTTP2MaxResetsPerSecond, "RST_STREAM frames per second (bursts of two seconds' worth) an HTTP/2 connection may send before it gets GOAWAY and is closed")
	f.DurationVar(&c.HTTP2ReadIdleTimeout, "http2-read-idle-timeout", connguard.DefaultHTTP2ReadIdleTimeout, "ping an HTTP/2 connection that has sent no frame for this long")
	f.DurationVar(&c.HTTP2PingTimeout, "http2-ping-timeout", connguard.DefaultHTTP2PingTimeout, "close an HTTP/2 connection whose ping goes unanswered this long")
	addGoawayFlags(cmd, c)
}
