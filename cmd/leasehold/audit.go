package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold/internal/audit/timeline"
)

// auditFlags are `leasehold audit`'s flags.
type auditFlags struct {
	logPath      string
	user, verb   string
	since, until string
	code         int
	output       string
}

func newAuditCmd() *cobra.Command {
	var f auditFlags
	cmd := &cobra.Command{
		Use:   "audit RESOURCE/[NAMESPACE/]NAME",
		Short: "Show who did what to an object, with the answer and why it was allowed, from the audit log",
		Long: `Read the audit log written by 'leasehold serve --audit-log-path' (or by
kube-apiserver: the format is the same), with its rotated and gzipped files,
and print a timeline of the requests about one object: when, who, which verb,
the response code and the reason the authorizer gave for allowing it.

A Node and its heartbeat Lease (kube-node-lease/NAME) are shown together, so
"who deleted my node's lease?" reads as one story. Repeats of the same
request in a row are folded into one line with a count; -o json prints every
request, unfolded, for tools.`,
		Example: `  leasehold audit nodes/worker-1 --audit-log-path /var/log/leasehold/audit.log
  leasehold audit leases/kube-node-lease/worker-1 --since 2h --code 404
  leasehold audit leases/default/my-controller --verb update -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAudit(cmd, &f, args[0], time.Now())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.logPath, "audit-log-path", "", "the audit log file (its rotated files are found next to it)")
	fl.StringVar(&f.user, "user", "", "only requests by this user name")
	fl.StringVar(&f.verb, "verb", "", "only requests with this verb (get, create, update, patch, delete, ...)")
	fl.StringVar(&f.since, "since", "", "only requests received at or after this time: RFC 3339, or a duration ago (2h)")
	fl.StringVar(&f.until, "until", "", "only requests received at or before this time: RFC 3339, or a duration ago")
	fl.IntVar(&f.code, "code", 0, "only requests answered with this HTTP status code")
	fl.StringVarP(&f.output, "output", "o", "text", "text or json")
	return cmd
}

func runAudit(cmd *cobra.Command, f *auditFlags, arg string, now time.Time) error {
	usage := func(err error) error { return &exitError{code: 2, err: err} }
	obj, err := timeline.ParseObject(arg)
	if err != nil {
		return usage(err)
	}
	if f.logPath == "" {
		return usage(errors.New("--audit-log-path is required"))
	}
	if f.output != "text" && f.output != "json" {
		return usage(fmt.Errorf("-o %q: want text or json", f.output))
	}
	filter := timeline.Filter{User: f.user, Verb: f.verb, Code: f.code}
	for _, t := range []struct {
		flag, value string
		into        *time.Time
	}{{"--since", f.since, &filter.Since}, {"--until", f.until, &filter.Until}} {
		if t.value == "" {
			continue
		}
		if *t.into, err = timeline.ParseTime(t.value, now); err != nil {
			return usage(fmt.Errorf("%s: %w", t.flag, err))
		}
	}
	res, err := timeline.Read(f.logPath, obj, filter)
	if err != nil {
		return err
	}
	if res.Skipped > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "leasehold audit: skipped %d lines that were not audit events\n", res.Skipped)
	}
	if f.output == "json" {
		return timeline.WriteJSON(cmd.OutOrStdout(), res.Entries)
	}
	return timeline.WriteText(cmd.OutOrStdout(), obj, res.Entries)
}
