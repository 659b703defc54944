package main

import (
	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold/internal/audit/logbackend"
	"github.com/leasehold/leasehold/internal/server"
)

// addAuditFlags binds serve's kube-apiserver audit flags (see package
// audit and docs/audit-policy.yaml).
func addAuditFlags(cmd *cobra.Command, c *server.AuditConfig) {
	f := cmd.Flags()
	f.StringVar(&c.PolicyFile, "audit-policy-file", "", "audit.k8s.io/v1 Policy deciding what is logged at which level (default, once --audit-log-path is set: the shipped policy, docs/audit-policy.yaml)")
	f.StringVar(&c.Log.Path, "audit-log-path", "", "write audit events to this file as JSON lines ('-' for standard output); unset, nothing is audited")
	f.IntVar(&c.Log.MaxSizeMB, "audit-log-maxsize", 0, "rotate the audit log before it grows past this many megabytes (0: 100)")
	f.IntVar(&c.Log.MaxBackups, "audit-log-maxbackup", 0, "rotated audit log files to keep (0: all)")
	f.IntVar(&c.Log.MaxAgeDays, "audit-log-maxage", 0, "remove rotated audit log files older than this many days, by the time in their names (0: never)")
	f.BoolVar(&c.Log.Compress, "audit-log-compress", false, "gzip rotated audit log files")
	f.StringVar(&c.Log.Mode, "audit-log-mode", logbackend.ModeBlocking, "blocking: each request waits for its events to be written; batch: events are buffered and written in the background, never delaying a request (a full buffer drops events, counted in apiserver_audit_error_total)")
	f.IntVar(&c.Log.BufferSize, "audit-log-batch-buffer-size", logbackend.DefaultBufferSize, "events the batch mode buffers before it drops them")
}
